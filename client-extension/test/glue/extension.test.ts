/**
 * activate() with the fake `vscode` module and a language client that runs the real daemon:
 * the API, the status bar fed by history/tokens, settings pulled through the extension's
 * middleware, the summarizer with no model, the commands, and the one message without hdcontext.
 */

import './register';

import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';

import type { HdcontextApi } from '../../api';
import { activate, deactivate } from '../../src/extension';
import type { Status } from '../../src/protocol';
import { readThenWrite, readsOnly } from '../helpers/conversation';
import { VENV_PYTHON, pythonWithoutHdcontext, tempDir, waitFor } from '../helpers/realDaemon';
import { FakeLanguageClient } from './fakeClient';
import { Uri, changeConfiguration, resetState, state } from './vscodeMock';

function context() {
    return { subscriptions: [] as Array<{ dispose(): unknown }>, globalStorageUri: Uri.file(tempDir('global-storage')) };
}

const factory = (s: unknown, c: unknown) => new FakeLanguageClient(s, c) as never;
const item = () => state.statusItems[0];
const until = async (ok: () => boolean, what: string, ms = 10000) => {
    const end = Date.now() + ms;
    while (!ok()) {
        if (Date.now() > end) {
            assert.fail(`timeout: ${what}`);
        }
        await new Promise((r) => setTimeout(r, 20));
    }
};

describe('activate() against the real daemon', () => {
    let api: HdcontextApi;
    let ctx: ReturnType<typeof context>;

    beforeEach(async () => {
        resetState();
        FakeLanguageClient.instances = [];
        state.config['hdcontext.server.pythonPath'] = VENV_PYTHON;
        ctx = context();
        api = await activate(ctx as never, factory);
    });
    afterEach(async () => {
        await deactivate();
        ctx.subscriptions.forEach((d) => d.dispose());
    });

    it('the API drives the daemon and the status bar follows history/tokens', async () => {
        assert.equal(api.protocolVersion, 2);
        const seen: Status[] = [];
        api.onTokens((s) => seen.push(s));
        const opened = await api.open('chat');
        assert.equal(opened.sessionId, 'chat');
        const client = FakeLanguageClient.instances[0];
        assert.equal(client.clientOptions.initializationOptions.storageDir, ctx.globalStorageUri.fsPath);
        const appended = await api.append('chat', readThenWrite());
        await until(() => seen.some((s) => s.version === appended.version), 'onTokens after append');
        const before = item().text;
        assert.match(before, /^\$\(layers\) \d+(\.\d)?k \/ 200k · \d+(\.\d)?%$/);
        const result = await api.compact('chat');
        assert.ok(result.status.totalTokens < appended.totalTokens);
        await until(() => item().text !== before, 'the figure drops');
        assert.match(String(item().tooltip), /Saved so far: [1-9]/);
        const history = await api.getHistory('chat', 'transcript');
        assert.equal(history.entries.length, 6);
    });

    it("an edit of the IDE settings reaches the daemon through the extension's middleware", async () => {
        await api.open('limits');
        await api.append('limits', readThenWrite());
        await until(() => /\/ 200k/.test(item().text), 'limit 200k shown');
        state.config['hdcontext.contextLimit'] = 100000;
        state.userSet.add('hdcontext.contextLimit');
        // What vscode-languageclient's configuration sync does on the edit:
        const changed = waitFor<Status>((l) => api.onTokens(l), (s) => s.contextLimit === 100000);
        await FakeLanguageClient.instances[0].sendNotification('workspace/didChangeConfiguration', { settings: null });
        await changed;
        await until(() => /\/ 100k/.test(item().text), 'limit 100k shown');
        // A default the user did not set is not sent: the daemon reports it as its default.
        const settings = (await FakeLanguageClient.instances[0].sendRequest('history/settings', { sessionId: 'limits' })) as {
            sources: Record<string, string>;
        };
        assert.equal(settings.sources.contextLimit, 'settings');
        assert.equal(settings.sources['compression.strategy'], 'default');
    });

    it('an LLM strategy with no editor model: compact fails with -32002, and the user is told why', async () => {
        await api.open('llm', { contextLimit: 3000 });
        await FakeLanguageClient.instances[0].sendRequest('history/setOverride', { sessionId: 'llm', key: 'compression.strategy', value: 'one-shot' });
        await api.append('llm', readsOnly(['a.py', 'b.py']));
        await assert.rejects(api.compact('llm'), (err: Error & { code?: number }) => {
            assert.equal(err.code, -32002);
            assert.match(err.message, /no language model is available/);
            return true;
        });
        assert.equal(state.errors.length, 1);
        assert.match(state.errors[0], /hdcontext cannot summarize \(session llm, strategy one-shot\)/);
    });

    it('commands: compact now, show history as JSON, clear', async () => {
        await api.open('cmd');
        await api.append('cmd', readThenWrite());
        await state.commands.get('hdcontext.compactNow')?.();
        assert.match(state.infos.pop() ?? '', /hdcontext: session cmd: [\d,]+ → [\d,]+ tokens\./);
        state.quickPickAnswers = [(items) => items.find((i: { label: string }) => i.label === 'transcript')];
        await state.commands.get('hdcontext.showHistory')?.('cmd');
        const doc = state.openedDocuments.pop();
        assert.equal(doc?.language, 'json');
        assert.equal(JSON.parse(doc?.content ?? '[]').length, 6);
        state.messageAnswers = ['Clear'];
        await state.commands.get('hdcontext.clearSession')?.('cmd');
        await until(() => /^\$\(layers\) 0 \/ 200k · 0%$/.test(item().text), 'cleared');
        assert.equal(state.errors.length, 0, JSON.stringify(state.errors));
    });

    it('command: set a session override', async () => {
        await api.open('ovr');
        state.quickPickAnswers = [(items) => items.find((i: { key?: string }) => i.key === 'compression.strategy'), (items) => items.find((i: string) => i === 'top-down-truncation')];
        await state.commands.get('hdcontext.setOverride')?.('ovr');
        assert.match(state.infos.pop() ?? '', /compression.strategy = "top-down-truncation" \(override\)/);
        await until(() => /strategy: top-down-truncation/i.test(String(item().tooltip)), 'tooltip shows the new strategy');
        state.quickPickAnswers = [(items) => items.find((i: { key?: string }) => i.key === 'contextLimit')];
        state.inputAnswers = ['not a number'];
        await state.commands.get('hdcontext.setOverride')?.('ovr');
        assert.match(state.errors.pop() ?? '', /contextLimit/);
    });
});

