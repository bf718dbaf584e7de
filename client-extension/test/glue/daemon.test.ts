import './register';

import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';

import * as fs from 'node:fs';
import * as path from 'node:path';

import { Daemon, MAX_RESTARTS, MEANWHILE, type DaemonHost } from '../../src/daemon';
import { EditorSummarizer } from '../../src/summarizer';
import { fakeBundle } from '../helpers/fakeBundle';
import { VENV_PYTHON, pythonWithoutHdcontext, tempDir } from '../helpers/realDaemon';
import { FakeLanguageClient } from './fakeClient';
import { resetState, state, vscodeMock } from './vscodeMock';

function makeHost() {
    const events: string[] = [];
    const host: DaemonHost = {
        output: vscodeMock.window.createOutputChannel('hdcontext') as never,
        storageDir: tempDir('glue-storage'),
        summarizer: new EditorSummarizer({ modelSetting: () => '', log: () => undefined, showError: () => undefined }),
        onTokens: () => events.push('tokens'),
        onStarting: () => events.push('starting'),
        onRunning: () => events.push('running'),
        onFailed: (m) => events.push(`failed: ${m}`),
    };
    return { host, events };
}

const factory = (s: unknown, c: unknown) => new FakeLanguageClient(s, c) as never;
const flush = () => new Promise((r) => setTimeout(r, 20));

