/**
 * The daemon's own environment, as decisions: what the package carries (bundled/manifest.json,
 * written by scripts/bundle-daemon.mjs), whether an environment made earlier is still the one
 * this package would make, which Python to make it with (3.11 or later, with venv), the commands
 * that make it, and what pip's log says when they fail. No `vscode`, no I/O: Node tests run it.
 *
 * The environment lives in the extension's global storage, so every window of the profile
 * shares it; its marker file (written last) says which package made it.
 */

import * as path from 'node:path';

/** hdcontext's requires-python. */
export const MIN_PYTHON: readonly [number, number] = [3, 11];
/** The folder of the environment, inside the extension's global storage. */
export const ENV_DIR_NAME = 'daemon-env';
/** Written into the environment once it is complete: the package it belongs to. */
export const MARKER_NAME = 'hdcontext-env.json';

export interface BundledWheel {
    file: string;
    bytes: number;
}

/** bundled/manifest.json: what this package carries. */
export interface Bundle {
    /** The hdcontext version of the wheel. */
    hdcontext: string;
    /** The hdcontext wheel's file name, in bundled/wheels/. */
    wheel: string;
    /** The `vsce package --target` it was built for, or null for the universal package. */
    target: string | null;
    /** The CPython versions ("3.11"…) whose dependency wheels it carries (none when universal). */
    pythons: string[];
    /** Names this build's wheels: a different key is a different environment. */
    key: string;
    /** The hdcontext wheel's dependencies (Requires-Dist), as pip reads them. */
    requires: string[];
    wheels: BundledWheel[];
    /**
     * pip's own wheel among `wheels`, when the package carries one: the environment is then made
     * without pip (`venv --without-pip`) and pip runs from its wheel, which saves ensurepip
     * installing and compiling a pip the daemon never uses (8 of an install's 18 s here).
     */
    pip?: string;
}

/** Parses manifest.json; throws an Error that names what is wrong. */
export function parseBundle(text: string): Bundle {
    let raw: unknown;
    try {
        raw = JSON.parse(text);
    } catch (err) {
        throw new Error(`manifest.json is not JSON (${err instanceof Error ? err.message : String(err)})`);
    }
    const m = raw as Partial<Record<keyof Bundle, unknown>>;
    const str = (k: keyof Bundle): string => {
        if (typeof m[k] !== 'string' || !m[k]) {
            throw new Error(`manifest.json: "${k}" must be a non-empty string`);
        }
        return m[k] as string;
    };
    if (typeof raw !== 'object' || raw === null) {
        throw new Error('manifest.json is not an object');
    }
    const target = m.target === null || m.target === undefined ? null : str('target');
    const pythons = Array.isArray(m.pythons) && m.pythons.every((p) => typeof p === 'string' && /^3\.\d+$/.test(p)) ? (m.pythons as string[]) : null;
    if (pythons === null) {
        throw new Error('manifest.json: "pythons" must list versions such as "3.11"');
    }
    const wheels = Array.isArray(m.wheels) ? m.wheels : null;
    if (wheels === null || !wheels.every((w) => typeof w?.file === 'string' && w.file.endsWith('.whl') && Number.isFinite(w?.bytes))) {
        throw new Error('manifest.json: "wheels" must list {file, bytes}');
    }
    const requires = Array.isArray(m.requires) ? m.requires.filter((r): r is string => typeof r === 'string') : [];
    const bundle: Bundle = { hdcontext: str('hdcontext'), wheel: str('wheel'), target, pythons, key: str('key'), requires, wheels: wheels as BundledWheel[] };
    if (!bundle.wheels.some((w) => w.file === bundle.wheel)) {
        throw new Error(`manifest.json: the hdcontext wheel ${bundle.wheel} is not among "wheels"`);
    }
    if (m.pip !== undefined && m.pip !== null) {
        const pip = str('pip');
        if (!/^pip-[^-]+-py3-none-any\.whl$/.test(pip) || !bundle.wheels.some((w) => w.file === pip)) {
            throw new Error(`manifest.json: "pip" must name pip's py3-none-any wheel among "wheels" (${pip})`);
        }
        bundle.pip = pip;
    }
    return bundle;
}

