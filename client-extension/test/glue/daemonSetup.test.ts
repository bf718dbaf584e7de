/**
 * The daemon's own environment, through the Daemon as the extension uses it (mocked vscode, real
 * processes): first use with no pythonPath and a python3 that cannot import hdcontext, reuse by
 * the next window, replacement for another extension version, Reinstall Daemon, and the errors
 * (no Python 3.11+, no index and no bundled wheels, a failed install, a cancelled one), each said
 * once. The packages are fakeBundle.ts's hand-made wheel: real venv and pip, offline, seconds.
 */

import './register';

import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';

import { Daemon, MEANWHILE, type DaemonHost } from '../../src/daemon';
import { registerCommands } from '../../src/commands';
import { StatusBar } from '../../src/statusBar';
import { EditorSummarizer } from '../../src/summarizer';
import { binWithOldPython3, binWithPython3WithoutHdcontext, fakeBundle } from '../helpers/fakeBundle';
import { tempDir } from '../helpers/realDaemon';
import { FakeLanguageClient } from './fakeClient';
import { resetState, state, vscodeMock } from './vscodeMock';

const factory = (s: unknown, c: unknown) => new FakeLanguageClient(s, c) as never;
const flush = () => new Promise((r) => setTimeout(r, 20));

function host(storageDir: string, bundleDir: string, extensionVersion = '0.1.0'): DaemonHost {
    return {
        output: vscodeMock.window.createOutputChannel('hdcontext') as never,
        storageDir,
        summarizer: new EditorSummarizer({ modelSetting: () => '', log: () => undefined, showError: () => undefined }),
        onTokens: () => undefined,
        onStarting: () => undefined,
        onRunning: () => undefined,
        onFailed: () => undefined,
        bundleDir,
        extensionVersion,
    };
}

const marker = (storageDir: string) => JSON.parse(fs.readFileSync(path.join(storageDir, 'daemon-env', 'hdcontext-env.json'), 'utf8')) as { createdAt: string; key: string };

