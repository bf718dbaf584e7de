/**
 * `hdcontext_retrieve`: a language model tool that gives back a tool call's output as it was
 * first returned, before hdcontext pruned it (`history/retrieve`), so pruning is never a dead end
 * for the model. The wrapping models offer it alongside the chat's own tools.
 *
 * The tool is not told which conversation calls it: it looks in the conversations this window
 * sent through hdcontext, the current one first.
 */

import * as vscode from 'vscode';

import { retrievedText } from './chatConversion';
import type { ChatSessions } from './chatSessions';
import type { Daemon } from './daemon';
import { ErrorCodes, RETRIEVE_TOOL_NAME } from './protocol';

export const RETRIEVE_TOOL = RETRIEVE_TOOL_NAME;

export interface RetrieveInput {
    callId: string;
}

export class RetrieveTool implements vscode.LanguageModelTool<RetrieveInput> {
    constructor(
        private readonly daemon: Daemon,
        private readonly chats: ChatSessions,
    ) {}

    prepareInvocation(options: vscode.LanguageModelToolInvocationPrepareOptions<RetrieveInput>): vscode.PreparedToolInvocation {
        return { invocationMessage: `Retrieving the pruned output of tool call ${String(options.input?.callId ?? '')}` };
    }

    async invoke(options: vscode.LanguageModelToolInvocationOptions<RetrieveInput>, token: vscode.CancellationToken): Promise<vscode.LanguageModelToolResult> {
        const callId = options.input?.callId;
        if (typeof callId !== 'string' || !callId.trim()) {
            throw new Error(`${RETRIEVE_TOOL} needs "callId": the id of an earlier tool call of this conversation`);
        }
        const client = await this.daemon.ready();
        for (const sessionId of this.chats.recent()) {
            if (token.isCancellationRequested) {
                throw new vscode.CancellationError();
            }
            try {
                const { call, response } = await client.retrieve(sessionId, callId);
                return new vscode.LanguageModelToolResult([new vscode.LanguageModelTextPart(retrievedText(callId, call, response))]);
            } catch (err) {
                // Not in this conversation: try the one before.
                const code = (err as { code?: unknown } | null)?.code;
                if (code === ErrorCodes.UnknownCall || code === ErrorCodes.UnknownSession) {
                    continue;
                }
                throw err;
            }
        }
        throw new Error(`no conversation sent through hdcontext in this window has a tool call with id "${callId}"`);
    }
}
