/**
 * Starts and supervises the hdcontext daemon with vscode-languageclient over stdio.
 *
 * Nothing starts it but a use: `ready()` (an API call, a command, a chat request through a
 * wrapping model, the status bar's click). `stop()` is the one way it ends, from `deactivate()`
 * and from `restart()`.
 *
 * Which Python runs it (interpreter.ts): `hdcontext.server.pythonPath` when set; else the Python
 * extension's interpreter or `python3`, the first that can import hdcontext; else the environment
 * the extension makes for itself from the wheels it carries (daemonSetup.ts), on first use.
 * When none can, the user gets one clear message that says what to do, and nothing is retried
 * until they ask (`hdcontext: Restart Daemon`, `hdcontext: Reinstall Daemon`, or a change of
 * `hdcontext.server.pythonPath`); chat requests meanwhile go to the model unchanged. A daemon that
 * exits is restarted at most MAX_RESTARTS times in RESTART_WINDOW_MS, then left stopped with one
 * message.
 */

import * as vscode from 'vscode';
import {
    CloseAction,
    ErrorAction,
    LanguageClient,
    type LanguageClientOptions,
    type ServerOptions,
} from 'vscode-languageclient/node';

import { DaemonClient } from './daemonClient';
import { DaemonSetup, SetupProblem } from './daemonSetup';
import {
    discover,
    checkHdcontext,
    installCommand,
    problemMessage,
    SERVE_ARGS,
    type CheckResult,
    type InterpreterChoice,
} from './interpreter';
import { PROTOCOL_VERSION, RETRIEVE_TOOL_NAME, SETTINGS_SECTION, serverProtocolVersion, type InitializationOptions, type Status } from './protocol';
import { daemonEnvironment, proxyOptions } from './proxySettings';
import { daemonSection } from './settingsSection';
import type { EditorSummarizer } from './summarizer';

export const CLIENT_ID = 'hdcontext';
export const CLIENT_NAME = 'hdcontext daemon';
export const REINSTALL_COMMAND = 'hdcontext.reinstallDaemon';
export const MAX_RESTARTS = 3;
export const RESTART_WINDOW_MS = 3 * 60 * 1000;
const PYTHON_EXTENSION = 'ms-python.python';
const PYTHON_EXTENSION_TIMEOUT_MS = 15000;

export interface DaemonHost {
    output: vscode.OutputChannel;
    /** initializationOptions.storageDir: where sessions and transcripts persist. */
    storageDir: string;
    summarizer: EditorSummarizer;
    onTokens(status: Status): void;
    onStarting(): void;
    onRunning(): void;
    onFailed(message: string): void;
    /** The extension's `bundled/` folder (the daemon's wheels) and version: the environment it makes. */
    bundleDir?: string;
    extensionVersion?: string;
}

/** How a language client is made: a seam for the tests. */
export type ClientFactory = (serverOptions: ServerOptions, clientOptions: LanguageClientOptions) => LanguageClient;

const defaultFactory: ClientFactory = (serverOptions, clientOptions) =>
    new LanguageClient(CLIENT_ID, CLIENT_NAME, serverOptions, clientOptions);

/** Why the daemon cannot run; the user has been told (once). */
export class DaemonProblem extends Error {}

/** Said after every reason the daemon cannot run: what happens to chat requests meanwhile. */
export const MEANWHILE = 'Until then, chat requests through the "· hdcontext" models go to the model unchanged.';

export class Daemon {
    private client: LanguageClient | undefined;
    private startup: Promise<DaemonClient> | undefined;
    private problem: string | undefined;
    private problemShown = false;
    private hint: string | undefined;
    /** Aborts what the start under way is doing (an install) when the daemon is stopped. */
    private aborter = new AbortController();
    private restarts: number[] = [];
    private disposables: vscode.Disposable[] = [];
    interpreter: InterpreterChoice | undefined;
    readonly setup: DaemonSetup;

    constructor(
        private readonly host: DaemonHost,
        private readonly factory: ClientFactory = defaultFactory,
    ) {
        this.setup = new DaemonSetup({
            output: host.output,
            log: (line) => this.log(line),
            storageDir: host.storageDir,
            bundleDir: host.bundleDir ?? '',
            extensionVersion: host.extensionVersion ?? '0.0.0',
        });
    }

    /** Whether the daemon's environment is being installed (a first use). */
    get settingUp(): boolean {
        return this.setup.installing;
    }

