import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { checkHdcontext, chooseInterpreter, installCommand, problemMessage } from '../../src/interpreter';
import { VENV_PYTHON, pythonWithoutHdcontext } from '../helpers/realDaemon';

describe('chooseInterpreter', () => {
    it('the setting first', () => assert.deepEqual(chooseInterpreter('/opt/py/bin/python', '/ext/python'), { path: '/opt/py/bin/python', source: 'setting' }));
    it('then the Python extension', () => assert.deepEqual(chooseInterpreter('  ', '/ext/python'), { path: '/ext/python', source: 'python-extension' }));
    it('then python3', () => assert.deepEqual(chooseInterpreter(undefined, undefined), { path: 'python3', source: 'default' }));
    it('expands ~', () => {
        const home = process.env.HOME as string;
        assert.equal(chooseInterpreter('~/venv/bin/python', undefined).path, `${home}/venv/bin/python`);
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