/** What an environment must have been made from to be used: this extension version and build. */
export function envKey(bundle: Bundle, extensionVersion: string): string {
    return `${extensionVersion}+${bundle.key}`;
}

/** The marker file's content. */
export interface EnvMarker {
    key: string;
    hdcontext: string;
    /** The Python it was made with, and its version. */
    python: string;
    pythonVersion: string;
    /** Whether every package came from the bundled wheels. */
    offline: boolean;
    createdAt: string;
}

/** The marker, if `text` is one written for `key`. */
export function currentMarker(text: string | undefined, key: string): EnvMarker | undefined {
    if (text === undefined) {
        return undefined;
    }
    try {
        const m = JSON.parse(text) as Partial<EnvMarker>;
        return m && typeof m === 'object' && m.key === key && typeof m.python === 'string' ? (m as EnvMarker) : undefined;
    } catch {
        return undefined;
    }
}

/** The environment's interpreter. */
export function venvPython(envDir: string, platform: NodeJS.Platform): string {
    return platform === 'win32' ? path.win32.join(envDir, 'Scripts', 'python.exe') : path.posix.join(envDir, 'bin', 'python');
}

export type PythonSource = 'python-extension' | 'path';

export interface PythonCandidate {
    command: string;
    source: PythonSource;
}

/**
 * The Pythons to make the environment with, in order: the Python extension's interpreter, then
 * `python3` on PATH, then the versioned names a system may have beside an older python3.
 */
export function pythonCandidates(pythonExtension: string | undefined, platform: NodeJS.Platform): PythonCandidate[] {
    const out: PythonCandidate[] = [];
    const ext = pythonExtension?.trim();
    if (ext) {
        out.push({ command: ext, source: 'python-extension' });
    }
    const names = platform === 'win32' ? ['python', 'python3'] : ['python3', 'python3.14', 'python3.13', 'python3.12', 'python3.11'];
    for (const name of names) {
        if (!out.some((c) => c.command === name)) {
            out.push({ command: name, source: 'path' });
        }
    }
    return out;
}

/** Run with `python -I -c`: prints what choosing a Python needs, as one JSON line. */
export const PROBE_SCRIPT = [
    'import json, sys',
    'def has(name):',
    '    try:',
    '        __import__(name)',
    '        return True',
    '    except Exception:',
    '        return False',
    'print(json.dumps({"version": list(sys.version_info[:3]), "executable": sys.executable, "venv": has("venv"), "ensurepip": has("ensurepip")}))',
].join('\n');

export interface PythonFound {
    command: string;
    source: PythonSource;
    version: [number, number, number];
    /** sys.executable: the file that ran. */
    executable: string;
    /** `python -m venv` can make an environment with pip in it (Debian splits that out: python3.X-venv). */
    canVenv: boolean;
}

/** The probe's output, or undefined when it is not what PROBE_SCRIPT prints. */
export function parseProbe(candidate: PythonCandidate, stdout: string): PythonFound | undefined {
    const line = stdout.trim().split('\n').pop() ?? '';
    try {
        const p = JSON.parse(line) as { version?: unknown; executable?: unknown; venv?: unknown; ensurepip?: unknown };
        const v = p.version;
        if (!Array.isArray(v) || v.length !== 3 || !v.every((n) => Number.isInteger(n))) {
            return undefined;
        }
        return {
            command: candidate.command,
            source: candidate.source,
            version: v as [number, number, number],
            executable: typeof p.executable === 'string' && p.executable ? p.executable : candidate.command,
            canVenv: p.venv === true && p.ensurepip === true,
        };
    } catch {
        return undefined;
    }
}

export function versionAtLeast(version: readonly number[], min: readonly number[] = MIN_PYTHON): boolean {
    for (let i = 0; i < min.length; i++) {
        const a = version[i] ?? 0;
        if (a !== min[i]) {
            return a > min[i];
        }
    }
    return true;
}

export function versionText(version: readonly number[]): string {
    return version.join('.');
}

