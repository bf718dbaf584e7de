/**
 * End to end, first use as a new user meets it (codeServer.ts: code-server 4.139.1, headless
 * Chromium): a fresh profile, the package built for this machine (E2E_VSIX, what `make vsix
 * TARGET=linux-x64` builds, with the wheels of the Python the test runs:
 * the hdcontext wheel and its dependencies' wheels inside), no `hdcontext.server.pythonPath`,
 * and on PATH a `python3` (the Python of the repository's venv, without the venv) that cannot
 * import hdcontext. With the chat fixture (chat-fixture/: "Fake Backend 1", `@agent`):
 *   1. the first chat request through "Fake Backend 1 · hdcontext" sets the daemon's environment
 *      up (the notification is on screen: screenshot) and is answered through the daemon: the
 *      next turn's stale read is pruned (`every-turn` schedule), the backend gets fewer tokens;
 *   2. a reload starts the daemon from the same environment, installing nothing;
 *   3. a pythonPath that names a missing file gives the clear error (screenshot), and the request
 *      goes to the model unchanged.
 * Screenshots, tokens.json and timings.json go to test-artifacts/first-use/.
 */

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { bigFile } from '../helpers/conversation';
import { EXTENSION_ROOT, VENV_PYTHON, tempDir } from '../helpers/realDaemon';
import { pickModel, readLog, reply, send, toolIds, widenChat, type Message } from './chatPanel';
import { ARTIFACTS, CodeServerRun, E2E_VSIX, EDITOR_TESTS_SKIPPED, HOST_TARGET, poll, STEP_MS } from './codeServer';

const FIXTURE_VSIX = path.join(EXTENSION_ROOT, 'out', 'e2e', 'hdcontext-chat-e2e-fixture.vsix');
const APP = bigFile(150);
const MISSING_PYTHON = '/nonexistent/bin/python3';
const TOAST = '.notifications-toasts .notification-toast';

interface Marker {
    key: string;
    python: string;
    pythonVersion: string;
    offline: boolean;
    createdAt: string;
}

/** The daemons running on this machine from `envDir`, by pid (read from /proc). */
function daemonsFrom(envDir: string): number[] {
    const pids: number[] = [];
    for (const name of fs.readdirSync('/proc')) {
        if (!/^\d+$/.test(name)) {
            continue;
        }
        try {
            const argv = fs.readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
            if (argv[0].startsWith(envDir + path.sep) && argv.slice(1, 4).join(' ') === '-m hdcontext serve') {
                pids.push(Number(name));
            }
        } catch {
            // gone meanwhile
        }
    }
    return pids;
}

