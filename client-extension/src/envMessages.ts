/**
 * What the user reads when the daemon's environment cannot be set up: each message says what
 * went wrong and what to do. No `vscode`: Node tests check the words.
 */

import { MIN_PYTHON, versionText, type BaseChoice, type Bundle, type PipFailure, type PythonFound } from './envPlan';

export const REINSTALL_TITLE = 'hdcontext: Reinstall Daemon';
const AGAIN = `then run "${REINSTALL_TITLE}"`;
const PREFIX = 'hdcontext: cannot set up its daemon:';
const MIN = versionText(MIN_PYTHON);

/** How to get a Python 3.11+ on this system. */
export function pythonHowTo(platform: NodeJS.Platform): string {
    switch (platform) {
        case 'darwin':
            return '`brew install python@3.13`, or the installer from python.org';
        case 'win32':
            return '`winget install Python.Python.3.13`, or the installer from python.org';
        default:
            return 'your distribution\'s python3 if it is 3.11 or later (Debian 12, Ubuntu 24.04, Fedora 38 and later; on Debian and Ubuntu with python3-venv), or a build from python.org';
    }
}

function described(p: PythonFound): string {
    return `${p.command} is Python ${versionText(p.version)}${p.executable !== p.command ? ` (${p.executable})` : ''}`;
}

/** No Python that can make the environment. */
export function noPythonMessage(choice: Extract<BaseChoice, { ok: false }>, platform: NodeJS.Platform): string {
    switch (choice.reason) {
        case 'none':
            return `${PREFIX} it needs Python ${MIN} or later and found no Python (the Python extension's interpreter, python3 on PATH). Install one (${pythonHowTo(platform)}), ${AGAIN}.`;
        case 'too-old':
            return `${PREFIX} it needs Python ${MIN} or later, and ${choice.found.map(described).join('; ')}. Install Python ${MIN} or later (${pythonHowTo(platform)}), ${AGAIN}.`;
        case 'no-venv': {
            const p = choice.found.find((f) => f.version[0] === 3 && f.version[1] >= MIN_PYTHON[1]) as PythonFound;
            const pkg = `python${p.version[0]}.${p.version[1]}-venv`;
            return `${PREFIX} ${described(p)}, which cannot make a virtual environment (its venv and ensurepip modules are missing). Install them (Debian and Ubuntu: \`sudo apt install ${pkg}\`), ${AGAIN}.`;
        }
    }
}

/** pip could not reach the package index (or it had nothing), with no bundled wheels for this Python. */
export function unreachableMessage(
    failure: Extract<PipFailure, { kind: 'unreachable' }>,
    bundle: Bundle,
    python: PythonFound,
    target: string,
): string {
    const what = failure.missing ? `${failure.missing} (a dependency of hdcontext)` : "hdcontext's dependencies";
    const said = oneLine(failure.detail, 2);
    if (bundle.target !== null) {
        // A platform package whose wheels are for other Pythons.
        return (
            `${PREFIX} pip could not get ${what} from your package index, and the wheels that came with the extension are for CPython ${bundle.pythons.join(', ')}, ` +
            `not Python ${versionText(python.version)}. Pick one of those (Python extension, or hdcontext.server.pythonPath to a plain Python), or make the index reachable, ${AGAIN}. pip said: ${said}`
        );
    }
    return (
        `${PREFIX} pip could not get ${what} from your package index (no network, a proxy, or an index without it). ` +
        `Without network, install the package made for this machine, hdcontext-${target}.vsix, which carries them (\`make vsix TARGET=${target}\` builds it); ` +
        `or point pip at an index it can reach (\`pip config set global.index-url URL\`); ${AGAIN}. pip said: ${said}`
    );
}

/** A step failed otherwise: its last lines. */
export function installFailedMessage(step: string, exit: string, log: string): string {
    return `${PREFIX} ${step} failed (${exit}). The last lines: ${oneLine(log, 3)} The whole log is in the hdcontext output channel; "${REINSTALL_TITLE}" tries again.`;
}

export function cancelledMessage(): string {
    return `hdcontext: setting up its daemon was cancelled. Run "${REINSTALL_TITLE}" to set it up.`;
}

/** A package without bundled/ (built another way than `make vsix`). */
export function noBundleMessage(why: string): string {
    return `hdcontext: this build of the extension does not carry its daemon (${why}). Set hdcontext.server.pythonPath to a Python 3.11+ that has the hdcontext package, or install a package built with \`make vsix\`.`;
}

/** The environment was made but cannot run the daemon. */
export function brokenEnvMessage(python: string, detail: string): string {
    return `${PREFIX} the environment it made cannot run the daemon (${python}: ${detail}). See the hdcontext output channel; "${REINSTALL_TITLE}" tries again.`;
}

/** Lines of a log in one line (notifications show no line breaks), each cut to a readable length. */
export function oneLine(text: string, lines: number): string {
    return text
        .split('\n')
        .map((l) => l.trim())
        .filter(Boolean)
        .slice(-lines)
        .map((l) => (l.length > 240 ? `${l.slice(0, 237)}…` : l))
        .join(' | ');
}
