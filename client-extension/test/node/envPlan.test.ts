import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import {
    chooseBasePython,
    classifyPipFailure,
    currentMarker,
    downloadBytes,
    envKey,
    installPlan,
    parseBundle,
    parseProbe,
    pythonCandidates,
    venvPython,
    versionAtLeast,
    vscodeTarget,
    wheelFitsPython,
    type Bundle,
    type PythonFound,
} from '../../src/envPlan';
import { cancelledMessage, installFailedMessage, noPythonMessage, unreachableMessage } from '../../src/envMessages';

const WHEELS = [
    'hdcontext-0.1.0-py3-none-any.whl',
    'pydantic-2.14.4-py3-none-any.whl',
    'pydantic_core-2.50.5-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.whl',
    'pydantic_core-2.50.5-cp312-cp312-manylinux2014_x86_64.manylinux_2_17_x86_64.whl',
    'watchfiles-1.3.0-cp310-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl',
];

function bundle(over: Partial<Bundle> = {}): Bundle {
    return {
        hdcontext: '0.1.0',
        wheel: 'hdcontext-0.1.0-py3-none-any.whl',
        target: 'linux-x64',
        pythons: ['3.11', '3.12'],
        key: 'abc',
        requires: ['pydantic<3,>=2.7', 'tiktoken>=0.7'],
        wheels: WHEELS.map((file, i) => ({ file, bytes: (i + 1) * 1_000_000 })),
        ...over,
    };
}

function python(minor: number, over: Partial<PythonFound> = {}): PythonFound {
    return { command: 'python3', source: 'path', version: [3, minor, 4], executable: `/usr/bin/python3.${minor}`, canVenv: true, ...over };
}

describe('parseBundle: bundled/manifest.json', () => {
    it('reads what bundle-daemon.mjs writes', () => {
        const b = bundle();
        assert.deepEqual(parseBundle(JSON.stringify(b)), b);
    });
    it('a universal package: target null, no Pythons', () => {
        const b = parseBundle(JSON.stringify(bundle({ target: null, pythons: [], wheels: [{ file: 'hdcontext-0.1.0-py3-none-any.whl', bytes: 5 }] })));
        assert.equal(b.target, null);
    });
    it('says what is wrong', () => {
        assert.throws(() => parseBundle('{'), /not JSON/);
        assert.throws(() => parseBundle(JSON.stringify({ ...bundle(), wheel: '' })), /"wheel" must be a non-empty string/);
        assert.throws(() => parseBundle(JSON.stringify({ ...bundle(), pythons: ['eleven'] })), /"pythons"/);
        assert.throws(() => parseBundle(JSON.stringify({ ...bundle(), wheel: 'hdcontext-9-py3-none-any.whl' })), /is not among "wheels"/);
    });
});

describe('the marker: an environment is reused only by the package that made it', () => {
    const key = envKey(bundle(), '0.1.0');
    const marker = JSON.stringify({ key, hdcontext: '0.1.0', python: '/usr/bin/python3', pythonVersion: '3.11.4', offline: true, createdAt: 'now' });
    it('the same extension version and build: reused', () => assert.equal(currentMarker(marker, key)?.pythonVersion, '3.11.4'));
    it('a new extension version: not reused', () => assert.equal(currentMarker(marker, envKey(bundle(), '0.2.0')), undefined));
    it('the same version, other wheels (a rebuild, or the universal package): not reused', () =>
        assert.equal(currentMarker(marker, envKey(bundle({ key: 'def' }), '0.1.0')), undefined));
    it('no marker (an install that did not finish), or garbage: not reused', () => {
        assert.equal(currentMarker(undefined, key), undefined);
        assert.equal(currentMarker('{"key": ', key), undefined);
    });
});