describe('e2e: first use, the extension sets up its own daemon', { timeout: 10 * 60 * 1000 }, () => {
    let run: CodeServerRun;
    let logFile: string;
    let envDir: string;
    const figures: Record<string, unknown> = {};

    const log = () => readLog(logFile);
    const callsSince = (since: number) => log().filter((l) => l.hop === 'backend' && l.at >= since);
    const sentSince = (since: number) => log().filter((l) => l.hop === 'agent-send' && l.at >= since);
    const marker = (): Marker => JSON.parse(fs.readFileSync(path.join(envDir, 'hdcontext-env.json'), 'utf8')) as Marker;

    before(async () => {
        if (EDITOR_TESTS_SKIPPED) {
            return;
        }
        assert.ok(fs.existsSync(E2E_VSIX), `${E2E_VSIX} is missing: run make e2e (it builds it)`);
        // A python3 that is a plain Python 3.11+, not the venv: the base interpreter of the
        // repository's venv, without user site-packages.
        const base = execFileSync(VENV_PYTHON, ['-c', 'import sys; print(sys._base_executable)'], { encoding: 'utf8' }).trim();
        const bin = tempDir('first-use-bin');
        fs.writeFileSync(path.join(bin, 'python3'), `#!/bin/sh\nPYTHONNOUSERSITE=1 exec "${base}" "$@"\n`, { mode: 0o755 });
        assert.throws(
            () => execFileSync(path.join(bin, 'python3'), ['-c', 'import hdcontext'], { stdio: 'pipe' }),
            `${base} can import hdcontext: the test needs a python3 that cannot`,
        );
        logFile = path.join(ARTIFACTS, 'first-use', 'chat.log');
        run = await CodeServerRun.start({
            name: 'first-use',
            extensions: [E2E_VSIX, FIXTURE_VSIX],
            files: { 'src/app.py': APP },
            settings: {
                'hdcontext.chat.wrapVendors': ['fakebackend'],
                // Every pruning at once, so that the daemon's part shows in the tokens sent.
                'hdcontext.compression.density.schedule': 'every-turn',
                'hdcontextE2E.logFile': logFile,
            },
            pathPrepend: [bin],
        });
        envDir = path.join(run.globalStorage, 'hdcontext.hdcontext', 'daemon-env');
    });

    after(async () => {
        if (run) {
            fs.writeFileSync(path.join(run.artifacts, 'timings.json'), JSON.stringify(figures, null, 2) + '\n');
            await run.close();
        }
    });

    it('the first chat request sets the daemon up (the notification on screen) and is answered through it', { skip: EDITOR_TESTS_SKIPPED }, async (t) => {
        await run.guarded(async () => {
            await widenChat(run);
            await pickModel(run);
            run.mark('model picked');
            assert.ok(!fs.existsSync(envDir), 'a fresh profile: no environment yet');

            const since = Date.now();
            await send(run, '@agent read src/app.py');
            const toast = run.page.locator(TOAST, { hasText: 'setting up its daemon' }).first();
            await toast.getByText(/Installing hdcontext/).first().waitFor({ timeout: STEP_MS });
            const shown = (await toast.innerText()).replace(/\s+/g, ' ');
            run.mark('setup notification shown');
            t.diagnostic(`notification: ${JSON.stringify(shown)}`);
            assert.match(shown, /Installing hdcontext \S+ and the \d+ packages it needs \([\d.]+ MB of wheels that came with the extension, no download\)/);
            assert.match(shown, /daemon-env, with Python 3\.\d+/);
            await run.page.waitForTimeout(700); // the toast slides in
            t.diagnostic(`screenshot: ${await run.shot('first-use-setup.png')}`);

            const text = await reply(run, /Read it: \d+ lines/, 5 * 60 * 1000);
            const firstUse = Date.now() - since;
            run.mark('first request answered');
            figures.firstRequestMs = firstUse;
            t.diagnostic(`first request answered ${(firstUse / 1000).toFixed(1)} s after it was sent, setup included: ${JSON.stringify(text)}`);

            const m = marker();
            assert.equal(m.offline, true, 'every package from the wheels in the package');
            const daemons = daemonsFrom(envDir);
            assert.equal(daemons.length, 1, 'the daemon runs from the environment');
            figures.firstDaemonPid = daemons[0];
            const output = run.outputChannel('hdcontext');
            const ready = /the daemon environment is ready: .*, ([\d.]+ [kM]B) on disk, all from the bundled wheels, in ([\d.]+) s/.exec(output);
            assert.ok(ready, "the output channel says it is ready (and has pip's log)");
            assert.match(output, /\[pip\] Successfully installed .*hdcontext-/);
            figures.environment = { size: ready[1], setupSeconds: Number(ready[2]), python: m.pythonVersion };
            t.diagnostic(`environment: ${ready[1]} on disk, set up in ${ready[2]} s with Python ${m.pythonVersion}`);

            // The next turn goes through the daemon: the stale read is pruned.
            const since2 = Date.now();
            await send(run, '@agent write src/app.py');
            await reply(run, /Wrote it\./);
            const calls = callsSince(since2);
            const last = calls[calls.length - 1].messages as Message[];
            const sent = sentSince(since2);
            const agentSent = sent[sent.length - 1].tokens as number;
            const readId = toolIds(callsSince(since)[1].messages as Message[]).calls[0];
            assert.ok(!toolIds(last).calls.includes(readId), 'the stale read went');
            assert.ok((calls[calls.length - 1].tokens ?? 0) < agentSent, 'the backend received fewer tokens than the agent sent');
            figures.pruned = { agentSent, backendReceived: calls[calls.length - 1].tokens };
            t.diagnostic(`turn 2: the agent sent ${agentSent} tokens, the backend received ${calls[calls.length - 1].tokens}`);
        });
    });

    it('a reload starts the daemon from the same environment, with no install', { skip: EDITOR_TESTS_SKIPPED }, async (t) => {
        await run.guarded(async () => {
            const before = marker();
            const oldPid = figures.firstDaemonPid as number;
            await run.reload();
            await poll('the old window\'s daemon gone', () => (daemonsFrom(envDir).includes(oldPid) ? undefined : true));
            await widenChat(run);
            await pickModel(run);
            const since = Date.now();
            await send(run, '@agent read src/app.py');
            await reply(run, /Read it: \d+ lines/);
            const reloaded = Date.now() - since;
            figures.afterReloadRequestMs = reloaded;
            // The old window's daemon may outlive the reload for a while (code-server keeps
            // its extension host for a reconnection): the new window's is the other one.
            const daemons = daemonsFrom(envDir).filter((pid) => pid !== oldPid);
            assert.equal(daemons.length, 1, 'a new daemon runs from the environment, started by the new window');
            assert.deepEqual(marker(), before, 'the environment was not made again');
            const output = run.outputChannel('hdcontext');
            assert.equal(output.match(/setting up the daemon: Installing/g)?.length, 1, 'one install, by the first window');
            assert.match(output, /using the daemon environment .*daemon-env/);
            assert.equal(await run.page.locator(TOAST, { hasText: 'setting up its daemon' }).count(), 0);
            t.diagnostic(`after the reload the request was answered in ${(reloaded / 1000).toFixed(1)} s, daemon pid ${daemons[0]} (was ${oldPid})`);
        });
    });

    it('a pythonPath naming a missing file: the clear error, and the request goes to the model unchanged', { skip: EDITOR_TESTS_SKIPPED }, async (t) => {
        await run.guarded(async () => {
            // The previous window's daemon: code-server may keep that window's extension
            // host (and so its daemon) alive for a while after the reload, waiting for it to
            // reconnect; what this test claims is that the new window starts none.
            const earlier = daemonsFrom(envDir);
            // Scope "machine": the remote's settings.json; a reload reads it.
            fs.writeFileSync(run.machineSettingsFile, JSON.stringify({ 'hdcontext.server.pythonPath': MISSING_PYTHON }, null, 2));
            await run.reload();
            await widenChat(run);
            await pickModel(run);
            const since = Date.now();
            await send(run, '@agent read src/app.py');
            const error = run.page.locator(TOAST, { hasText: 'which does not exist' }).first();
            await error.waitFor({ timeout: STEP_MS });
            const shown = (await error.innerText()).replace(/\s+/g, ' ');
            t.diagnostic(`error: ${JSON.stringify(shown)}`);
            assert.ok(shown.includes(`hdcontext.server.pythonPath is ${MISSING_PYTHON}, which does not exist`), shown);
            assert.match(shown, /Clear the setting/);
            assert.match(shown, /go to the model unchanged/);
            t.diagnostic(`screenshot: ${await run.shot('first-use-pythonpath-missing.png')}`);
            await reply(run, /Read it: \d+ lines/);
            const calls = callsSince(since);
            const sent = sentSince(since);
            assert.equal(calls.length, sent.length);
            calls.forEach((c, i) => {
                assert.equal(c.tokens, sent[i].tokens, `request ${i + 1}: what the agent sent, unchanged`);
                assert.equal((c.messages as Message[]).length, sent[i].messages);
            });
            const started = daemonsFrom(envDir).filter((pid) => !earlier.includes(pid));
            assert.deepEqual(started, [], 'no daemon: the setting wins');
            assert.equal(await run.page.locator(TOAST).filter({ hasText: 'went to' }).count(), 0, 'said once: no second warning per request');
            t.diagnostic(`requests unchanged: ${calls.map((c) => c.tokens).join(', ')} tokens`);
        });
    });

    it('the figures', { skip: EDITOR_TESTS_SKIPPED }, (t) => {
        const sizes = Object.fromEntries(
            [E2E_VSIX, ...['hdcontext.vsix', `hdcontext-${HOST_TARGET}.vsix`].map((f) => path.join(EXTENSION_ROOT, f))].filter((f) => fs.existsSync(f)).map((f) => [path.basename(f), fs.statSync(f).size]),
        );
        figures.packageBytes = sizes;
        t.diagnostic(`figures: ${JSON.stringify(figures)}`);
    });
});
