/**
 * A small stand-in for what `make vsix` puts in bundled/: a manifest and a hand-made hdcontext
 * wheel, so that the tests of the extension's own environment run real `python -m venv` and real
 * pip, offline and in seconds. The wheel's `python -m hdcontext serve` hands over to the real
 * daemon of the repository's venv, so that a daemon started from the environment answers.
 */

import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

import type { Bundle } from '../../src/envPlan';
import { VENV_PYTHON, tempDir } from './realDaemon';

const WHEEL_SCRIPT = `
import base64, hashlib, sys, zipfile
out, version, requires, real = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
dist = f"hdcontext-{version}.dist-info"
meta = f"Metadata-Version: 2.1\\nName: hdcontext\\nVersion: {version}\\n"
for r in filter(None, requires.split(",")):
    meta += f"Requires-Dist: {r}\\n"
files = {
    "hdcontext/__init__.py": "",
    "hdcontext/edges/__init__.py": "",
    "hdcontext/edges/lsp/__init__.py": "",
    "hdcontext/edges/lsp/server.py": "",
    # The real daemon, from the repository's venv: what the environment runs is this wheel's.
    "hdcontext/__main__.py": f"import os, sys\\nos.execv({real!r}, [{real!r}, '-m', 'hdcontext'] + sys.argv[1:])\\n",
    f"{dist}/METADATA": meta,
    f"{dist}/WHEEL": "Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
}
record = []
with zipfile.ZipFile(out, "w") as z:
    for name, text in files.items():
        data = text.encode()
        z.writestr(name, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{dist}/RECORD,,")
    z.writestr(f"{dist}/RECORD", "\\n".join(record) + "\\n")
`;

export interface FakeBundleOptions {
    version?: string;
    key?: string;
    /** null: a universal package (the index is asked for dependencies). */
    target?: string | null;
    /** Requires-Dist lines of the wheel (none by default, so it installs offline). */
    requires?: string[];
    /** The CPythons the package says it carries wheels for (default: the test venv's). */
    pythons?: string[];
    /** Whether it carries pip's wheel, as `make vsix` packages do (default: yes, the one the
     * test Python's ensurepip carries, when it carries one). */
    pip?: boolean;
}

/** pip's wheel as the test venv's Python carries it for ensurepip, or undefined. */
export function ensurepipWheel(): string | undefined {
    const found = execFileSync(
        VENV_PYTHON,
        ['-c', 'import ensurepip, pathlib\nprint(next(iter(sorted(pathlib.Path(ensurepip.__file__).parent.joinpath("_bundled").glob("pip-*-py3-none-any.whl"))), ""))'],
        { encoding: 'utf8' },
    ).trim();
    return found || undefined;
}

/** The version of the test venv's Python, "3.11". */
export function venvPythonMinor(): string {
    return execFileSync(VENV_PYTHON, ['-c', 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")'], { encoding: 'utf8' }).trim();
}

/** A bundled/ folder: manifest.json and wheels/ with the hand-made hdcontext wheel. */
export function fakeBundle(options: FakeBundleOptions = {}): { dir: string; bundle: Bundle } {
    const version = options.version ?? '0.0.1';
    const dir = tempDir('bundled');
    const wheels = path.join(dir, 'wheels');
    fs.mkdirSync(wheels);
    const wheel = `hdcontext-${version}-py3-none-any.whl`;
    execFileSync(VENV_PYTHON, ['-c', WHEEL_SCRIPT, path.join(wheels, wheel), version, (options.requires ?? []).join(','), VENV_PYTHON]);
    const bundle: Bundle = {
        hdcontext: version,
        wheel,
        target: options.target === undefined ? 'linux-x64' : options.target,
        pythons: options.pythons ?? (options.target === null ? [] : [venvPythonMinor()]),
        key: options.key ?? `test-${version}`,
        requires: options.requires ?? [],
        wheels: [{ file: wheel, bytes: fs.statSync(path.join(wheels, wheel)).size }],
    };
    const pipWheel = options.pip === false ? undefined : ensurepipWheel();
    if (pipWheel) {
        const file = path.basename(pipWheel);
        fs.copyFileSync(pipWheel, path.join(wheels, file));
        bundle.wheels.push({ file, bytes: fs.statSync(pipWheel).size });
        bundle.pip = file;
    }
    fs.writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify(bundle, null, 2));
    return { dir, bundle };
}

/** A folder holding a `python3` that runs the test venv's Python without site-packages: it cannot import hdcontext. */
export function binWithPython3WithoutHdcontext(): string {
    const dir = tempDir('bin');
    fs.writeFileSync(path.join(dir, 'python3'), `#!/bin/sh\nexec "${VENV_PYTHON}" -I -S "$@"\n`, { mode: 0o755 });
    return dir;
}

/**
 * A folder holding a `python3` that says it is Python 3.9: it answers the probe (`-I -c …`), and
 * the check of hdcontext (`-c …`) as a Python without the package does.
 */
export function binWithOldPython3(): string {
    const dir = tempDir('bin-old');
    const answer = JSON.stringify({ version: [3, 9, 2], executable: '/usr/bin/python3.9', venv: true, ensurepip: true });
    fs.writeFileSync(
        path.join(dir, 'python3'),
        `#!/bin/sh\nif [ "$1" = -I ]; then echo '${answer}'; exit 0; fi\necho "No module named 'hdcontext'"; exit 3\n`,
        { mode: 0o755 },
    );
    return dir;
}
