/**
 * The environment the extension makes for its daemon when no interpreter the user has can import
 * hdcontext: in the extension's global storage (`daemon-env/`), with the Python it finds, from
 * the wheels the package carries (bundled/). Made once, behind a progress notification that
 * says what is installed, where and how big, with pip's log in the output channel; reused by
 * every later start and window while the marker names this package; made again for another one.
 *
 * The decisions are envPlan.ts's, the processes envInstaller.ts's; this is the editor's side.
 */

import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import * as vscode from 'vscode';

import { brokenEnvMessage, cancelledMessage, installFailedMessage, noBundleMessage, noPythonMessage, unreachableMessage } from './envMessages';
import { Cancelled, StepFailed, folderBytes, probePython, readMarker, removeEnv, runPlan, withLock, writeMarker } from './envInstaller';
import {
    ENV_DIR_NAME,
    chooseBasePython,
    classifyPipFailure,
    currentMarker,
    downloadBytes,
    envKey,
    formatBytes,
    installPlan,
    parseBundle,
    pythonCandidates,
    venvPython,
    versionText,
    vscodeTarget,
    type Bundle,
    type PythonFound,
} from './envPlan';
import { checkHdcontext } from './interpreter';

export interface SetupHost {
    output: vscode.OutputChannel;
    log(line: string): void;
    /** The extension's global storage folder: the environment goes in `daemon-env/` there. */
    storageDir: string;
    /** The folder that holds manifest.json and wheels/ (the extension's `bundled/`). */
    bundleDir: string;
    extensionVersion: string;
}

/** Why the environment cannot be had, in words for the user. */
export class SetupProblem extends Error {}

export class DaemonSetup {
    private busy = false;

    constructor(private readonly host: SetupHost) {}

    get envDir(): string {
        return path.join(this.host.storageDir, ENV_DIR_NAME);
    }

    /** Whether an install is under way (a chat request waits longer for it). */
    get installing(): boolean {
        return this.busy;
    }

    /**
     * The environment's Python: the one made earlier if it is this package's and still runs,
     * else a new one. `rebuild` makes it anew in any case. Throws SetupProblem.
     */
    async ensure(pythonExtension: string | undefined, rebuild = false, signal?: AbortSignal): Promise<string> {
        const bundle = this.bundle();
        const key = envKey(bundle, this.host.extensionVersion);
        if (!rebuild) {
            const ready = await this.reuse(key);
            if (ready) {
                return ready;
            }
        }
        this.busy = true;
        try {
            return await withLock(
                `${this.envDir}.lock`,
                async () => {
                    // Another window may have made it while this one waited.
                    const made = rebuild ? undefined : await this.reuse(key, true);
                    return made ?? (await this.install(bundle, key, pythonExtension, signal));
                },
                () => this.host.log(`another window is setting up ${this.envDir}; waiting for it`),
                signal,
            );
        } catch (err) {
            throw err instanceof Cancelled ? new SetupProblem(cancelledMessage()) : err;
        } finally {
            this.busy = false;
        }
    }

    private bundle(): Bundle {
        const file = path.join(this.host.bundleDir, 'manifest.json');
        let text: string;
        try {
            text = fs.readFileSync(file, 'utf8');
        } catch {
            throw new SetupProblem(noBundleMessage(`${file} is missing`));
        }
        try {
            return parseBundle(text);
        } catch (err) {
            throw new SetupProblem(noBundleMessage(err instanceof Error ? err.message : String(err)));
        }
    }

    /** The environment's Python when it is there, this package's, and can run the daemon. */
    private async reuse(key: string, quiet = false): Promise<string | undefined> {
        const marker = currentMarker(readMarker(this.envDir), key);
        if (marker === undefined) {
            if (!quiet && fs.existsSync(this.envDir)) {
                this.host.log(`${this.envDir} was made by another version of the extension, or not finished: making it again`);
            }
            return undefined;
        }
        const python = venvPython(this.envDir, process.platform);
        const check = await checkHdcontext(python);
        if (!check.ok) {
            this.host.log(`${this.envDir} no longer runs the daemon (${check.detail}): making it again`);
            return undefined;
        }
        this.host.log(`using the daemon environment ${this.envDir} (hdcontext ${check.version}, Python ${marker.pythonVersion}, made ${marker.createdAt})`);
        return python;
    }

