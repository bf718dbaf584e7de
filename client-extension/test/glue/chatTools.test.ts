/**
 * `hdcontext_retrieve` and `@hdcontext` with the fake `vscode` module, against the real daemon.
 */

import './register';

import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';

import { ChatSessions } from '../../src/chatSessions';
import { Daemon } from '../../src/daemon';
import { PARTICIPANT_ID, createParticipant } from '../../src/participant';
import type { CompactResult } from '../../src/protocol';
import { RetrieveTool } from '../../src/retrieveTool';
import { EditorSummarizer } from '../../src/summarizer';
import { bigFile, readThenWrite } from '../helpers/conversation';
import { VENV_PYTHON, tempDir } from '../helpers/realDaemon';
import { FakeLanguageClient } from './fakeClient';
import { CancellationTokenSource, LanguageModelTextPart, resetState, state, vscodeMock } from './vscodeMock';

const token = () => new CancellationTokenSource().token as never;

function makeDaemon(): Daemon {
    return new Daemon(
        {
            output: vscodeMock.window.createOutputChannel('hdcontext') as never,
            storageDir: tempDir('chat-tools-storage'),
            summarizer: new EditorSummarizer({ modelSetting: () => '', log: () => undefined, showError: () => undefined }),
            onTokens: () => undefined,
            onStarting: () => undefined,
            onRunning: () => undefined,
            onFailed: () => undefined,
        },
        (s, c) => new FakeLanguageClient(s, c) as never,
    );
}

/** A conversation the window sent through a twin: synced and compacted, as WrappingModels does. */
async function served(daemon: Daemon, chats: ChatSessions, sessionId: string, content = bigFile(30)): Promise<void> {
    const client = await daemon.ready();
    await client.sync(sessionId, readThenWrite('src/app.py', content));
    chats.apply(sessionId, await client.compactDelta(sessionId));
}

describe('hdcontext_retrieve', () => {
    let daemon: Daemon;
    let chats: ChatSessions;
    beforeEach(() => {
        resetState();
        state.config['hdcontext.server.pythonPath'] = VENV_PYTHON;
        daemon = makeDaemon();
        chats = new ChatSessions();
    });
    afterEach(() => daemon.stop());

    it('gives back the pruned read, looking in the conversations of this window, the last one first', async () => {
        const content = bigFile(30);
        await served(daemon, chats, 'older', content);
        const client = await daemon.ready();
        await client.sync('newer', [{ speaker: 'human', blocks: [{ type: 'text', text: 'hello' }] }]);
        chats.apply('newer', await client.compactDelta('newer'));
        const tool = new RetrieveTool(daemon, chats);
        const result = await tool.invoke({ input: { callId: 'call-read-1' } } as never, token());
        const text = (result as unknown as { content: LanguageModelTextPart[] }).content.map((p) => p.value).join('');
        assert.match(text, /^The output of tool call call-read-1 \(read_file \{"file_path":"src\/app.py"\}\) as it was returned, before hdcontext pruned it:\n/);
        assert.ok(text.includes(content));
    });

    it('a call no conversation has, and input without a call id: errors that say so', async () => {
        await served(daemon, chats, 'one');
        const tool = new RetrieveTool(daemon, chats);
        await assert.rejects(tool.invoke({ input: { callId: 'nope' } } as never, token()), /no conversation sent through hdcontext in this window has a tool call with id "nope"/);
        await assert.rejects(tool.invoke({ input: {} } as never, token()), /needs "callId"/);
        assert.match(String(tool.prepareInvocation({ input: { callId: 'c1' } } as never).invocationMessage), /tool call c1/);
    });
});

describe('@hdcontext', () => {
    let daemon: Daemon;
    let chats: ChatSessions;
    let compactions: CompactResult[];
    type Handler = (request: unknown, context: unknown, stream: unknown, token: unknown) => Promise<{ errorDetails?: { message: string } }>;
    const ask = async (command: string | undefined) => {
        const markdown: string[] = [];
        const buttons: unknown[] = [];
        const stream = { markdown: (s: string) => markdown.push(s), progress: () => undefined, button: (b: unknown) => buttons.push(b) };
        const handler = state.participants.get(PARTICIPANT_ID)?.handler as Handler;
        const result = await handler({ command, prompt: '' }, { history: [] }, stream, token());
        return { text: markdown.join(''), buttons, result };
    };

    beforeEach(() => {
        resetState();
        FakeLanguageClient.instances = [];
        state.config['hdcontext.server.pythonPath'] = VENV_PYTHON;
        daemon = makeDaemon();
        chats = new ChatSessions();
        compactions = [];
        createParticipant({ daemon, chats, noteCompaction: (r) => compactions.push(r), log: () => undefined });
    });
    afterEach(() => daemon.stop());

    it('before any conversation: says how to start one, starts no daemon', async () => {
        for (const command of ['status', 'compact', 'history']) {
            assert.match((await ask(command)).text, /Pick a model whose name ends in \*\*· hdcontext\*\*/);
        }
        assert.equal(FakeLanguageClient.instances.length, 0);
        assert.match((await ask(undefined)).text, /`\/status`.*\n.*`\/compact`.*\n.*`\/history`/);
    });

    it('/status, /compact, /history on the conversation served last', async () => {
        await served(daemon, chats, 'conv');
        const status = await ask('status');
        assert.match(status.text, /^\*\*[\d,]+\*\* of 200,000 tokens .* go to the model on the next call/);
        assert.match(status.text, /Session: `conv`/);
        const compacted = await ask('compact');
        assert.match(compacted.text, /^(Compacted: \*\*[\d,]+ → [\d,]+\*\* tokens|Nothing to compact)/);
        assert.equal(compactions.length, 1);
        const history = await ask('history');
        assert.deepEqual(
            state.executed.map((e) => [e.command, e.args]),
            [['hdcontext.showHistory', [{ sessionId: 'conv', view: 'curated' }]]],
        );
        assert.match(history.text, /Opened the history the model receives/);
        assert.equal(history.buttons.length, 1);
    });

    it('a daemon that fails: the error in the chat, not a crash', async () => {
        await served(daemon, chats, 'gone');
        await (await daemon.ready()).delete('gone');
        assert.match((await ask('status')).text, /no longer has the conversation `gone`/);
        const result = await ask('compact');
        assert.match(String(result.result.errorDetails?.message), /^hdcontext: unknown session 'gone'/);
    });
});
