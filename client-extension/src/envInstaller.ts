/**
 * The daemon's own environment, as I/O: probing Pythons, running an install plan (envPlan.ts)
 * with every line of its output handed on, the marker file, and the lock that keeps two windows
 * from installing into the same folder at once. Node only, no `vscode`.
 */

import { execFile, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

import { MARKER_NAME, PROBE_SCRIPT, parseProbe, type EnvMarker, type InstallPlan, type InstallStep, type PythonCandidate, type PythonFound } from './envPlan';

/** A lock older than this is a window that died while installing. */
export const LOCK_STALE_MS = 20 * 60 * 1000;
const LOCK_POLL_MS = 500;
const PROBE_TIMEOUT_MS = 15000;
/** What is kept of a step's output for the error message (the output channel has it all). */
const LOG_KEEP = 256 * 1024;

/** A step that did not end well: which, how, and its output. */
export class StepFailed extends Error {
    constructor(
        readonly step: InstallStep,
        readonly exit: string,
        readonly log: string,
    ) {
        super(`${step.label} failed (${exit})`);
    }
}

export class Cancelled extends Error {
    constructor() {
        super('cancelled');
    }
}

/** Runs the probe (envPlan.PROBE_SCRIPT); undefined when the candidate does not run or is no Python. */
export function probePython(candidate: PythonCandidate, timeoutMs = PROBE_TIMEOUT_MS): Promise<PythonFound | undefined> {
    return new Promise((resolve) => {
        execFile(candidate.command, ['-I', '-c', PROBE_SCRIPT], { timeout: timeoutMs, windowsHide: true }, (error, stdout) => {
            resolve(error ? undefined : parseProbe(candidate, String(stdout)));
        });
    });
}

/** The environment for the steps: no PYTHONHOME or PYTHONPATH of the user's steering the new interpreter. */
export function stepEnv(base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = { ...base, PYTHONUNBUFFERED: '1' };
    delete env.PYTHONHOME;
    delete env.PYTHONPATH;
    delete env.VIRTUAL_ENV;
    return env;
}

/** Runs one step; resolves with its output, rejects with StepFailed or Cancelled. */
export function runStep(step: InstallStep, onLine: (line: string) => void, signal?: AbortSignal): Promise<string> {
    return new Promise((resolve, reject) => {
        if (signal?.aborted) {
            reject(new Cancelled());
            return;
        }
        let log = '';
        let partial = '';
        const take = (chunk: Buffer) => {
            const text = partial + chunk.toString();
            const lines = text.split(/\r?\n|\r/);
            partial = lines.pop() ?? '';
            for (const line of lines) {
                onLine(line);
            }
            log = (log + chunk.toString()).slice(-LOG_KEEP);
        };
        const child = spawn(step.command, step.args, { env: stepEnv(), windowsHide: true, stdio: ['ignore', 'pipe', 'pipe'] });
        child.stdout.on('data', take);
        child.stderr.on('data', take);
        let killer: NodeJS.Timeout | undefined;
        const abort = () => {
            child.kill('SIGTERM');
            killer = setTimeout(() => child.kill('SIGKILL'), 3000);
        };
        signal?.addEventListener('abort', abort, { once: true });
        child.on('error', (err) => {
            signal?.removeEventListener('abort', abort);
            reject(new StepFailed(step, (err as NodeJS.ErrnoException).code ?? err.message, `${step.command}: ${err.message}`));
        });
        child.on('close', (code, sig) => {
            signal?.removeEventListener('abort', abort);
            clearTimeout(killer);
            if (partial) {
                onLine(partial);
            }
            if (signal?.aborted) {
                reject(new Cancelled());
            } else if (code === 0) {
                resolve(log);
            } else {
                reject(new StepFailed(step, code !== null ? `exit status ${code}` : `killed by ${sig}`, log));
            }
        });
    });
}

export interface RunHooks {
    /** Every line the steps print. */
    line(text: string): void;
    /** A step starts (0-based). */
    step(step: InstallStep, index: number, count: number): void;
}

/**
 * Makes the environment afresh: whatever was in envDir goes, then the plan's steps run in order.
 * On failure or cancellation the half-made folder goes too. The marker is not written here: the
 * caller writes it once the environment has shown it runs the daemon.
 */
export async function runPlan(plan: InstallPlan, envDir: string, hooks: RunHooks, signal?: AbortSignal): Promise<void> {
    removeEnv(envDir);
    try {
        for (const [i, step] of plan.steps.entries()) {
            hooks.step(step, i, plan.steps.length);
            hooks.line(`$ ${[step.command, ...step.args].map(quote).join(' ')}`);
            await runStep(step, hooks.line, signal);
        }
    } catch (err) {
        removeEnv(envDir);
        throw err;
    }
}

export function readMarker(envDir: string): string | undefined {
    try {
        return fs.readFileSync(path.join(envDir, MARKER_NAME), 'utf8');
    } catch {
        return undefined;
    }
}

/** Written last, and whole (a rename), so a marker is never half there. */
export function writeMarker(envDir: string, marker: EnvMarker): void {
    const file = path.join(envDir, MARKER_NAME);
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify(marker, null, 2) + '\n', { mode: 0o600 });
    fs.renameSync(tmp, file);
}