export type BaseChoice =
    | { ok: true; python: PythonFound }
    /** none: no Python at all; too-old: only older than 3.11; no-venv: 3.11+ without venv/ensurepip. */
    | { ok: false; reason: 'none' | 'too-old' | 'no-venv'; found: PythonFound[] };

/** The first Python, in candidate order, that is 3.11+ and can make an environment. */
export function chooseBasePython(found: readonly (PythonFound | undefined)[]): BaseChoice {
    const pythons = found.filter((p): p is PythonFound => p !== undefined);
    const fit = pythons.find((p) => versionAtLeast(p.version) && p.canVenv);
    if (fit) {
        return { ok: true, python: fit };
    }
    if (pythons.length === 0) {
        return { ok: false, reason: 'none', found: [] };
    }
    const reason = pythons.some((p) => versionAtLeast(p.version)) ? 'no-venv' : 'too-old';
    return { ok: false, reason, found: pythons };
}

/** Whether a wheel's tags admit CPython 3.`minor` (the platform part is the package's own). */
export function wheelFitsPython(file: string, minor: number): boolean {
    const parts = file.replace(/\.whl$/, '').split('-');
    if (parts.length < 5) {
        return false;
    }
    const [pyTags, abiTags] = [parts[parts.length - 3].split('.'), parts[parts.length - 2].split('.')];
    return pyTags.some((tag) => {
        if (tag === 'py3' || tag === `py3${minor}`) {
            return true;
        }
        const m = /^cp3(\d+)$/.exec(tag);
        if (!m) {
            return false;
        }
        const wheelMinor = Number(m[1]);
        return wheelMinor === minor || (abiTags.includes('abi3') && wheelMinor <= minor);
    });
}

export interface InstallStep {
    /** What the progress notification says while it runs. */
    label: string;
    command: string;
    args: string[];
}

export interface InstallPlan {
    /** Every package from the bundled wheels, no index. */
    offline: boolean;
    steps: InstallStep[];
    /** The wheels this Python takes from the package (all of them when offline). */
    bundledWheels: number;
    bundledBytes: number;
    /** One sentence: what is installed, where, with which Python, from where, how big. */
    summary: string;
}

export interface PlanInput {
    bundle: Bundle;
    /** The folder that holds manifest.json and wheels/. */
    bundleDir: string;
    envDir: string;
    python: PythonFound;
    platform: NodeJS.Platform;
    /** How to show the folder to the user (the home folder as ~). */
    displayPath?: (p: string) => string;
}

/**
 * Make the environment with the chosen Python, then pip-install the bundled hdcontext wheel:
 * from the bundled wheels alone (`--no-index`) when the package carries them for this Python,
 * else from the package index of pip's own configuration, the bundled wheels still preferred.
 */
export function installPlan(input: PlanInput): InstallPlan {
    const { bundle, bundleDir, envDir, python, platform } = input;
    const show = input.displayPath ?? ((p: string) => p);
    const minor = python.version[1];
    const wheelsDir = path.join(bundleDir, 'wheels');
    const covered = bundle.target !== null && bundle.pythons.includes(`${python.version[0]}.${minor}`);
    // pip's wheel runs the install; it is not installed, so it is not among what is said to be.
    const fitting = (covered ? bundle.wheels.filter((w) => wheelFitsPython(w.file, minor)) : bundle.wheels.filter((w) => w.file === bundle.wheel)).filter(
        (w) => w.file !== bundle.pip,
    );
    const bytes = fitting.reduce((n, w) => n + w.bytes, 0);
    // `python pip-….whl/pip` is how pip runs from its wheel (pip's __main__ supports it).
    const runPip = bundle.pip ? ['-I', path.join(wheelsDir, bundle.pip, 'pip')] : ['-m', 'pip'];
    const pip = [
        ...runPip, 'install',
        // Offline, the user's pip configuration has nothing to add and could only get in the way
        // (`user = true`, a constraint file); online it is how pip finds the user's index.
        ...(covered ? ['--isolated', '--no-index'] : ['--retries', '2']),
        '--disable-pip-version-check', '--no-input', '--progress-bar', 'off', '--no-warn-script-location',
        '--find-links', wheelsDir,
        path.join(wheelsDir, bundle.wheel),
    ];
    const what = `hdcontext ${bundle.hdcontext}`;
    const where = `into ${show(envDir)}, with Python ${versionText(python.version)} (${show(python.executable)})`;
    const summary = covered
        ? `Installing ${what} and the ${fitting.length - 1} packages it needs (${formatBytes(bytes)} of wheels that came with the extension, no download) ${where}.`
        : `Installing ${what} (${formatBytes(bytes)}, bundled) and the packages it needs${needs(bundle)}, downloaded from your package index, ${where}.`;
    return {
        offline: covered,
        bundledWheels: fitting.length,
        bundledBytes: bytes,
        summary,
        steps: [
            // -I: no user site-packages or PYTHON* variables in the way of the new environment.
            {
                label: 'making the virtual environment',
                command: python.executable,
                args: ['-I', '-m', 'venv', ...(bundle.pip ? ['--without-pip'] : []), envDir],
            },
            { label: covered ? 'installing the bundled wheels' : 'downloading and installing the packages', command: venvPython(envDir, platform), args: pip },
        ],
    };
}