describe('which Python makes the environment', () => {
    it("the Python extension's interpreter first, then python3, then versioned names", () => {
        assert.deepEqual(
            pythonCandidates('/ws/.venv/bin/python', 'linux').map((c) => `${c.command}:${c.source}`),
            ['/ws/.venv/bin/python:python-extension', 'python3:path', 'python3.14:path', 'python3.13:path', 'python3.12:path', 'python3.11:path'],
        );
        assert.deepEqual(
            pythonCandidates(undefined, 'win32').map((c) => c.command),
            ['python', 'python3'],
        );
    });
    it('parses the probe', () => {
        const found = parseProbe({ command: 'python3', source: 'path' }, 'noise\n{"version": [3, 12, 1], "executable": "/usr/bin/python3.12", "venv": true, "ensurepip": false}\n');
        assert.deepEqual(found, { command: 'python3', source: 'path', version: [3, 12, 1], executable: '/usr/bin/python3.12', canVenv: false });
        assert.equal(parseProbe({ command: 'x', source: 'path' }, 'Python 2.7'), undefined);
    });
    it('versions: 3.11 and later', () => {
        assert.ok(versionAtLeast([3, 11, 0]));
        assert.ok(versionAtLeast([3, 14, 0]));
        assert.ok(versionAtLeast([4, 0, 0]));
        assert.ok(!versionAtLeast([3, 10, 12]));
        assert.ok(!versionAtLeast([2, 7, 18]));
    });
    it('the first 3.11+ that can make a venv', () => {
        const choice = chooseBasePython([python(10), undefined, python(11, { canVenv: false }), python(12), python(13)]);
        assert.ok(choice.ok);
        assert.equal(choice.ok && choice.python.version[1], 12);
    });
    it('none at all, only old ones, or 3.11+ without venv: each its reason and its advice', () => {
        const none = chooseBasePython([undefined, undefined]);
        assert.deepEqual(none, { ok: false, reason: 'none', found: [] });
        assert.match(noPythonMessage(none as never, 'linux'), /needs Python 3\.11 or later and found no Python/);
        const old = chooseBasePython([python(9)]);
        assert.equal(!old.ok && old.reason, 'too-old');
        const oldMsg = noPythonMessage(old as never, 'darwin');
        assert.match(oldMsg, /python3 is Python 3\.9\.4 \(\/usr\/bin\/python3\.9\)/);
        assert.match(oldMsg, /brew install python@3\.13/);
        assert.match(oldMsg, /Reinstall Daemon/);
        const noVenv = chooseBasePython([python(11, { canVenv: false })]);
        assert.equal(!noVenv.ok && noVenv.reason, 'no-venv');
        assert.match(noPythonMessage(noVenv as never, 'linux'), /sudo apt install python3\.11-venv/);
    });
});

describe('wheelFitsPython', () => {
    it('py3 fits any; cp3X only 3.X; abi3 from its version on', () => {
        assert.ok(wheelFitsPython(WHEELS[1], 13));
        assert.ok(wheelFitsPython(WHEELS[2], 11));
        assert.ok(!wheelFitsPython(WHEELS[2], 12));
        assert.ok(wheelFitsPython(WHEELS[4], 11));
        assert.ok(wheelFitsPython(WHEELS[4], 14));
        assert.ok(!wheelFitsPython('x-1-cp312-abi3-any.whl', 11));
        assert.ok(!wheelFitsPython('garbage.whl', 11));
    });
});