    log(line: string): void {
        this.host.output.appendLine(`[${new Date().toISOString()}] ${line}`);
    }

    /** The running daemon's client; starts it on first use. Rejects with the reason it cannot start. */
    ready(): Promise<DaemonClient> {
        if (this.startup === undefined) {
            this.startup = this.start();
            // A failed start is kept (no retry loop); restart() clears it.
            this.startup.catch(() => undefined);
        }
        return this.startup;
    }

    /** Whether something asked for the daemon since it was last stopped (it may have failed to start). */
    get started(): boolean {
        return this.startup !== undefined;
    }

    /** The last reason the daemon could not start or stopped, if any. */
    get failure(): string | undefined {
        return this.problem;
    }

    /** The command that installs hdcontext for the interpreter the setting names, when that is what failed. */
    get installHint(): string | undefined {
        return this.hint;
    }

    private async start(rebuild = false): Promise<DaemonClient> {
        this.problem = undefined;
        this.hint = undefined;
        this.aborter = new AbortController();
        this.host.onStarting();
        const choice = await this.chooseInterpreter(rebuild);
        const client = this.factory(this.serverOptions(choice), this.clientOptions());
        this.client = client;
        try {
            await client.start();
        } catch (err) {
            this.client = undefined;
            await client.dispose().catch(() => undefined);
            throw this.fail(`hdcontext: the daemon did not start: ${errorText(err)}. See the hdcontext output channel.`, choice);
        }
        const version = serverProtocolVersion(client.initializeResult?.capabilities);
        if (version !== PROTOCOL_VERSION) {
            this.log(`warning: the daemon speaks protocol version ${String(version)}; this extension speaks ${PROTOCOL_VERSION}`);
        }
        const daemon = new DaemonClient(client);
        this.disposables.push(
            client.onNotification('window/logMessage', (p: { type?: number; message?: string }) => this.onLogMessage(p)),
            daemon.onTokens(
                (s) => this.host.onTokens(s),
                (bad) => this.log(`ignored a history/tokens notification that is not a Status: ${JSON.stringify(bad).slice(0, 200)}`),
            ),
            daemon.onSummarize((params, token) => this.host.summarizer.summarize(params, token as vscode.CancellationToken)),
        );
        this.log(`daemon running (protocol ${String(version)}), storage ${this.host.storageDir}`);
        this.host.onRunning();
        return daemon;
    }

    /**
     * The interpreter to run: the setting's, else the first that can import hdcontext, else the
     * environment of the extension's own (made now if need be). Throws the one DaemonProblem.
     */
    private async chooseInterpreter(rebuild: boolean): Promise<InterpreterChoice> {
        const setting = vscode.workspace.getConfiguration(SETTINGS_SECTION).get<string>('server.pythonPath');
        const pythonExtension = setting?.trim() ? undefined : await this.pythonExtensionInterpreter();
        const plan = discover(setting, pythonExtension);
        if (rebuild) {
            this.log(`rebuilding the daemon environment ${this.setup.envDir}`);
            await this.setUp(pythonExtension, true);
            if (!plan.managedFallback) {
                this.log('hdcontext.server.pythonPath is set: the daemon runs with it, not with the environment just made');
            }
        }
        for (const choice of plan.candidates) {
            this.interpreter = choice;
            const check: CheckResult = await checkHdcontext(choice.path);
            if (check.ok) {
                this.log(`interpreter: ${choice.path} (${choice.source}) has hdcontext ${check.version}; starting ${choice.path} ${SERVE_ARGS.join(' ')}`);
                return choice;
            }
            this.log(`interpreter: ${choice.path} (${choice.source}) cannot run the daemon: ${check.detail}`);
            if (!plan.managedFallback) {
                const problem = problemMessage(choice, check) as string;
                throw this.fail(problem, choice, check.kind === 'missing-package');
            }
        }
        const python = await this.setUp(pythonExtension, false);
        const choice: InterpreterChoice = { path: python, source: 'managed' };
        this.interpreter = choice;
        this.log(`interpreter: ${python} (the extension's own environment); starting it with ${SERVE_ARGS.join(' ')}`);
        return choice;
    }

