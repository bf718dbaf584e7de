/**
 * End to end, in a real VS Code (codeServer.ts: code-server 4.139.1 driven by headless Chromium).
 * The built hdcontext .vsix and a test chat extension (fixture-extension/, which uses the
 * exported API) are installed into a fresh code-server; the test reads the rendered status bar:
 *   1. the token figure of the fixture's session appears (a read of src/app.py and a later write);
 *   2. after "hdcontext: Compact Now" (command palette) the figure drops (the stale read is gone);
 *   3. after an edit of the user settings.json (hdcontext.contextLimit) the daemon applies it:
 *      the figure's limit changes, without a restart.
 * Screenshots go to <repo>/test-artifacts/e2e/. Needs test/e2e/setup.sh (make e2e runs it).
 */

import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';

import type { Locator } from 'playwright-core';

import type { Status } from '../../src/protocol';
import { statusText } from '../../src/status';
import { EXTENSION_ROOT, VENV_PYTHON } from '../helpers/realDaemon';
import { ARTIFACTS, CodeServerRun, E2E_VSIX, EDITOR_TESTS_SKIPPED, poll, STEP_MS } from './codeServer';

const FIXTURE_VSIX = path.join(EXTENSION_ROOT, 'out', 'e2e', 'hdcontext-e2e-fixture.vsix');

interface Report {
    events: Status[];
    appended: Status | null;
    error: string | null;
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

describe('e2e: the status bar, in code-server', { timeout: 5 * 60 * 1000 }, () => {
    let run: CodeServerRun;
    let reportFile: string;
    let item: Locator;

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
        if (EDITOR_TESTS_SKIPPED) {
            return;
        }
        assert.ok(fs.existsSync(VENV_PYTHON), `${VENV_PYTHON} is missing: run make unit`);
        reportFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'hdcontext-e2e-report-')), 'fixture-report.json');
        run = await CodeServerRun.start({
            name: 'e2e',
            extensions: [E2E_VSIX, FIXTURE_VSIX],
            files: { 'src/app.py': 'def function_0(value):\n    return value + 1\n' },
            machineSettings: { 'hdcontext.server.pythonPath': VENV_PYTHON },
            settings: {
                // The test types into settings.json: no completions or auto-closing in its way.
                'editor.quickSuggestions': { other: false, comments: false, strings: false },
                'editor.suggestOnTriggerCharacters': false,
                'editor.autoClosingBrackets': 'never',
                'editor.autoClosingQuotes': 'never',
                'editor.formatOnType': false,
                ...(process.env.HDCONTEXT_E2E_TRACE ? { 'hdcontext.trace.server': 'verbose' } : {}),
            },
            env: { HDCONTEXT_FIXTURE_REPORT: reportFile },
        });
        item = run.page
            .locator('#workbench\\.parts\\.statusbar .statusbar-item')
            .filter({ hasText: / \/ \d+(\.\d)?[kMG]? · / })
            .first();
    });

    after(async () => {
        await run?.close();
        if (reportFile) {
            fs.rmSync(path.dirname(reportFile), { recursive: true, force: true });
        }
    });

    it('the token figure of the appended conversation appears in the status bar', { skip: EDITOR_TESTS_SKIPPED }, async (t) => {
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
            run.mark('figure shown');
            t.diagnostic(`status bar after the append: "${text}"`);
            t.diagnostic(`screenshot: ${await run.shot('1-appended.png')}`);
        } catch (err) {
            run.failed = true;
            throw err;
        }
    });

    it('the figure drops after "hdcontext: Compact Now"', { skip: EDITOR_TESTS_SKIPPED }, async (t) => {
        try {
            const before = lastEvent() as Status;
            await run.runCommand('hdcontext: Compact Now');
            const { status, text } = await shows((s) => s.version > before.version || s.totalTokens < before.totalTokens, 'the figure after compaction');
            assert.ok(status.totalTokens < before.totalTokens, `${status.totalTokens} < ${before.totalTokens}`);
            assert.ok(status.savedTokens > 0);
            const shown = parseFigure(text);
            const was = parseFigure(statusText(before));
            assert.ok(shown && was && shown.tokens < was.tokens, `"${text}" shows fewer tokens than "${statusText(before)}"`);
            run.mark('figure dropped');
            t.diagnostic(`status bar after compaction: "${text}" (was "${statusText(before)}", saved ${status.savedTokens} tokens)`);
            // The tooltip: strategy, threshold, saved tokens.
            await item.hover();
            const hover = run.page.locator('.monaco-hover, .workbench-hover').filter({ hasText: 'Saved so far' }).first();
            await hover.waitFor({ timeout: 15000 });
            const tip = await hover.innerText();
            assert.match(tip, /Strategy: high-density · compresses at 85%/);
            t.diagnostic(`tooltip: ${JSON.stringify(tip)}`);
            t.diagnostic(`screenshot: ${await run.shot('2-compacted.png')}`);
            await run.page.mouse.move(700, 300);
        } catch (err) {
            run.failed = true;
            throw err;
        }
    });

    it('an edit of the user settings.json (hdcontext.contextLimit) is applied by the running daemon', { skip: EDITOR_TESTS_SKIPPED }, async (t) => {
        // Edited in the editor ("Preferences: Open User Settings (JSON)", type, save), as a user
        // does (code-server 4.100.3 did not reload a settings.json changed behind its back: its
        // server-side watcher saw the change, the workbench never re-read the file).
        try {
            await run.runCommand('Preferences: Open User Settings (JSON)');
            const editor = run.page.locator('.monaco-editor[data-uri$="settings.json"]').first();
            await editor.waitFor({ timeout: STEP_MS });
            await editor.locator('.view-lines').click();
            await run.page.keyboard.press('Control+Home');
            await run.page.keyboard.press('End');
            await run.page.keyboard.press('Enter');
            await run.page.keyboard.insertText('"hdcontext.contextLimit": 100000,');
            await run.page.keyboard.press('Control+s');
            await poll('settings.json saved', () => {
                try {
                    return (JSON.parse(fs.readFileSync(run.settingsFile, 'utf8')) as Record<string, unknown>)['hdcontext.contextLimit'] === 100000 ? true : undefined;
                } catch {
                    return undefined; // being written
                }
            });
            const { status, text } = await shows((s) => s.contextLimit === 100000, 'the figure with the new limit');
            assert.match(text, / \/ 100k · /);
            // The daemon rounds percent to 2 decimals.
            assert.ok(Math.abs(status.percent - (100 * status.totalTokens) / 100000) <= 0.005, String(status.percent));
            run.mark('setting applied');
            t.diagnostic(`status bar after the settings change: "${text}"`);
            const file = await run.shot('3-settings.png');
            const main = path.join(ARTIFACTS, 'e2e-statusbar.png');
            fs.copyFileSync(file, main);
            t.diagnostic(`screenshot: ${main}`);
            console.log(`e2e screenshot: ${main}`);
        } catch (err) {
            run.failed = true;
            throw err;
        }
    });
});
