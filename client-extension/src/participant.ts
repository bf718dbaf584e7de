/**
 * `@hdcontext` in the chat panel: `/status` (the current conversation's tokens, savings and
 * cost figures), `/compact` (compact it now), `/history` (open its curated history in an editor).
 * The current conversation is the one this window last sent through a "· hdcontext" model.
 */

import * as vscode from 'vscode';

import type { ChatSessions } from './chatSessions';
import { Commands } from './commands';
import type { Daemon } from './daemon';
import type { DaemonClient } from './daemonClient';
import { isSavingsFigures, type CompactResult, type SavingsFigures, type Status } from './protocol';
import { SHOW_SAVINGS_COMMAND } from './savings';
import { formatCount, statusReport } from './status';

export const PARTICIPANT_ID = 'hdcontext.chat';

export interface ParticipantHost {
    daemon: Daemon;
    chats: ChatSessions;
    /** Records what a compaction did (status bar, transcript path). */
    noteCompaction(result: CompactResult): void;
    log(line: string): void;
}

const NO_CONVERSATION =
    'No conversation of this window has gone through hdcontext yet. Pick a model whose name ends in **· hdcontext** ' +
    'in the chat panel\'s model picker, chat with it, then ask again.';

export function createParticipant(host: ParticipantHost): vscode.ChatParticipant {
    const participant = vscode.chat.createChatParticipant(PARTICIPANT_ID, (request, _context, stream, token) =>
        answer(host, request, stream, token),
    );
    participant.iconPath = new vscode.ThemeIcon('layers');
    return participant;
}

async function answer(host: ParticipantHost, request: vscode.ChatRequest, stream: vscode.ChatResponseStream, token: vscode.CancellationToken): Promise<vscode.ChatResult> {
    try {
        switch (request.command) {
            case 'status':
                await status(host, stream);
                break;
            case 'compact':
                await compact(host, stream);
                break;
            case 'history':
                await history(host, stream);
                break;
            default:
                stream.markdown(
                    'I report on and manage the conversations you have through a **· hdcontext** model (pick one in the model picker):\n\n' +
                        '- `/status`: the tokens the next call sends, what was saved, the prompt cache figures, what the calls cost\n' +
                        '- `/compact`: compact the conversation now\n' +
                        '- `/history`: open the history the model receives, as JSON\n',
                );
        }
        return token.isCancellationRequested ? {} : { metadata: { command: request.command ?? null } };
    } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        host.log(`@hdcontext /${request.command ?? ''} failed: ${message}`);
        return { errorDetails: { message: message.startsWith('hdcontext') ? message : `hdcontext: ${message}` } };
    }
}

async function status(host: ParticipantHost, stream: vscode.ChatResponseStream): Promise<void> {
    const id = host.chats.active;
    if (!id) {
        stream.markdown(NO_CONVERSATION);
        return;
    }
    stream.progress('Asking the daemon…');
    const client = await host.daemon.ready();
    const { sessions } = await client.list();
    const s: Status | undefined = sessions.find((x) => x.sessionId === id);
    if (!s) {
        stream.markdown(`The daemon no longer has the conversation \`${id}\` (it was deleted).`);
        return;
    }
    stream.markdown(statusReport(s, await savingsOf(host, client, id)));
    stream.button({ command: SHOW_SAVINGS_COMMAND, title: 'Show savings' });
}

/** The session's money figures, or none (a daemon without `stats/savings`: the rest still shows). */
async function savingsOf(host: ParticipantHost, client: DaemonClient, id: string): Promise<SavingsFigures | undefined> {
    try {
        const { figures } = await client.savings({ sessions: [id] });
        if (isSavingsFigures(figures)) {
            return figures;
        }
        host.log('stats/savings: the figures are not of the expected shape; /status shows no money line');
    } catch (err) {
        host.log(`stats/savings failed, /status shows no money line: ${err instanceof Error ? err.message : String(err)}`);
    }
    return undefined;
}

async function compact(host: ParticipantHost, stream: vscode.ChatResponseStream): Promise<void> {
    const id = host.chats.active;
    if (!id) {
        stream.markdown(NO_CONVERSATION);
        return;
    }
    stream.progress('Compacting…');
    const result = await (await host.daemon.ready()).compact(id);
    host.noteCompaction(result);
    const before = result.compression?.tokensBefore ?? result.density?.tokensBefore;
    const after = result.status.totalTokens;
    stream.markdown(
        before !== undefined && before !== after
            ? `Compacted: **${formatCount(before)} → ${formatCount(after)}** tokens for the next call.`
            : `Nothing to compact: the next call sends ${formatCount(after)} tokens.`,
    );
    if (result.overLimit) {
        stream.markdown(' It is still over the context limit.');
    }
}

async function history(host: ParticipantHost, stream: vscode.ChatResponseStream): Promise<void> {
    const id = host.chats.active;
    if (!id) {
        stream.markdown(NO_CONVERSATION);
        return;
    }
    await vscode.commands.executeCommand(Commands.showHistory, { sessionId: id, view: 'curated' });
    stream.markdown(`Opened the history the model receives on the next call (\`${id}\`, curated view) in an editor.`);
    stream.button({ command: Commands.showHistory, arguments: [{ sessionId: id, view: 'transcript' }], title: 'Open the whole transcript' });
}