export function removeEnv(envDir: string): void {
    fs.rmSync(envDir, { recursive: true, force: true });
}

/** The bytes of the files under a folder (links not followed). */
export function folderBytes(dir: string): number {
    let total = 0;
    const stack = [dir];
    while (stack.length) {
        const d = stack.pop() as string;
        let entries: fs.Dirent[];
        try {
            entries = fs.readdirSync(d, { withFileTypes: true });
        } catch {
            continue;
        }
        for (const e of entries) {
            const p = path.join(d, e.name);
            if (e.isDirectory()) {
                stack.push(p);
            } else if (e.isFile()) {
                try {
                    total += fs.lstatSync(p).size;
                } catch {
                    // gone meanwhile
                }
            }
        }
    }
    return total;
}

interface LockOwner {
    pid: number;
    at: number;
}

function alive(pid: number): boolean {
    try {
        process.kill(pid, 0);
        return true;
    } catch (err) {
        return (err as NodeJS.ErrnoException).code === 'EPERM';
    }
}

/**
 * Runs `fn` holding the lock folder `lockDir` (mkdir is atomic). A lock held by a live process
 * of this machine is waited for (`onWait` once); one whose process is gone, or older than
 * LOCK_STALE_MS, is taken over.
 */
export async function withLock<T>(lockDir: string, fn: () => Promise<T>, onWait?: () => void, signal?: AbortSignal): Promise<T> {
    let told = false;
    for (;;) {
        if (signal?.aborted) {
            throw new Cancelled();
        }
        try {
            fs.mkdirSync(path.dirname(lockDir), { recursive: true });
            fs.mkdirSync(lockDir);
            fs.writeFileSync(path.join(lockDir, 'owner.json'), JSON.stringify({ pid: process.pid, at: Date.now() } satisfies LockOwner));
            break;
        } catch (err) {
            if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
                throw err;
            }
        }
        let owner: LockOwner | undefined;
        try {
            owner = JSON.parse(fs.readFileSync(path.join(lockDir, 'owner.json'), 'utf8')) as LockOwner;
        } catch {
            // being written, or a crash between mkdir and write: judged by the folder's age
        }
        const since = owner?.at ?? statTime(lockDir);
        const stale = Date.now() - since > LOCK_STALE_MS || (owner !== undefined && owner.pid !== process.pid && !alive(owner.pid));
        if (stale) {
            fs.rmSync(lockDir, { recursive: true, force: true });
            continue;
        }
        if (!told) {
            told = true;
            onWait?.();
        }
        await new Promise((r) => setTimeout(r, LOCK_POLL_MS));
    }
    try {
        return await fn();
    } finally {
        fs.rmSync(lockDir, { recursive: true, force: true });
    }
}

function statTime(p: string): number {
    try {
        return fs.statSync(p).mtimeMs;
    } catch {
        return 0;
    }
}

function quote(arg: string): string {
    return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}