    /** The extension's own environment; a SetupProblem becomes the one DaemonProblem. */
    private async setUp(pythonExtension: string | undefined, rebuild: boolean): Promise<string> {
        try {
            return await this.setup.ensure(pythonExtension, rebuild, this.aborter.signal);
        } catch (err) {
            if (err instanceof SetupProblem) {
                throw this.fail(err.message, undefined, false, true);
            }
            throw this.fail(`hdcontext: cannot set up its daemon: ${errorText(err)}. See the hdcontext output channel.`, undefined, false, true);
        }
    }

    private serverOptions(choice: InterpreterChoice): ServerOptions {
        // No `transport`: with TransportKind.stdio the client would append `--stdio` to the args.
        return {
            command: choice.path,
            args: [...SERVE_ARGS],
            // The editor's proxy setting goes with it: `hdcontext proxy` reaches its upstreams by it.
            options: { env: daemonEnvironment(process.env, (key) => vscode.workspace.getConfiguration('http').get(key)) },
        };
    }

    private clientOptions(): LanguageClientOptions {
        // The chat panel's models are offered hdcontext_retrieve: pointers left by pruning and
        // masking tell the model to call it (the proxy's agents, which lack it, are told otherwise).
        const initializationOptions: InitializationOptions = { storageDir: this.host.storageDir, retrieveTool: RETRIEVE_TOOL_NAME };
        const config = vscode.workspace.getConfiguration(SETTINGS_SECTION);
        const proxy = proxyOptions((key) => config.get(key));
        if (proxy) {
            initializationOptions.proxy = proxy;
        }
        return {
            // No documentSelector and no synchronize.fileEvents: the daemon's own watcher is the one
            // source of file writes (a save is a write on disk), and it has no language features.
            // The daemon pulls section `hdcontext` (workspace/configuration) after `initialized`
            // and again on each didChangeConfiguration, which this makes the client send.
            synchronize: { configurationSection: SETTINGS_SECTION },
            initializationOptions,
            outputChannel: this.host.output,
            middleware: {
                workspace: {
                    configuration: (params, token, next) => {
                        if (params.items.every((item) => item.section === SETTINGS_SECTION)) {
                            const config = vscode.workspace.getConfiguration(SETTINGS_SECTION);
                            return params.items.map(() => daemonSection(config));
                        }
                        return next(params, token);
                    },
                },
            },
            errorHandler: {
                error: (_error, _message, count) => ({
                    action: (count ?? 0) <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown,
                    handled: true,
                }),
                closed: () => this.onClosed(),
            },
            initializationFailedHandler: (error) => {
                this.log(`initialize failed: ${errorText(error)}`);
                return false;
            },
        };
    }

    /**
     * The daemon's `window/logMessage` goes to the output channel; its warnings about refused
     * settings (PROTOCOL.md: key, value, what was expected) are also shown to the user, since
     * they follow an edit the user just made.
     */
    private onLogMessage(p: { type?: number; message?: string }): void {
        const message = String(p.message ?? '');
        const kind = p.type === 1 ? 'error' : p.type === 2 ? 'warning' : p.type === 3 ? 'info' : 'log';
        this.host.output.appendLine(`[daemon ${kind}] ${message}`);
        if ((p.type === 1 || p.type === 2) && message.startsWith('hdcontext:') && !this.warningsOnScreen.has(message)) {
            this.warningsOnScreen.add(message);
            void Promise.resolve(vscode.window.showWarningMessage(message)).finally(() => this.warningsOnScreen.delete(message));
        }
    }

    private readonly warningsOnScreen = new Set<string>();

    private onClosed(): { action: CloseAction; handled: boolean } {
        const now = Date.now();
        this.restarts = this.restarts.filter((t) => now - t < RESTART_WINDOW_MS);
        if (this.restarts.length < MAX_RESTARTS) {
            this.restarts.push(now);
            this.log(`the daemon exited; restarting (${this.restarts.length} of ${MAX_RESTARTS} in ${RESTART_WINDOW_MS / 60000} minutes)`);
            return { action: CloseAction.Restart, handled: true };
        }
        const message =
            `hdcontext: the daemon exited ${MAX_RESTARTS + 1} times in ${RESTART_WINDOW_MS / 60000} minutes and is left stopped. ` +
            'See the hdcontext output channel, then run "hdcontext: Restart Daemon".';
        this.fail(message, this.interpreter);
        this.startup = Promise.reject(new DaemonProblem(message));
        this.startup.catch(() => undefined);
        return { action: CloseAction.DoNotRestart, handled: true };
    }