describe('the daemon starts on first use and stops in deactivate()', () => {
    beforeEach(() => {
        resetState();
        FakeLanguageClient.instances = [];
        state.config['hdcontext.server.pythonPath'] = VENV_PYTHON;
    });

    it('activation starts nothing; an API call starts it; deactivate() stops it', async () => {
        const ctx = context();
        const api = await activate(ctx as never, factory);
        // A change of interpreter before any use does not start it either.
        changeConfiguration(['hdcontext.server.pythonPath']);
        await new Promise((r) => setTimeout(r, 100));
        assert.equal(FakeLanguageClient.instances.length, 0);
        assert.equal(item().text, '$(layers) hdcontext');
        assert.match(String(item().tooltip), /starts when a chat first uses it/);
        await api.open('first-use');
        assert.equal(FakeLanguageClient.instances.length, 1);
        const client = FakeLanguageClient.instances[0];
        assert.equal(client.process?.exitCode, null, 'running');
        await deactivate();
        assert.ok(client.stopped);
        assert.notEqual(client.process?.exitCode, null, 'the process is gone when deactivate() resolves');
        // Disposing the subscriptions afterwards (as VS Code does) stops nothing twice and starts nothing.
        ctx.subscriptions.forEach((d) => d.dispose());
        assert.equal(FakeLanguageClient.instances.length, 1);
    });

    it("a click on the status bar starts it (the sessions and actions list)", async () => {
        const ctx = context();
        await activate(ctx as never, factory);
        assert.equal(item().command, 'hdcontext.showSessions');
        await state.commands.get('hdcontext.showSessions')?.();
        assert.equal(FakeLanguageClient.instances.length, 1);
        await deactivate();
        ctx.subscriptions.forEach((d) => d.dispose());
    });
});

describe('activate() without hdcontext', () => {
    beforeEach(() => {
        resetState();
        FakeLanguageClient.instances = [];
    });
    afterEach(deactivate);

    it('one error message, API calls reject with the reason, the status bar says so, no restarts', async () => {
        state.config['hdcontext.server.pythonPath'] = pythonWithoutHdcontext();
        const ctx = context();
        const api = await activate(ctx as never, factory);
        await assert.rejects(api.open('x'), /cannot import hdcontext/);
        await assert.rejects(api.append('x', []), /cannot import hdcontext/);
        await state.commands.get('hdcontext.compactNow')?.();
        await new Promise((r) => setTimeout(r, 50));
        assert.equal(state.errors.length, 1, JSON.stringify(state.errors));
        assert.equal(item().text, '$(error) hdcontext');
        assert.equal(FakeLanguageClient.instances.length, 0);
        // Changing hdcontext.server.pythonPath restarts it: now it runs.
        state.config['hdcontext.server.pythonPath'] = VENV_PYTHON;
        changeConfiguration(['hdcontext.server.pythonPath']);
        // A daemon starting (Python importing pygls): over 10 s on a loaded machine.
        await until(() => item().text === '$(layers) hdcontext', 'running after the fix', 120000);
        assert.equal((await api.open('x')).sessionId, 'x');
        ctx.subscriptions.forEach((d) => d.dispose());
    });
});