    private async install(bundle: Bundle, key: string, pythonExtension: string | undefined, signal?: AbortSignal): Promise<string> {
        const candidates = pythonCandidates(pythonExtension, process.platform);
        const found: (PythonFound | undefined)[] = [];
        for (const c of candidates) {
            const p = await probePython(c);
            this.host.log(`Python candidate ${c.command} (${c.source}): ${p ? `${versionText(p.version)} at ${p.executable}${p.canVenv ? '' : ', without venv/ensurepip'}` : 'not found'}`);
            found.push(p);
            if (p && chooseBasePython([p]).ok) {
                break;
            }
        }
        const base = chooseBasePython(found);
        if (!base.ok) {
            throw new SetupProblem(noPythonMessage(base, process.platform));
        }
        const plan = installPlan({
            bundle,
            bundleDir: this.host.bundleDir,
            envDir: this.envDir,
            python: base.python,
            platform: process.platform,
            displayPath: tildePath,
        });
        this.host.log(`setting up the daemon: ${plan.summary}`);
        const started = Date.now();
        let log = '';
        let downloaded = 0;
        const outcome = await vscode.window.withProgress(
            { location: vscode.ProgressLocation.Notification, title: 'hdcontext: setting up its daemon', cancellable: true },
            async (progress, token) => {
                const abort = new AbortController();
                const sub = token.onCancellationRequested(() => abort.abort());
                const stop = () => abort.abort();
                signal?.addEventListener('abort', stop, { once: true });
                let stepText = '';
                const show = () => progress.report({ message: `${plan.summary} ${stepText}${downloaded ? `, ${formatBytes(downloaded)} downloaded so far` : ''}…` });
                try {
                    await runPlan(
                        plan,
                        this.envDir,
                        {
                            step: (step, i, n) => {
                                stepText = `Step ${i + 1} of ${n}: ${step.label}`;
                                log = '';
                                show();
                            },
                            line: (text) => {
                                this.host.output.appendLine(`[pip] ${text}`);
                                log += `${text}\n`;
                                const bytes = downloadBytes(text);
                                if (bytes !== undefined) {
                                    downloaded += bytes;
                                    show();
                                }
                            },
                        },
                        abort.signal,
                    );
                    return undefined;
                } catch (err) {
                    return err;
                } finally {
                    sub.dispose();
                    signal?.removeEventListener('abort', stop);
                }
            },
        );
        if (outcome instanceof Cancelled) {
            this.host.log('setting up the daemon was cancelled');
            throw new SetupProblem(cancelledMessage());
        }
        if (outcome instanceof StepFailed) {
            this.host.log(`${outcome.step.label} failed (${outcome.exit})`);
            const failure = classifyPipFailure(outcome.log || log, plan.offline);
            throw new SetupProblem(
                failure.kind === 'unreachable'
                    ? unreachableMessage(failure, bundle, base.python, vscodeTarget(process.platform, process.arch, isMusl()))
                    : installFailedMessage(outcome.step.label, outcome.exit, outcome.log || log),
            );
        }
        if (outcome !== undefined) {
            throw outcome;
        }
        const python = venvPython(this.envDir, process.platform);
        const check = await checkHdcontext(python);
        if (!check.ok) {
            removeEnv(this.envDir);
            throw new SetupProblem(brokenEnvMessage(python, check.detail));
        }
        writeMarker(this.envDir, {
            key,
            hdcontext: check.version,
            python: base.python.executable,
            pythonVersion: versionText(base.python.version),
            offline: plan.offline,
            createdAt: new Date().toISOString(),
        });
        this.host.log(
            `the daemon environment is ready: ${this.envDir}, ${formatBytes(folderBytes(this.envDir))} on disk, ` +
                `${plan.offline ? 'all from the bundled wheels' : `${formatBytes(downloaded)} downloaded`}, in ${((Date.now() - started) / 1000).toFixed(1)} s`,
        );
        return python;
    }
}

/** The home folder as ~, for messages. */
function tildePath(p: string): string {
    const home = os.homedir();
    return home && (p === home || p.startsWith(home + path.sep)) ? `~${p.slice(home.length)}` : p;
}

/** Whether this Linux uses musl (Alpine): its package is alpine-*, not linux-*. */
function isMusl(): boolean {
    if (process.platform !== 'linux') {
        return false;
    }
    const report = process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined;
    return report?.header !== undefined && !report.header.glibcVersionRuntime;
}
