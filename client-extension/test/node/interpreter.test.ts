import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { checkHdcontext, discover, installCommand, problemMessage } from '../../src/interpreter';
import { VENV_PYTHON, pythonWithoutHdcontext } from '../helpers/realDaemon';

describe('discover: which interpreters are tried, and whether the own environment comes after', () => {
    it('the setting alone, no fallback: its problem is for the user to fix', () =>
        assert.deepEqual(discover('/opt/py/bin/python', '/ext/python'), { candidates: [{ path: '/opt/py/bin/python', source: 'setting' }], managedFallback: false }));
    it('no setting: the Python extension, then python3, then the own environment', () =>
        assert.deepEqual(discover('  ', '/ext/python'), {
            candidates: [
                { path: '/ext/python', source: 'python-extension' },
                { path: 'python3', source: 'default' },
            ],
            managedFallback: true,
        }));
    it('no Python extension: python3, then the own environment', () =>
        assert.deepEqual(discover(undefined, undefined), { candidates: [{ path: 'python3', source: 'default' }], managedFallback: true }));
    it('python3 is not tried twice', () => assert.deepEqual(discover('', 'python3').candidates, [{ path: 'python3', source: 'python-extension' }]));
    it('expands ~ in the setting', () => {
        const home = process.env.HOME as string;
        assert.equal(discover('~/venv/bin/python', undefined).candidates[0].path, `${home}/venv/bin/python`);
    });
});

describe('checkHdcontext', () => {
    it('the repository venv has hdcontext', async () => {
        const r = await checkHdcontext(VENV_PYTHON);
        assert.ok(r.ok, JSON.stringify(r));
        assert.match(r.version, /^\d+\.\d+/);
    });

    it('a Python without the package: missing-package, and a message with the fix', async () => {
        const py = pythonWithoutHdcontext();
        const r = await checkHdcontext(py);
        assert.equal(r.ok, false);
        assert.equal(!r.ok && r.kind, 'missing-package');
        assert.match(!r.ok ? r.detail : '', /hdcontext/);
        const msg = problemMessage({ path: py, source: 'setting' }, r) as string;
        assert.match(msg, /cannot import hdcontext/);
        assert.ok(msg.includes(`${py} -m pip install hdcontext`), msg);
        assert.match(msg, /hdcontext\.server\.pythonPath/);
    });

    it('an interpreter that does not exist: not-found', async () => {
        const r = await checkHdcontext('/nonexistent/bin/python3');
        assert.equal(!r.ok && r.kind, 'not-found');
        const msg = problemMessage({ path: '/nonexistent/bin/python3', source: 'default' }, r) as string;
        assert.match(msg, /was not found/);
    });

    it('a pythonPath setting that names no file: says so, and that clearing it lets hdcontext use its own environment', async () => {
        const r = await checkHdcontext('/nonexistent/bin/python3');
        const msg = problemMessage({ path: '/nonexistent/bin/python3', source: 'setting' }, r) as string;
        assert.match(msg, /hdcontext\.server\.pythonPath is \/nonexistent\/bin\/python3, which does not exist/);
        assert.match(msg, /Clear the setting/);
    });

    it('an interpreter that fails otherwise', async () => {
        const r = await checkHdcontext('/bin/false');
        assert.equal(!r.ok && r.kind, 'failed');
    });

    it('no message when it can run', () => assert.equal(problemMessage({ path: 'x', source: 'default' }, { ok: true, version: '1' }), null));

    it('installCommand quotes paths with spaces', () => {
        assert.equal(installCommand('/usr/bin/python3'), '/usr/bin/python3 -m pip install hdcontext');
        assert.equal(installCommand('/My Env/bin/python'), `'/My Env/bin/python' -m pip install hdcontext`);
    });
});
