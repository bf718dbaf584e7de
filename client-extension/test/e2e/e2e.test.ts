/**
 * End to end, in a real VS Code: code-server 4.100.3 (VS Code 1.100) driven by headless Chromium
 * through playwright-core (shared/recipes/vscode-e2e). The built hdcontext .vsix and a test
 * chat extension (fixture-extension/, which uses the exported API) are installed into a fresh
 * code-server; the test reads the rendered status bar:
 *   1. the token figure of the fixture's session appears (a read of src/app.py and a later write);
 *   2. after "hdcontext: Compact Now" (command palette) the figure drops (the stale read is gone);
 *   3. after an edit of the user settings.json (hdcontext.contextLimit) the daemon applies it:
 *      the figure's limit changes, without a restart.
 * Screenshots go to <repo>/test-artifacts/e2e/. Needs test/e2e/setup.sh (make e2e runs it).
 */

import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { chromium, type BrowserContext, type Locator, type Page } from 'playwright-core';

import type { Status } from '../../src/protocol';
import { statusText } from '../../src/status';
import { EXTENSION_ROOT, REPO_ROOT, VENV_PYTHON } from '../helpers/realDaemon';

const CS_VERSION = '4.100.3';
const E2E_HOME = process.env.HDCONTEXT_E2E_HOME ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'hdcontext-e2e');
const CODE_SERVER = path.join(E2E_HOME, `code-server-${CS_VERSION}`, 'node_modules', '.bin', 'code-server');
const CHROMIUM = process.env.HDCONTEXT_E2E_CHROMIUM ?? '/usr/bin/chromium';
const VSIX = path.join(EXTENSION_ROOT, 'hdcontext.vsix');
const FIXTURE_VSIX = path.join(EXTENSION_ROOT, 'out', 'e2e', 'hdcontext-e2e-fixture.vsix');
const ARTIFACTS = path.join(REPO_ROOT, 'test-artifacts', 'e2e');
const STEP_MS = 60000;

interface Report {
    events: Status[];
    appended: Status | null;
    error: string | null;
}

function freePort(): Promise<number> {
    return new Promise((resolve, reject) => {
        const server = net.createServer();
        server.on('error', reject);
        server.listen(0, '127.0.0.1', () => {
            const { port } = server.address() as net.AddressInfo;
            server.close(() => resolve(port));
        });
    });
}