describe('installPlan', () => {
    const input = { bundleDir: '/ext/bundled', envDir: '/home/u/.config/Code/User/globalStorage/hdcontext.hdcontext/daemon-env', platform: 'linux' as const };

    it('a platform package and a Python it carries wheels for: no index, no user configuration, what this Python takes', () => {
        const plan = installPlan({ ...input, bundle: bundle(), python: python(11) });
        assert.equal(plan.offline, true);
        assert.deepEqual(plan.steps[0], {
            label: 'making the virtual environment',
            command: '/usr/bin/python3.11',
            args: ['-I', '-m', 'venv', input.envDir],
        });
        const pip = plan.steps[1];
        assert.equal(pip.command, `${input.envDir}/bin/python`);
        assert.deepEqual(pip.args.slice(0, 5), ['-m', 'pip', 'install', '--isolated', '--no-index']);
        assert.deepEqual(pip.args.slice(-3), ['--find-links', '/ext/bundled/wheels', '/ext/bundled/wheels/hdcontext-0.1.0-py3-none-any.whl']);
        // hdcontext, pydantic, pydantic_core for 3.11, watchfiles (abi3): 1+2+3+5 MB.
        assert.equal(plan.bundledWheels, 4);
        assert.equal(plan.bundledBytes, 11_000_000);
        assert.match(plan.summary, /^Installing hdcontext 0\.1\.0 and the 3 packages it needs \(11\.0 MB of wheels that came with the extension, no download\) into \/home\/u\/.*daemon-env, with Python 3\.11\.4 \(\/usr\/bin\/python3\.11\)\.$/);
    });

    it('a package that carries pip\'s wheel: the environment made without pip, pip run from its wheel, not counted among what is installed', () => {
        const PIP = 'pip-25.3-py3-none-any.whl';
        const b = bundle({ wheels: [...bundle().wheels, { file: PIP, bytes: 1_800_000 }], pip: PIP });
        assert.deepEqual(parseBundle(JSON.stringify(b)), b);
        const plan = installPlan({ ...input, bundle: b, python: python(11) });
        assert.deepEqual(plan.steps[0].args, ['-I', '-m', 'venv', '--without-pip', input.envDir]);
        const pip = plan.steps[1];
        assert.equal(pip.command, `${input.envDir}/bin/python`);
        assert.deepEqual(pip.args.slice(0, 5), ['-I', `/ext/bundled/wheels/${PIP}/pip`, 'install', '--isolated', '--no-index']);
        assert.equal(plan.bundledWheels, 4);
        assert.equal(plan.bundledBytes, 11_000_000);
        const universal = installPlan({ ...input, bundle: { ...b, target: null, pythons: [] }, python: python(12) });
        assert.deepEqual(universal.steps[1].args.slice(0, 3), ['-I', `/ext/bundled/wheels/${PIP}/pip`, 'install']);
        assert.equal(universal.bundledWheels, 1);
        assert.throws(() => parseBundle(JSON.stringify({ ...b, pip: 'pip-25.3-py3-none-any.whl.gz' })), /"pip" must name pip's/);
        assert.throws(() => parseBundle(JSON.stringify({ ...b, wheels: bundle().wheels })), /"pip" must name pip's/);
    });

    it('the universal package: the index of pip\'s own configuration, the bundled hdcontext wheel', () => {
        const b = bundle({ target: null, pythons: [] });
        const plan = installPlan({ ...input, bundle: b, python: python(12), displayPath: (p) => p.replace('/home/u', '~') });
        assert.equal(plan.offline, false);
        const pip = plan.steps[1].args;
        assert.ok(!pip.includes('--no-index') && !pip.includes('--isolated'), pip.join(' '));
        assert.equal(plan.bundledWheels, 1);
        assert.match(plan.summary, /Installing hdcontext 0\.1\.0 \(1\.0 MB, bundled\) and the packages it needs \(pydantic, tiktoken, and theirs\), downloaded from your package index, into ~\/\.config\/.*daemon-env/);
    });

    it('a platform package and a Python it has no wheels for (3.15): the index, the bundled wheels still found', () => {
        const plan = installPlan({ ...input, bundle: bundle(), python: python(15) });
        assert.equal(plan.offline, false);
        assert.ok(plan.steps[1].args.includes('--find-links'));
        assert.ok(!plan.steps[1].args.includes('--no-index'));
    });

    it('Windows: Scripts\\python.exe', () => {
        assert.equal(venvPython('C:\\env', 'win32'), 'C:\\env\\Scripts\\python.exe');
        assert.equal(venvPython('/env', 'linux'), '/env/bin/python');
    });
});

describe("pip's log", () => {
    const noIndex = [
        'Processing ./wheels/hdcontext-0.1.0-py3-none-any.whl',
        "WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after connection broken by 'NewConnectionError(...: Failed to establish a new connection: [Errno -2] Name or service not known')': /simple/pydantic/",
        'ERROR: Could not find a version that satisfies the requirement pydantic<3,>=2.7 (from hdcontext) (from versions: none)',
        'ERROR: No matching distribution found for pydantic<3,>=2.7',
    ].join('\n');

    it('no index reachable: unreachable, naming the dependency', () => {
        const f = classifyPipFailure(noIndex, false);
        assert.equal(f.kind, 'unreachable');
        assert.equal(f.kind === 'unreachable' && f.missing, 'pydantic<3,>=2.7');
        const msg = unreachableMessage(f as never, bundle({ target: null, pythons: [] }), python(11), 'linux-x64');
        assert.match(msg, /could not get pydantic<3,>=2\.7 \(a dependency of hdcontext\) from your package index/);
        assert.match(msg, /hdcontext-linux-x64\.vsix/);
        assert.match(msg, /make vsix TARGET=linux-x64/);
        assert.match(msg, /pip said: .*No matching distribution found for pydantic/);
    });

    it('a platform package whose wheels are for other Pythons says which Pythons they are for', () => {
        const msg = unreachableMessage(classifyPipFailure(noIndex, false) as never, bundle(), python(15), 'linux-x64');
        assert.match(msg, /are for CPython 3\.11, 3\.12, not Python 3\.15\.4/);
    });

    it('offline, a failure is never the network: the last lines of the log', () => {
        const f = classifyPipFailure(noIndex, true);
        assert.equal(f.kind, 'other');
        const msg = installFailedMessage('installing the bundled wheels', 'exit status 1', f.detail);
        assert.match(msg, /installing the bundled wheels failed \(exit status 1\)\. The last lines: .*No matching distribution found for pydantic<3,>=2\.7 The whole log/);
    });

    it('another failure: other', () => {
        assert.equal(classifyPipFailure('ERROR: Could not install packages due to an OSError: [Errno 28] No space left on device', false).kind, 'other');
    });

    it('counts what pip downloads', () => {
        assert.equal(downloadBytes('  Downloading pydantic_core-2.50.5-cp311-cp311-manylinux_2_17_x86_64.whl (2.3 MB)'), 2_300_000);
        assert.equal(downloadBytes('Downloading idna-3.20-py3-none-any.whl (69 kB)'), 69_000);
        assert.equal(downloadBytes('Collecting idna'), undefined);
    });

    it('the package for this machine', () => {
        assert.equal(vscodeTarget('linux', 'x64'), 'linux-x64');
        assert.equal(vscodeTarget('linux', 'arm64', true), 'alpine-arm64');
        assert.equal(vscodeTarget('darwin', 'arm64'), 'darwin-arm64');
    });

    it('cancelled: how to start again', () => assert.match(cancelledMessage(), /Reinstall Daemon/));
});
