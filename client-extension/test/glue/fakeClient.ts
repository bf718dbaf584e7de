/**
 * A stand-in for vscode-languageclient's LanguageClient that runs the real daemon with the
 * ServerOptions the extension built, over vscode-jsonrpc, and answers `workspace/configuration`
 * through the extension's own middleware (so the settings the daemon pulls are the extension's).
 */


import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';

import { CancellationTokenSource, createMessageConnection, StreamMessageReader, StreamMessageWriter, type MessageConnection } from 'vscode-jsonrpc/node';

export class FakeLanguageClient {
    static instances: FakeLanguageClient[] = [];
    initializeResult: any;
    connection: MessageConnection | undefined;
    process: ChildProcessWithoutNullStreams | undefined;
    stderr = '';
    stopped = false;
    private readonly pendingNotifications: Array<[string, (p: any) => void]> = [];
    private readonly pendingRequests: Array<[string, (p: any, t: any) => unknown]> = [];

    constructor(
        readonly serverOptions: any,
        readonly clientOptions: any,
    ) {
        FakeLanguageClient.instances.push(this);
    }

    async start(): Promise<void> {
        const { command, args, options } = this.serverOptions;
        const child = spawn(command, args, { env: options?.env, stdio: ['pipe', 'pipe', 'pipe'] });
        this.process = child;
        child.stderr.on('data', (d: Buffer) => (this.stderr += d.toString()));
        const connection = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
        this.connection = connection;
        connection.onRequest('client/registerCapability', () => null);
        connection.onRequest('workspace/configuration', (params: any, token: any) => {
            const mw = this.clientOptions.middleware?.workspace?.configuration;
            const next = (p: any) => p.items.map(() => null);
            return mw ? mw(params, token, next) : next(params);
        });
        for (const [m, h] of this.pendingNotifications) {
            connection.onNotification(m, h);
        }
        for (const [m, h] of this.pendingRequests) {
            connection.onRequest(m, h);
        }
        connection.listen();
        this.initializeResult = await connection.sendRequest('initialize', {
            processId: process.pid,
            rootUri: null,
            capabilities: { workspace: { configuration: true, didChangeConfiguration: { dynamicRegistration: true } } },
            initializationOptions: this.clientOptions.initializationOptions,
        });
        await connection.sendNotification('initialized', {});
    }

    onNotification(method: string, handler: (p: any) => void) {
        if (this.connection) {
            return this.connection.onNotification(method, handler);
        }
        this.pendingNotifications.push([method, handler]);
        return { dispose: () => undefined };
    }

    onRequest(method: string, handler: (p: any, t: any) => unknown) {
        if (this.connection) {
            return this.connection.onRequest(method, handler);
        }
        this.pendingRequests.push([method, handler]);
        return { dispose: () => undefined };
    }

    sendRequest<R>(method: string, params: unknown): Promise<R> {
        if (!this.connection) {
            return Promise.reject(new Error('not started'));
        }
        return this.connection.sendRequest(method, params, new CancellationTokenSource().token) as Promise<R>;
    }

    /** What vscode-languageclient's configuration sync sends when the user edits settings. */
    sendNotification(method: string, params: unknown): Promise<void> {
        return this.connection ? this.connection.sendNotification(method, params) : Promise.resolve();
    }

    async stop(): Promise<void> {
        if (this.stopped) {
            return;
        }
        this.stopped = true;
        const child = this.process;
        try {
            await Promise.race([this.connection?.sendRequest('shutdown'), new Promise((r) => setTimeout(r, 3000))]);
            await this.connection?.sendNotification('exit');
        } catch {
            // killed below
        }
        if (child && child.exitCode === null) {
            await new Promise<void>((resolve) => {
                const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
                child.once('exit', () => {
                    clearTimeout(timer);
                    resolve();
                });
            });
        }
        this.connection?.dispose();
    }

    dispose(): Promise<void> {
        return this.stop();
    }
}