/** ` (pydantic, tiktoken… and theirs)`: the wheel's dependencies by name. */
function needs(bundle: Bundle): string {
    const names = bundle.requires.map((r) => /^[A-Za-z0-9._-]+/.exec(r)?.[0]).filter((n): n is string => !!n);
    return names.length ? ` (${names.join(', ')}, and theirs)` : '';
}

export function formatBytes(n: number): string {
    if (n >= 1e6) {
        return `${(n / 1e6).toFixed(1)} MB`;
    }
    if (n >= 1e3) {
        return `${Math.round(n / 1e3)} kB`;
    }
    return `${n} bytes`;
}

/** `Downloading x.whl (2.3 MB)`, a line of pip's log: the bytes it announces, else undefined. */
export function downloadBytes(line: string): number | undefined {
    const m = /^\s*Downloading \S+ \((\d+(?:\.\d+)?) (bytes|kB|MB|GB)\)/.exec(line);
    if (!m) {
        return undefined;
    }
    const scale: Record<string, number> = { bytes: 1, kB: 1e3, MB: 1e6, GB: 1e9 };
    return Math.round(Number(m[1]) * scale[m[2]]);
}

/** The last `n` lines of a log that say something. */
export function lastLines(log: string, n: number): string {
    return log
        .split('\n')
        .map((l) => l.trimEnd())
        .filter((l) => l.trim() !== '')
        .slice(-n)
        .join('\n');
}

const NETWORK = [
    /NewConnectionError/,
    /Failed to establish a new connection/,
    /Max retries exceeded/,
    /Temporary failure in name resolution/,
    /Name or service not known/,
    /nodename nor servname provided/,
    /getaddrinfo failed/,
    /Network is unreachable/,
    /Connection refused/,
    /ConnectTimeoutError|ReadTimeoutError|timed out/,
    /ProxyError/,
    /SSLError|CERTIFICATE_VERIFY_FAILED/,
];

export type PipFailure =
    /** The index could not be reached, or had none of a dependency: the platform package is the way. */
    | { kind: 'unreachable'; detail: string; missing?: string }
    | { kind: 'other'; detail: string };

/**
 * What a failed `pip install` says. With the index in play, "from versions: none" for a
 * dependency (pip's word when it could list nothing: no network, a proxy, an index without it) or
 * a connection error counts as unreachable.
 */
export function classifyPipFailure(log: string, offline: boolean): PipFailure {
    const detail = lastLines(log, 6);
    if (offline) {
        return { kind: 'other', detail };
    }
    const none = /Could not find a version that satisfies the requirement (\S+)[^\n]*\(from versions: none\)/.exec(log);
    if (none || NETWORK.some((re) => re.test(log))) {
        return { kind: 'unreachable', detail, ...(none ? { missing: none[1] } : {}) };
    }
    return { kind: 'other', detail };
}

/** The `vsce package --target` name of a machine. */
export function vscodeTarget(platform: NodeJS.Platform, arch: string, musl = false): string {
    const os = platform === 'linux' && musl ? 'alpine' : platform;
    return `${os}-${arch}`;
}