async function poll<T>(what: string, get: () => T | undefined | Promise<T | undefined>, ms = STEP_MS): Promise<T> {
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

/** `7.9k / 200k · 3.9%` → tokens and limit, in tokens. */
function parseFigure(text: string): { tokens: number; limit: number } | undefined {
    const m = /([\d.]+)([kMG]?) \/ ([\d.]+)([kMG]?) · /.exec(text);
    if (!m) {
        return undefined;
    }
    const scale = (u: string) => (u === 'k' ? 1e3 : u === 'M' ? 1e6 : u === 'G' ? 1e9 : 1);
    return { tokens: Number(m[1]) * scale(m[2]), limit: Number(m[3]) * scale(m[4]) };
}

describe('e2e: the extension in code-server', { timeout: 5 * 60 * 1000 }, () => {
    const t0 = Date.now();
    let run: string;
    let ud: string;
    let settingsFile: string;
    let reportFile: string;
    let server: ChildProcess | undefined;
    let browser: BrowserContext | undefined;
    let page: Page;
    let item: Locator;
    let failed = false;
    const timings: string[] = [];
    const mark = (what: string) => timings.push(`${what} ${((Date.now() - t0) / 1000).toFixed(1)} s`);

    let lastReport: Report = { events: [], appended: null, error: null };
    const report = (): Report => {
        try {
            lastReport = JSON.parse(fs.readFileSync(reportFile, 'utf8')) as Report;
        } catch {
            // not written yet
        }
        return lastReport;
    };
    const lastEvent = (): Status | undefined => report().events.filter((s) => s.sessionId === 'e2e-chat').pop();
    const shot = async (name: string): Promise<string> => {
        fs.mkdirSync(ARTIFACTS, { recursive: true });
        const file = path.join(ARTIFACTS, name);
        await page.screenshot({ path: file });
        return file;
    };
    /** Runs a command from the command palette (F1). */
    const runCommand = async (title: string): Promise<void> => {
        await page.keyboard.press('F1');
        const input = page.locator('.quick-input-widget input');
        await input.waitFor({ state: 'visible', timeout: STEP_MS });
        await input.fill(`>${title}`);
        await page.locator('.quick-input-list .monaco-list-row', { hasText: title.replace(/^.*: /, '') }).first().waitFor({ timeout: STEP_MS });
        await page.keyboard.press('Enter');
    };
    /** Waits until the hdcontext item shows exactly the figure of this Status. */
    const shows = async (want: (s: Status) => boolean, what: string): Promise<{ status: Status; text: string }> =>
        poll(what, async () => {
            const s = lastEvent();
            if (!s || !want(s)) {
                return undefined;
            }
            const text = (await item.innerText().catch(() => '')).trim();
            return text === statusText(s) ? { status: s, text } : undefined;
        });

    before(async () => {
        for (const [file, how] of [
            [CODE_SERVER, 'run client-extension/test/e2e/setup.sh (make e2e does)'],
            [CHROMIUM, 'run client-extension/test/e2e/setup.sh (make e2e does)'],
            [VSIX, 'run make vsix'],
            [FIXTURE_VSIX, 'run make e2e'],
            [VENV_PYTHON, 'run make unit'],
        ]) {
            assert.ok(fs.existsSync(file), `${file} is missing: ${how}`);
        }
        fs.rmSync(ARTIFACTS, { recursive: true, force: true });
        run = fs.mkdtempSync(path.join(os.tmpdir(), 'hdcontext-e2e-'));
        ud = path.join(run, 'ud');
        const extDir = path.join(run, 'ext');
        const ws = path.join(run, 'ws');
        reportFile = path.join(run, 'fixture-report.json');
        for (const d of [path.join(ud, 'User'), extDir, path.join(ws, 'src'), path.join(run, 'tmp'), path.join(run, 'xdg')]) {
            fs.mkdirSync(d, { recursive: true });
        }
        fs.writeFileSync(path.join(ws, 'src', 'app.py'), 'def function_0(value):\n    return value + 1\n');
        settingsFile = path.join(ud, 'User', 'settings.json');
        fs.writeFileSync(
            settingsFile,
            JSON.stringify(
                {
                    'hdcontext.server.pythonPath': VENV_PYTHON,
                    'workbench.startupEditor': 'none',
                    'telemetry.telemetryLevel': 'off',
                    'extensions.autoCheckUpdates': false,
                    'extensions.autoUpdate': false,
                    'workbench.tips.enabled': false,
                    'security.workspace.trust.enabled': false,
                    // The test types into settings.json: no completions or auto-closing in its way.
                    'editor.quickSuggestions': { other: false, comments: false, strings: false },
                    'editor.suggestOnTriggerCharacters': false,
                    'editor.autoClosingBrackets': 'never',
                    'editor.autoClosingQuotes': 'never',
                    'editor.formatOnType': false,
                    ...(process.env.HDCONTEXT_E2E_TRACE ? { 'hdcontext.trace.server': 'verbose' } : {}),
                },
                null,
                2,
            ),
        );
        const env = {
            ...process.env,
            TMPDIR: path.join(run, 'tmp'),
            XDG_CONFIG_HOME: path.join(run, 'xdg', 'config'),
            XDG_DATA_HOME: path.join(run, 'xdg', 'data'),
            XDG_CACHE_HOME: path.join(run, 'xdg', 'cache'),
            HDCONTEXT_FIXTURE_REPORT: reportFile,
        };
        for (const vsix of [VSIX, FIXTURE_VSIX]) {
            execFileSync(CODE_SERVER, ['--user-data-dir', ud, '--extensions-dir', extDir, '--install-extension', vsix], { env, stdio: 'pipe' });
        }
        mark('extensions installed');
        const port = await freePort();
        const log = fs.openSync(path.join(run, 'code-server.log'), 'w');
        server = spawn(
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
                ws,
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
        mark('code-server up');
        const chromeDir = path.join(run, 'chromium');
        browser = await chromium.launchPersistentContext(chromeDir, {
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
        page = browser.pages()[0] ?? (await browser.newPage());
        await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(ws)}`, { waitUntil: 'domcontentloaded' });
        await page.waitForSelector('.monaco-workbench', { timeout: STEP_MS });
        mark('workbench visible');
        item = page
            .locator('#workbench\\.parts\\.statusbar .statusbar-item')
            .filter({ hasText: / \/ \d+(\.\d)?[kMG]? · / })
            .first();
    });

    after(async () => {
        try {
            if (browser && page && failed) {
                await shot('failure.png').catch(() => undefined);
            }
            await browser?.close();
        } finally {
            if (server?.pid) {
                try {
                    process.kill(-server.pid, 'SIGTERM'); // the whole group: extension hosts and the daemon too
                } catch {
                    // already gone
                }
                await new Promise((r) => setTimeout(r, 500));
                try {
                    process.kill(-server.pid, 'SIGKILL');
                } catch {
                    // gone
                }
            }
        }
        mark('done');
        if (failed) {
            const logs = path.join(ARTIFACTS, 'logs');
            fs.mkdirSync(logs, { recursive: true });
            fs.cpSync(run, logs, {
                recursive: true,
                filter: (src) => {
                    const stat = fs.lstatSync(src);
                    return (stat.isDirectory() || stat.isFile()) && !src.startsWith(path.join(run, 'chromium')) && !src.startsWith(path.join(run, 'ext'));
                },
            });
            console.log(`e2e: logs kept in ${logs}`);
        }
        if (run) {
            fs.rmSync(run, { recursive: true, force: true });
        }
        console.log(`e2e timings: ${timings.join(', ')}`);
    });

    it('the token figure of the appended conversation appears in the status bar', async (t) => {
        try {
            const appended = await poll('the fixture appended its conversation', () => {
                const r = report();
                if (r.error) {
                    throw new Error(`the fixture failed: ${r.error}`);
                }
                return r.appended ?? undefined;
            });
            assert.equal(appended.entryCount, 6);
            const { status, text } = await shows((s) => s.version >= appended.version, 'the figure after the append');
            assert.equal(status.totalTokens, appended.totalTokens);
            assert.equal(status.contextLimit, 200000);
            mark('figure shown');
            t.diagnostic(`status bar after the append: "${text}"`);
            t.diagnostic(`screenshot: ${await shot('1-appended.png')}`);
        } catch (err) {
            failed = true;
            throw err;
        }
    });

    it('the figure drops after "hdcontext: Compact Now"', async (t) => {
        try {
            const before = lastEvent() as Status;
            await runCommand('hdcontext: Compact Now');
            const { status, text } = await shows((s) => s.version > before.version || s.totalTokens < before.totalTokens, 'the figure after compaction');
            assert.ok(status.totalTokens < before.totalTokens, `${status.totalTokens} < ${before.totalTokens}`);
            assert.ok(status.savedTokens > 0);
            const shown = parseFigure(text);
            const was = parseFigure(statusText(before));
            assert.ok(shown && was && shown.tokens < was.tokens, `"${text}" shows fewer tokens than "${statusText(before)}"`);
            mark('figure dropped');
            t.diagnostic(`status bar after compaction: "${text}" (was "${statusText(before)}", saved ${status.savedTokens} tokens)`);
            // The tooltip: strategy, threshold, saved tokens.
            await item.hover();
            const hover = page.locator('.monaco-hover, .workbench-hover').filter({ hasText: 'Saved so far' }).first();
            await hover.waitFor({ timeout: 15000 });
            const tip = await hover.innerText();
            assert.match(tip, /Strategy: high-density · compresses at 85%/);
            t.diagnostic(`tooltip: ${JSON.stringify(tip)}`);
            t.diagnostic(`screenshot: ${await shot('2-compacted.png')}`);
            await page.mouse.move(700, 300);
        } catch (err) {
            failed = true;
            throw err;
        }
    });

    it('an edit of the user settings.json (hdcontext.contextLimit) is applied by the running daemon', async (t) => {
        // Edited in the editor ("Preferences: Open User Settings (JSON)", type, save), as a user
        // does: code-server 4.100.3 does not reload a settings.json changed behind its back (its
        // server-side watcher sees the change, the workbench never re-reads the file).
        try {
            await runCommand('Preferences: Open User Settings (JSON)');
            const editor = page.locator('.monaco-editor[data-uri$="settings.json"]').first();
            await editor.waitFor({ timeout: STEP_MS });
            await editor.locator('.view-lines').click();
            await page.keyboard.press('Control+Home');
            await page.keyboard.press('End');
            await page.keyboard.press('Enter');
            await page.keyboard.insertText('"hdcontext.contextLimit": 100000,');
            await page.keyboard.press('Control+s');
            await poll('settings.json saved', () => {
                try {
                    return (JSON.parse(fs.readFileSync(settingsFile, 'utf8')) as Record<string, unknown>)['hdcontext.contextLimit'] === 100000 ? true : undefined;
                } catch {
                    return undefined; // being written
                }
            });
            const { status, text } = await shows((s) => s.contextLimit === 100000, 'the figure with the new limit');
            assert.match(text, / \/ 100k · /);
            // The daemon rounds percent to 2 decimals.
            assert.ok(Math.abs(status.percent - (100 * status.totalTokens) / 100000) <= 0.005, String(status.percent));
            mark('setting applied');
            t.diagnostic(`status bar after the settings change: "${text}"`);
            const file = await shot('3-settings.png');
            const main = path.join(path.dirname(ARTIFACTS), 'e2e-statusbar.png');
            fs.copyFileSync(file, main);
            t.diagnostic(`screenshot: ${main}`);
            console.log(`e2e screenshot: ${main}`);
        } catch (err) {
            failed = true;
            throw err;
        }
    });
});
