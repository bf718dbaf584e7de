/**
 * Starts the real hdcontext daemon (`python -m hdcontext serve`) and talks to it with
 * vscode-jsonrpc, as an LSP client would: initialize, initialized, settings pulls, shutdown.
 *
 * The interpreter is the repository's venv (`make test` creates it), found relative to this
 * extension folder; HDCONTEXT_TEST_PYTHON overrides it.
 */

import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { createMessageConnection, StreamMessageReader, StreamMessageWriter, type MessageConnection } from 'vscode-jsonrpc/node';

import { DaemonClient } from '../../src/daemonClient';

/** client-extension/ (this file runs from client-extension/out/build/test/helpers/). */
export const EXTENSION_ROOT = findUp(__dirname, (dir) => fs.existsSync(path.join(dir, 'api.d.ts')) && fs.existsSync(path.join(dir, 'package.json')));
export const REPO_ROOT = path.dirname(EXTENSION_ROOT);
export const VENV_PYTHON = process.env.HDCONTEXT_TEST_PYTHON ?? path.join(REPO_ROOT, '.venv', 'bin', 'python');

function findUp(start: string, ok: (dir: string) => boolean): string {
    let dir = start;
    for (;;) {
        if (ok(dir)) {
            return dir;
        }
        const up = path.dirname(dir);
        if (up === dir) {
            throw new Error(`no client-extension folder above ${start}`);
        }
        dir = up;
    }
}

export interface LogMessage {
    type: number;
    message: string;
}

export interface RunningDaemon {
    connection: MessageConnection;
    client: DaemonClient;
    process: ChildProcessWithoutNullStreams;
    initializeResult: { capabilities: Record<string, unknown>; serverInfo?: { name: string; version?: string } };
    logs: LogMessage[];
    /** How many times the daemon pulled the settings section. */
    pulls: () => number;
    stderr: () => string;
    storageDir: string;
    workspaceDir: string;
    /** Sends didChangeConfiguration and waits until the daemon pulled again. */
    changeSettings(): Promise<void>;
    stop(): Promise<void>;
}

export interface StartOptions {
    /** What `workspace/configuration` answers for section hdcontext (called on every pull). */
    settings?: () => Record<string, unknown> | null;
    /** When false, the client says it cannot answer workspace/configuration. */
    pull?: boolean;
    initializationOptions?: Record<string, unknown>;
    storageDir?: string;
    workspaceDir?: string;
    env?: Record<string, string>;
}

const tempDirs: string[] = [];
process.on('exit', () => {
    for (const dir of tempDirs) {
        fs.rmSync(dir, { recursive: true, force: true });
    }
});

/** A fresh folder, removed when the test process exits. */
export function tempDir(prefix: string): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), `hdcontext-${prefix}-`));
    tempDirs.push(dir);
    return dir;
}

/** A real Python that cannot import hdcontext: the venv's, without site-packages (-I -S). */
export function pythonWithoutHdcontext(): string {
    const dir = tempDir('nopkg');
    const script = path.join(dir, 'python');
    fs.writeFileSync(script, `#!/bin/sh\nexec "${VENV_PYTHON}" -I -S "$@"\n`, { mode: 0o755 });
    return script;
}

export async function startDaemon(options: StartOptions = {}): Promise<RunningDaemon> {
    if (!fs.existsSync(VENV_PYTHON)) {
        throw new Error(`${VENV_PYTHON} not found: run \`make test\` (or \`make unit\`) at the repository root first`);
    }
    const storageDir = options.storageDir ?? tempDir('storage');
    const workspaceDir = options.workspaceDir ?? tempDir('ws');
    const child = spawn(VENV_PYTHON, ['-m', 'hdcontext', 'serve'], {
        env: { ...process.env, PYTHONUNBUFFERED: '1', ...(options.env ?? {}) },
        stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const connection = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
    const logs: LogMessage[] = [];
    let pulls = 0;
    const pullWaiters: Array<() => void> = [];
    connection.onNotification('window/logMessage', (p: LogMessage) => logs.push(p));
    connection.onRequest('client/registerCapability', () => null);
    connection.onRequest('workspace/configuration', (params: { items: Array<{ section?: string }> }) => {
        pulls++;
        const answer = params.items.map((item) => (item.section === 'hdcontext' && options.settings ? options.settings() : null));
        setImmediate(() => pullWaiters.splice(0).forEach((w) => w()));
        return answer;
    });
    connection.listen();
    const pull = options.pull ?? true;
    const initializeResult = (await connection.sendRequest('initialize', {
        processId: process.pid,
        rootUri: 'file://' + workspaceDir,
        workspaceFolders: [{ uri: 'file://' + workspaceDir, name: 'ws' }],
        capabilities: pull
            ? { workspace: { configuration: true, didChangeConfiguration: { dynamicRegistration: true } } }
            : {},
        initializationOptions: { storageDir, ...(options.initializationOptions ?? {}) },
    })) as RunningDaemon['initializeResult'];
    await connection.sendNotification('initialized', {});
    const running: RunningDaemon = {
        connection,
        client: new DaemonClient(connection),
        process: child,
        initializeResult,
        logs,
        pulls: () => pulls,
        stderr: () => stderr,
        storageDir,
        workspaceDir,
        changeSettings: async () => {
            const waited = new Promise<void>((resolve) => pullWaiters.push(resolve));
            await connection.sendNotification('workspace/didChangeConfiguration', { settings: null });
            await withTimeout(waited, 10000, 'the daemon did not pull the settings again');
        },
        stop: async () => {
            try {
                await withTimeout(connection.sendRequest('shutdown'), 5000, 'shutdown');
                await connection.sendNotification('exit');
            } catch {
                // killed below
            }
            await new Promise<void>((resolve) => {
                if (child.exitCode !== null) {
                    resolve();
                    return;
                }
                const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
                child.once('exit', () => {
                    clearTimeout(timer);
                    resolve();
                });
            });
            connection.dispose();
        },
    };
    return running;
}

export function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
    return new Promise<T>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`timeout after ${ms} ms: ${what}`)), ms);
        p.then(
            (v) => {
                clearTimeout(timer);
                resolve(v);
            },
            (e: unknown) => {
                clearTimeout(timer);
                reject(e instanceof Error ? e : new Error(String(e)));
            },
        );
    });
}

/** Resolves with the first value `take` returns for a history/tokens (or any) event. */
export function waitFor<T>(subscribe: (listener: (v: T) => void) => { dispose(): unknown }, test: (v: T) => boolean, ms = 10000): Promise<T> {
    return new Promise<T>((resolve, reject) => {
        const timer = setTimeout(() => {
            sub.dispose();
            reject(new Error(`no matching event within ${ms} ms`));
        }, ms);
        const sub = subscribe((v) => {
            if (test(v)) {
                clearTimeout(timer);
                sub.dispose();
                resolve(v);
            }
        });
    });
}
