/**
 * The installer with real processes: `python -m venv` and pip from the test venv's Python, the
 * hand-made wheel of fakeBundle.ts (offline, seconds), the lock between two "windows".
 */

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';

import { Cancelled, StepFailed, probePython, readMarker, runPlan, withLock, writeMarker } from '../../src/envInstaller';
import { currentMarker, installPlan, venvPython, type PythonFound } from '../../src/envPlan';
import { checkHdcontext } from '../../src/interpreter';
import { fakeBundle } from '../helpers/fakeBundle';
import { VENV_PYTHON, tempDir } from '../helpers/realDaemon';

async function basePython(): Promise<PythonFound> {
    const found = await probePython({ command: VENV_PYTHON, source: 'path' });
    assert.ok(found, 'the test venv Python answers the probe');
    return found;
}

// The suite's time limit guards against a hang, it measures nothing: real venvs and pip installs
// took over 120 s together on two cores shared with other work.
describe('envInstaller, for real', { timeout: 600000 }, () => {
    it('probes a Python: version, executable, whether it can make a venv; nothing for a missing one', async () => {
        const found = await basePython();
        assert.equal(found.version[0], 3);
        assert.ok(found.version[1] >= 11);
        assert.ok(fs.existsSync(found.executable));
        assert.equal(found.canVenv, true);
        assert.equal(await probePython({ command: '/nonexistent/python3', source: 'path' }), undefined);
        assert.equal(await probePython({ command: '/bin/true', source: 'path' }), undefined, 'runs, but is no Python');
    });

    it('runs a plan offline over what was there: a venv that imports hdcontext, every line of pip handed on; the marker reads back', async () => {
        const { dir, bundle } = fakeBundle();
        const envDir = path.join(tempDir('storage'), 'daemon-env');
        fs.mkdirSync(envDir, { recursive: true });
        fs.writeFileSync(path.join(envDir, 'left-over'), 'x');
        const plan = installPlan({ bundle, bundleDir: dir, envDir, python: await basePython(), platform: process.platform });
        assert.equal(plan.offline, true);
        const lines: string[] = [];
        const steps: string[] = [];
        await runPlan(plan, envDir, { line: (l) => lines.push(l), step: (s, i, n) => steps.push(`${i + 1}/${n} ${s.label}`) });
        assert.deepEqual(steps, ['1/2 making the virtual environment', '2/2 installing the bundled wheels']);
        assert.ok(!fs.existsSync(path.join(envDir, 'left-over')), 'made afresh');
        assert.ok(lines.some((l) => /Successfully installed hdcontext-0\.0\.1/.test(l)), lines.join('\n'));
        assert.ok(lines.some((l) => l.startsWith('$ ') && l.includes('--no-index')), 'the commands are logged');
        const check = await checkHdcontext(venvPython(envDir, process.platform));
        assert.deepEqual(check, { ok: true, version: '0.0.1' });
        assert.equal(readMarker(envDir), undefined, 'no marker until the caller writes it');
        writeMarker(envDir, { key: 'k', hdcontext: '0.0.1', python: VENV_PYTHON, pythonVersion: '3.11.7', offline: true, createdAt: 'now' });
        assert.equal(currentMarker(readMarker(envDir), 'k')?.hdcontext, '0.0.1');
        assert.equal(fs.statSync(path.join(envDir, 'hdcontext-env.json')).mode & 0o777, 0o600);
    });

    it('a failing step: StepFailed with its output, and no half-made environment left', async () => {
        // The wheel needs a package no bundled wheel provides: pip, offline, cannot find it.
        const { dir, bundle } = fakeBundle({ requires: ['hdcontext-test-missing-dependency>=1'] });
        const envDir = path.join(tempDir('storage'), 'daemon-env');
        const plan = installPlan({ bundle, bundleDir: dir, envDir, python: await basePython(), platform: process.platform });
        const err = await runPlan(plan, envDir, { line: () => undefined, step: () => undefined }).then(
            () => assert.fail('the install succeeded'),
            (e: unknown) => e,
        );
        assert.ok(err instanceof StepFailed, String(err));
        assert.equal(err.step.label, 'installing the bundled wheels');
        assert.equal(err.exit, 'exit status 1');
        assert.match(err.log, /No matching distribution found for hdcontext-test-missing-dependency/);
        assert.ok(!fs.existsSync(envDir));
    });

    it('cancelled: the process is stopped, Cancelled, nothing left', async () => {
        const { dir, bundle } = fakeBundle();
        const envDir = path.join(tempDir('storage'), 'daemon-env');
        const plan = installPlan({ bundle, bundleDir: dir, envDir, python: await basePython(), platform: process.platform });
        const abort = new AbortController();
        const started = Date.now();
        const run = runPlan(plan, envDir, { line: () => undefined, step: () => setTimeout(() => abort.abort(), 300) }, abort.signal);
        await assert.rejects(run, (e: unknown) => e instanceof Cancelled);
        assert.ok(Date.now() - started < 5000, 'stopped, not run to its end');
        assert.ok(!fs.existsSync(envDir));
    });

    it('the lock: a second window waits for the first; a lock left by a dead process is taken over', async () => {
        const lock = path.join(tempDir('storage'), 'daemon-env.lock');
        const order: string[] = [];
        let waited = 0;
        const first = withLock(lock, async () => {
            order.push('first in');
            await new Promise((r) => setTimeout(r, 700));
            order.push('first out');
        });
        await new Promise((r) => setTimeout(r, 50));
        const second = withLock(
            lock,
            async () => {
                order.push('second in');
            },
            () => waited++,
        );
        await Promise.all([first, second]);
        assert.deepEqual(order, ['first in', 'first out', 'second in']);
        assert.equal(waited, 1);
        assert.ok(!fs.existsSync(lock), 'released');

        // A window that died while installing: its pid is gone.
        const dead = Number(execFileSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }));
        fs.mkdirSync(lock);
        fs.writeFileSync(path.join(lock, 'owner.json'), JSON.stringify({ pid: dead, at: Date.now() }));
        const started = Date.now();
        assert.equal(await withLock(lock, async () => 'taken'), 'taken');
        assert.ok(Date.now() - started < 1000);
    });
});