// A guard against a hang, not a measurement: each test makes a real environment (venv, pip), and
// the suite took over 180 s on two cores shared with other work.
describe("Daemon: its own environment, when no interpreter can import hdcontext", { timeout: 600000 }, () => {
    const savedEnv = { ...process.env };
    const daemons: Daemon[] = [];
    const make = (h: DaemonHost) => {
        const d = new Daemon(h, factory);
        daemons.push(d);
        return d;
    };

    beforeEach(() => {
        resetState();
        FakeLanguageClient.instances = [];
        // python3 on PATH runs, but cannot import hdcontext; no pythonPath setting.
        process.env.PATH = `${binWithPython3WithoutHdcontext()}${path.delimiter}${savedEnv.PATH ?? ''}`;
    });
    afterEach(async () => {
        for (const d of daemons.splice(0)) {
            await d.stop();
        }
        for (const key of Object.keys(process.env)) {
            if (!(key in savedEnv)) {
                delete process.env[key];
            }
        }
        Object.assign(process.env, savedEnv);
    });

    it('first use sets it up behind one notification (what, where, how big), pip in the output; the daemon runs from it; the next window reuses it', async () => {
        const storage = tempDir('global-storage');
        const { dir } = fakeBundle();
        const first = make(host(storage, dir));
        const client = await first.ready();
        assert.ok(client);
        const envPython = path.join(storage, 'daemon-env', 'bin', 'python');
        assert.deepEqual(first.interpreter, { path: envPython, source: 'managed' });
        const fake = FakeLanguageClient.instances[0];
        assert.equal(fake.serverOptions.command, envPython);
        assert.deepEqual(fake.serverOptions.args, ['-m', 'hdcontext', 'serve']);
        assert.equal(fake.initializeResult.serverInfo.name, 'hdcontext', 'the daemon answered from the environment');

        assert.equal(state.progress.length, 1, 'one notification');
        const shown = state.progress[0];
        assert.equal(shown.options.location, vscodeMock.ProgressLocation.Notification);
        assert.match(shown.options.title ?? '', /setting up its daemon/);
        assert.equal(shown.options.cancellable, true);
        const text = shown.messages.join('\n');
        assert.match(text, /Installing hdcontext 0\.0\.1 and the 0 packages it needs \(\d+ (kB|bytes) of wheels that came with the extension, no download\)/);
        assert.ok(text.includes(path.join(storage, 'daemon-env')), 'where');
        assert.match(text, /with Python 3\.\d+\.\d+/);
        assert.match(text, /Step 2 of 2: installing the bundled wheels/);
        assert.ok(state.output.some((l) => /^\[pip\] Successfully installed hdcontext-0\.0\.1/.test(l)), "pip's log in the output channel");
        assert.ok(state.output.some((l) => /the daemon environment is ready: .* on disk, all from the bundled wheels, in [\d.]+ s/.test(l)));
        assert.equal(state.errors.length, 0, state.errors.join('\n'));
        const made = marker(storage).createdAt;

        // The next start (a reload, the next window): no install, the same environment. (One
        // daemon per storage folder: the first one goes, as when a window closes.)
        await first.stop();
        state.output = [];
        const second = make(host(storage, dir));
        await second.ready();
        assert.equal(state.progress.length, 1, 'nothing installed again');
        assert.equal(second.interpreter?.path, envPython);
        assert.ok(state.output.some((l) => l.includes('using the daemon environment')));
        assert.equal(marker(storage).createdAt, made);

        // A new version of the extension: made anew, for it.
        await second.stop();
        const third = make(host(storage, dir, '0.2.0'));
        await third.ready();
        assert.equal(state.progress.length, 2, 'installed again for the new version');
        assert.notEqual(marker(storage).createdAt, made);
    });

    it('"hdcontext: Reinstall Daemon" makes the environment anew and starts the daemon from it', async () => {
        const storage = tempDir('global-storage');
        const { dir } = fakeBundle();
        const daemon = make(host(storage, dir));
        const context = { subscriptions: [] as Array<{ dispose(): unknown }> };
        const statusBar = new StatusBar();
        registerCommands(context as never, { daemon, statusBar, output: vscodeMock.window.createOutputChannel('hdcontext') as never, transcripts: new Map(), noteCompaction: () => undefined });
        await daemon.ready();
        const made = marker(storage).createdAt;
        await vscodeMock.commands.executeCommand('hdcontext.reinstallDaemon');
        await daemon.ready();
        assert.equal(state.progress.length, 2);
        assert.notEqual(marker(storage).createdAt, made);
        assert.equal(FakeLanguageClient.instances.length, 2, 'stopped, then started from the new environment');
        assert.ok(FakeLanguageClient.instances[0].stopped);
        statusBar.dispose();
    });

    it('no Python 3.11+: one error that says which to install, nothing installed, no retry until asked', async () => {
        process.env.PATH = binWithOldPython3();
        const daemon = make(host(tempDir('global-storage'), fakeBundle().dir));
        await assert.rejects(daemon.ready(), /needs Python 3\.11 or later, and python3 is Python 3\.9\.2 \(\/usr\/bin\/python3\.9\)/);
        await assert.rejects(daemon.ready());
        await flush();
        assert.equal(state.errors.length, 1);
        assert.match(state.errors[0], /Install Python 3\.11 or later \(.*python\.org\), then run "hdcontext: Reinstall Daemon"/);
        assert.ok(state.errors[0].endsWith(MEANWHILE));
        assert.equal(state.progress.length, 0);
        assert.equal(FakeLanguageClient.instances.length, 0);
    });

    it('no index reachable and no bundled wheels (the universal package): which package to get', async () => {
        // pip's own configuration, as the user's: an index that does not answer.
        process.env.PIP_CONFIG_FILE = path.join(tempDir('pipconf'), 'none.conf');
        process.env.PIP_INDEX_URL = 'http://127.0.0.1:9/simple';
        process.env.PIP_RETRIES = '0';
        delete process.env.PIP_FIND_LINKS;
        delete process.env.PIP_EXTRA_INDEX_URL;
        const storage = tempDir('global-storage');
        const { dir } = fakeBundle({ target: null, requires: ['hdcontext-test-dependency>=1'] });
        const daemon = make(host(storage, dir));
        await assert.rejects(daemon.ready(), /pip could not get hdcontext-test-dependency>=1 \(a dependency of hdcontext\) from your package index/);
        await flush();
        assert.equal(state.errors.length, 1);
        assert.match(state.errors[0], /install the package made for this machine, hdcontext-\w+-\w+\.vsix, which carries them/);
        assert.match(state.progress[0].messages[0], /downloaded from your package index/);
        assert.ok(!fs.existsSync(path.join(storage, 'daemon-env')), 'no half-made environment left');
    });

    it("a failed install: the last lines of pip's log, once", async () => {
        const { dir } = fakeBundle({ requires: ['hdcontext-test-dependency>=1'] });
        const daemon = make(host(tempDir('global-storage'), dir));
        await assert.rejects(daemon.ready(), /installing the bundled wheels failed \(exit status 1\)\. The last lines: .*No matching distribution found for hdcontext-test-dependency>=1/);
        await flush();
        assert.equal(state.errors.length, 1);
        assert.match(state.errors[0], /The whole log is in the hdcontext output channel/);
    });

    it('cancelled from the notification: says how to start again', async () => {
        state.cancelProgress = true;
        const storage = tempDir('global-storage');
        const daemon = make(host(storage, fakeBundle().dir));
        await assert.rejects(daemon.ready(), /setting up its daemon was cancelled\. Run "hdcontext: Reinstall Daemon"/);
        assert.ok(!fs.existsSync(path.join(storage, 'daemon-env')));
    });
});