    /** Records why the daemon cannot run and tells the user once. */
    private fail(message: string, choice: InterpreterChoice | undefined, offerInstall = false, offerReinstall = false): DaemonProblem {
        this.problem = message;
        this.hint = offerInstall && choice ? installCommand(choice.path) : undefined;
        this.log(message);
        this.host.onFailed(message);
        if (this.aborter.signal.aborted) {
            return new DaemonProblem(message); // stopped meanwhile: nobody is waiting for the answer
        }
        if (!this.problemShown) {
            this.problemShown = true;
            void this.showProblem(`${message} ${MEANWHILE}`, offerInstall ? choice : undefined, offerReinstall);
        }
        return new DaemonProblem(message);
    }

    /** The one error message; with "Copy Install Command" when the package is missing, "Reinstall Daemon" when setting up failed. */
    private async showProblem(message: string, choice: InterpreterChoice | undefined, offerReinstall: boolean): Promise<void> {
        const copy = 'Copy Install Command';
        const reinstall = 'Reinstall Daemon';
        const settings = 'Open Settings';
        const log = 'Show Log';
        const actions = [...(choice ? [copy] : []), ...(offerReinstall ? [reinstall] : []), settings, log];
        const picked = await vscode.window.showErrorMessage(message, ...actions);
        if (picked === copy && choice) {
            await vscode.env.clipboard.writeText(installCommand(choice.path));
        } else if (picked === reinstall) {
            await vscode.commands.executeCommand(REINSTALL_COMMAND);
        } else if (picked === settings) {
            await vscode.commands.executeCommand('workbench.action.openSettings', 'hdcontext.server.pythonPath');
        } else if (picked === log) {
            this.host.output.show(true);
        }
    }

    /** The Python extension's interpreter for the first folder; never in an untrusted workspace. */
    private async pythonExtensionInterpreter(): Promise<string | undefined> {
        const ext = vscode.extensions.getExtension(PYTHON_EXTENSION);
        if (ext === undefined) {
            return undefined;
        }
        if (!vscode.workspace.isTrusted) {
            this.log('Restricted Mode: not using the Python extension interpreter');
            return undefined;
        }
        try {
            const api: any = ext.isActive ? ext.exports : await withTimeout(ext.activate(), PYTHON_EXTENSION_TIMEOUT_MS);
            const resource = vscode.workspace.workspaceFolders?.[0]?.uri;
            const envPath = api?.environments?.getActiveEnvironmentPath?.(resource);
            if (envPath) {
                const env = await api.environments.resolveEnvironment?.(envPath);
                const exe: unknown = env?.executable?.uri?.fsPath;
                if (typeof exe === 'string' && exe) {
                    return exe;
                }
                if (typeof envPath.path === 'string' && envPath.path) {
                    return envPath.path;
                }
            }
            const details = api?.settings?.getExecutionDetails?.(resource);
            const cmd: unknown = details?.execCommand?.[0];
            return typeof cmd === 'string' && cmd ? cmd : undefined;
        } catch (err) {
            this.log(`the Python extension gave no interpreter: ${errorText(err)}`);
            return undefined;
        }
    }

    /** Stops the daemon and starts it again (after the user fixed the interpreter, say). */
    async restart(): Promise<DaemonClient> {
        await this.stop();
        this.problemShown = false;
        this.restarts = [];
        return this.ready();
    }

    /** `hdcontext: Reinstall Daemon`: stops it, makes its environment anew, starts it again. */
    async reinstall(): Promise<DaemonClient> {
        await this.stop();
        this.problemShown = false;
        this.restarts = [];
        this.startup = this.start(true);
        this.startup.catch(() => undefined);
        return this.startup;
    }

    async stop(): Promise<void> {
        // A start under way finishes first (an install is cut short), or its daemon would outlive this stop.
        const starting = this.startup;
        this.startup = undefined;
        this.aborter.abort();
        await starting?.catch(() => undefined);
        for (const d of this.disposables.splice(0)) {
            d.dispose();
        }
        const client = this.client;
        this.client = undefined;
        if (client !== undefined) {
            try {
                await client.stop(5000);
            } catch (err) {
                this.log(`stopping the daemon: ${errorText(err)}`);
            }
        }
    }
}

function withTimeout<T>(p: Thenable<T>, ms: number): Promise<T> {
    return new Promise<T>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
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

export function errorText(err: unknown): string {
    return err instanceof Error ? err.message : String(err);
}