describe('Daemon: interpreter, the one message, restarts', () => {
    let daemon: Daemon | undefined;
    beforeEach(() => {
        resetState();
        FakeLanguageClient.instances = [];
    });
    afterEach(async () => {
        await daemon?.stop();
        daemon = undefined;
    });

    it('hdcontext not importable: one clear error with the fix, no client, no retry loop', async () => {
        const py = pythonWithoutHdcontext();
        state.config['hdcontext.server.pythonPath'] = py;
        state.messageAnswers = ['Copy Install Command'];
        const { host, events } = makeHost();
        daemon = new Daemon(host, factory);
        await assert.rejects(daemon.ready(), /cannot import hdcontext/);
        await assert.rejects(daemon.ready(), /cannot import hdcontext/);
        await assert.rejects(daemon.ready(), /cannot import hdcontext/);
        await flush();
        assert.equal(state.errors.length, 1, JSON.stringify(state.errors));
        assert.match(state.errors[0], new RegExp(`${py.replace(/[/.]/g, '\\$&')} -m pip install hdcontext`));
        assert.match(state.errors[0], /hdcontext\.server\.pythonPath/);
        assert.equal(state.clipboard, `${py} -m pip install hdcontext`, 'the button copied the command');
        assert.equal(FakeLanguageClient.instances.length, 0, 'no daemon was started');
        assert.equal(events.filter((e) => e === 'starting').length, 1, 'checked once');
        assert.ok(events.some((e) => e.startsWith('failed: ')));
        assert.match(daemon.failure ?? '', /cannot import hdcontext/);
        // The user asks again (Restart Daemon): checked again, and told again once.
        await assert.rejects(daemon.restart(), /cannot import hdcontext/);
        await flush();
        assert.equal(state.errors.length, 2);
    });

    it('a pythonPath that names no file: one message that says so and what to do, nothing installed instead', async () => {
        state.config['hdcontext.server.pythonPath'] = '/nonexistent/python3';
        const { host } = makeHost();
        daemon = new Daemon({ ...host, bundleDir: fakeBundle().dir, extensionVersion: '0.1.0' }, factory);
        await assert.rejects(daemon.ready(), /hdcontext\.server\.pythonPath is \/nonexistent\/python3, which does not exist/);
        await assert.rejects(daemon.ready());
        await flush();
        assert.equal(state.errors.length, 1);
        assert.match(state.errors[0], /Clear the setting/);
        assert.ok(state.errors[0].endsWith(MEANWHILE), 'and what happens to chat requests meanwhile');
        assert.equal(state.progress.length, 0, 'the setting wins: no environment of its own');
        assert.ok(!fs.existsSync(path.join(host.storageDir, 'daemon-env')));
        assert.equal(FakeLanguageClient.instances.length, 0);
    });

    it("no setting: the Python extension's interpreter, when the workspace is trusted", async () => {
        let activated = 0;
        state.extensions.set('ms-python.python', {
            isActive: false,
            exports: undefined,
            activate: async () => {
                activated++;
                return {
                    environments: {
                        getActiveEnvironmentPath: () => ({ id: 'venv', path: '/some/venv' }),
                        resolveEnvironment: async () => ({ executable: { uri: { fsPath: VENV_PYTHON } } }),
                    },
                };
            },
        });
        const { host, events } = makeHost();
        daemon = new Daemon(host, factory);
        await daemon.ready();
        assert.equal(activated, 1);
        assert.deepEqual(daemon.interpreter, { path: VENV_PYTHON, source: 'python-extension' });
        assert.ok(events.includes('running'));
        const client = FakeLanguageClient.instances[0];
        assert.equal(client.serverOptions.command, VENV_PYTHON);
        assert.deepEqual(client.serverOptions.args, ['-m', 'hdcontext', 'serve']);
        assert.equal(client.serverOptions.transport, undefined, 'no transport: the client would append --stdio');
        assert.deepEqual(client.clientOptions.initializationOptions, { storageDir: host.storageDir, retrieveTool: 'hdcontext_retrieve' });
        // Settings only: the daemon's own watcher is the one source of file writes.
        assert.deepEqual(client.clientOptions.synchronize, { configurationSection: 'hdcontext' });
        assert.equal(client.clientOptions.documentSelector, undefined);
        assert.equal(client.initializeResult.serverInfo.name, 'hdcontext');
    });

    it("Restricted Mode: not the Python extension's interpreter", async () => {
        state.trusted = false;
        state.extensions.set('ms-python.python', {
            isActive: true,
            exports: { environments: { getActiveEnvironmentPath: () => ({ path: '/workspace/.venv/bin/python' }) } },
        });
        state.config['hdcontext.server.pythonPath'] = '';
        daemon = new Daemon(makeHost().host, factory);
        await daemon.ready().catch(() => undefined);
        assert.equal(daemon.interpreter?.source, 'default');
        assert.equal(daemon.interpreter?.path, 'python3');
    });

    it(`a daemon that keeps exiting is restarted ${MAX_RESTARTS} times, then left stopped with one message`, async () => {
        const { host } = makeHost();
        daemon = new Daemon(host, factory);
        const onClosed = () => (daemon as unknown as { onClosed(): { action: number } }).onClosed();
        const actions = Array.from({ length: MAX_RESTARTS + 2 }, onClosed).map((r) => r.action);
        // CloseAction: DoNotRestart = 1, Restart = 2.
        assert.deepEqual(actions, [...Array(MAX_RESTARTS).fill(2), 1, 1]);
        await flush();
        assert.equal(state.errors.length, 1);
        assert.match(state.errors[0], /left stopped/);
        await assert.rejects(daemon.ready(), /left stopped/);
    });

    it("the daemon's warnings about settings are shown, once while on screen", async () => {
        state.config['hdcontext.server.pythonPath'] = VENV_PYTHON;
        const { host } = makeHost();
        daemon = new Daemon(host, factory);
        await daemon.ready();
        const log = (daemon as unknown as { onLogMessage(p: { type: number; message: string }): void }).onLogMessage.bind(daemon);
        log({ type: 2, message: "hdcontext: setting 'contextLimit': -5 is not valid, expected a positive integer; the previous value stands" });
        log({ type: 2, message: "hdcontext: setting 'contextLimit': -5 is not valid, expected a positive integer; the previous value stands" });
        log({ type: 3, message: 'hdcontext: info' });
        assert.equal(state.warnings.length, 1);
        assert.ok(state.output.some((l) => l.includes('[daemon warning]')));
    });
});
