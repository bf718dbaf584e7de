/**
 * Answers the daemon's `history/summarize` with the editor's language model API (`vscode.lm`):
 * the model named in `hdcontext.summarizer.vscodeModel`, else the first available one. It
 * honours cancellation (the daemon cancels on its timeout). When there is no model, or the model
 * fails, it answers with an error, which the daemon turns into -32002 for the compaction, and
 * tells the user why.
 */

import * as vscode from 'vscode';
import { ResponseError } from 'vscode-jsonrpc';

import { ErrorCodes, type SummarizeParams, type SummarizeResult } from './protocol';
import { modelSelectors, summaryMessages } from './summaryPrompt';

export const MODEL_SETTING = 'summarizer.vscodeModel';

const JUSTIFICATION =
    'hdcontext summarizes the older part of a chat history when it nears the context limit (strategies middle-out and one-shot).';

export interface SummarizerHost {
    /** The `hdcontext.summarizer.vscodeModel` setting. */
    modelSetting(): string;
    log(line: string): void;
    /** Tells the user (once while the same message is on screen). */
    showError(message: string): void;
}

export async function selectModel(setting: string): Promise<vscode.LanguageModelChat | undefined> {
    for (const selector of modelSelectors(setting)) {
        const models = await vscode.lm.selectChatModels(selector);
        if (models.length > 0) {
            return models[0];
        }
    }
    return undefined;
}

function cancelled(): ResponseError<void> {
    return new ResponseError(ErrorCodes.RequestCancelled, 'history/summarize was cancelled');
}

export class EditorSummarizer {
    constructor(private readonly host: SummarizerHost) {}

    async summarize(params: SummarizeParams, token: vscode.CancellationToken): Promise<SummarizeResult> {
        const setting = this.host.modelSetting();
        const where = `session ${params.sessionId}, strategy ${params.strategy}`;
        if (token.isCancellationRequested) {
            throw cancelled();
        }
        let model: vscode.LanguageModelChat | undefined;
        try {
            model = await selectModel(setting);
        } catch (err) {
            throw this.fail(`selecting a language model failed: ${errorText(err)}`, where);
        }
        if (model === undefined) {
            const which = setting.trim() ? `no language model matches hdcontext.summarizer.vscodeModel "${setting.trim()}"` : 'no language model is available in this editor';
            throw this.fail(
                `${which}. Install or sign in to a chat model provider (e.g. GitHub Copilot), change hdcontext.summarizer.vscodeModel, ` +
                    'set hdcontext.summarizer.provider to "openai", or use a strategy that needs no model (high-density, top-down-truncation)',
                where,
            );
        }
        this.host.log(`summarizing ${where} with ${model.vendor}/${model.id} (${params.messages.length} entries)`);
        const messages = summaryMessages(params).map((m) =>
            m.role === 'assistant' ? vscode.LanguageModelChatMessage.Assistant(m.text) : vscode.LanguageModelChatMessage.User(m.text),
        );
        let text = '';
        try {
            const response = await model.sendRequest(messages, { justification: JUSTIFICATION }, token);
            for await (const fragment of response.text) {
                if (token.isCancellationRequested) {
                    throw cancelled();
                }
                text += fragment;
            }
        } catch (err) {
            if (err instanceof ResponseError) {
                throw err;
            }
            if (token.isCancellationRequested || isCancellation(err)) {
                throw cancelled();
            }
            throw this.fail(`the language model ${model.vendor}/${model.id} failed: ${errorText(err)}`, where);
        }
        if (token.isCancellationRequested) {
            throw cancelled();
        }
        if (!text.trim()) {
            throw this.fail(`the language model ${model.vendor}/${model.id} answered with no text`, where);
        }
        return { text };
    }

    private fail(reason: string, where: string): ResponseError<void> {
        const message = `hdcontext cannot summarize (${where}): ${reason}.`;
        this.host.log(message);
        this.host.showError(message);
        return new ResponseError(ErrorCodes.RequestFailed, message);
    }
}

function errorText(err: unknown): string {
    if (err instanceof Error) {
        const code = (err as { code?: unknown }).code;
        return typeof code === 'string' && code && !err.message.includes(code) ? `${err.message} (${code})` : err.message;
    }
    return String(err);
}

function isCancellation(err: unknown): boolean {
    return err instanceof vscode.CancellationError || (err instanceof Error && err.name === 'Canceled');
}
