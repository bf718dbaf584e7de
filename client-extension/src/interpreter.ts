/**
 * Which Python runs the daemon, and whether it has the `hdcontext` package. Node only, no
 * `vscode` import.
 *
 * Order: the `hdcontext.server.pythonPath` setting, and nothing else when it is set; else the
 * first of the Python extension's active interpreter (when that extension is there and the
 * workspace is trusted) and `python3` that can import hdcontext; else the environment the
 * extension makes for itself (envPlan.ts) from the wheels it carries.
 */

import { execFile } from 'node:child_process';

export type InterpreterSource = 'setting' | 'python-extension' | 'default' | 'managed';

export interface InterpreterChoice {
    path: string;
    source: InterpreterSource;
}

export const DEFAULT_PYTHON = 'python3';

/** The module the daemon runs as: `python -m hdcontext serve`. */
export const SERVE_ARGS: readonly string[] = ['-m', 'hdcontext', 'serve'];

/** The interpreters to try, in order, and whether the extension's own environment comes after them. */
export interface Discovery {
    candidates: InterpreterChoice[];
    /** False when the setting names the interpreter: its problem is the user's to fix, not worked around. */
    managedFallback: boolean;
}

export function discover(setting: string | undefined, pythonExtension: string | undefined): Discovery {
    const fromSetting = setting?.trim();
    if (fromSetting) {
        return { candidates: [{ path: expandHome(fromSetting), source: 'setting' }], managedFallback: false };
    }
    const candidates: InterpreterChoice[] = [];
    const fromExtension = pythonExtension?.trim();
    if (fromExtension) {
        candidates.push({ path: fromExtension, source: 'python-extension' });
    }
    if (fromExtension !== DEFAULT_PYTHON) {
        candidates.push({ path: DEFAULT_PYTHON, source: 'default' });
    }
    return { candidates, managedFallback: true };
}

function expandHome(p: string): string {
    const home = process.env.HOME ?? process.env.USERPROFILE;
    if (home && (p === '~' || p.startsWith('~/'))) {
        return home + p.slice(1);
    }
    return p;
}

export type CheckResult =
    | { ok: true; version: string }
    | { ok: false; kind: 'not-found' | 'missing-package' | 'failed'; detail: string };

/** Exit status of the check script when the import fails. */
const MISSING = 3;

// Imports what `serve` imports (the package and its dependencies), then prints the version.
// `hdcontext.edges.lsp.server` since edges/ has rooms; `hdcontext.edges.server` since the
// core/edges layout; `hdcontext.server` in releases before it.
const CHECK_SCRIPT = [
    'import sys',
    'try:',
    '    import hdcontext.edges.lsp.server',
    'except ImportError as exc:',
    '    try:',
    '        import hdcontext.edges.server',
    '    except ImportError:',
    '        try:',
    '            import hdcontext.server',
    '        except ImportError:',
    '            print(exc)',
    `            sys.exit(${MISSING})`,
    'try:',
    '    from importlib.metadata import version',
    '    print(version("hdcontext"))',
    'except Exception:',
    '    print("unknown")',
].join('\n');

/** Runs `python -c "import hdcontext.edges.lsp.server"`: can this interpreter run the daemon? */
export function checkHdcontext(python: string, timeoutMs = 30000): Promise<CheckResult> {
    return new Promise((resolve) => {
        execFile(
            python,
            ['-c', CHECK_SCRIPT],
            { timeout: timeoutMs, windowsHide: true, env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' } },
            (error, stdout, stderr) => {
                const out = String(stdout).trim();
                if (!error) {
                    resolve({ ok: true, version: out.split('\n').pop() || 'unknown' });
                    return;
                }
                const code = (error as NodeJS.ErrnoException).code;
                if (code === 'ENOENT' || code === 'EACCES') {
                    resolve({ ok: false, kind: 'not-found', detail: `${python}: ${code === 'ENOENT' ? 'not found' : 'not executable'}` });
                } else if (typeof code === 'number' && code === MISSING) {
                    resolve({ ok: false, kind: 'missing-package', detail: out || 'No module named hdcontext' });
                } else {
                    const why = String(stderr).trim().split('\n').slice(-3).join(' ') || error.message;
                    resolve({ ok: false, kind: 'failed', detail: why });
                }
            },
        );
    });
}

function shellQuote(p: string): string {
    return /^[\w@%+=:,./-]+$/.test(p) ? p : `'${p.replace(/'/g, `'\\''`)}'`;
}

/** The command that installs hdcontext for this interpreter. */
export function installCommand(python: string): string {
    return `${shellQuote(python)} -m pip install hdcontext`;
}

/** The one message the user sees when the daemon cannot start; null when it can. */
export function problemMessage(choice: InterpreterChoice, result: CheckResult): string | null {
    if (result.ok) {
        return null;
    }
    const where =
        choice.source === 'setting'
            ? ' (from hdcontext.server.pythonPath)'
            : choice.source === 'python-extension'
              ? " (the Python extension's interpreter)"
              : '';
    if (choice.source === 'setting' && result.kind === 'not-found') {
        return (
            `hdcontext: cannot start the daemon: hdcontext.server.pythonPath is ${choice.path}, which ${/not executable/.test(result.detail) ? 'cannot be run' : 'does not exist'}. ` +
            'Clear the setting to let hdcontext run the daemon from the environment it sets up itself, or point it at a Python 3.11+ that has the hdcontext package.'
        );
    }
    switch (result.kind) {
        case 'not-found':
            return (
                `hdcontext: cannot start the daemon: the Python interpreter ${choice.path}${where} was not found. ` +
                'Set hdcontext.server.pythonPath to a Python 3.11+ that has the hdcontext package.'
            );
        case 'missing-package':
            return (
                `hdcontext: cannot start the daemon: ${choice.path}${where} cannot import hdcontext (${result.detail}). ` +
                `Install it with \`${installCommand(choice.path)}\` (from a checkout: \`${shellQuote(choice.path)} -m pip install /path/to/hdcontext\`), ` +
                'or set hdcontext.server.pythonPath to an interpreter that has it.'
            );
        default:
            return (
                `hdcontext: cannot start the daemon: checking ${choice.path}${where} failed: ${result.detail}. ` +
                'See the hdcontext output channel.'
            );
    }
}
