/**
 * End to end, in VS Code's real chat panel (codeServer.ts: code-server 4.139.1, headless Chromium;
 * shared/recipes/vscode-chat). Installed: the built hdcontext .vsix and a test-only extension
 * (chat-fixture/): the model "Fake Backend 1", which records every request it receives, file
 * tools, and `@agent`, which runs the picked model as an agent does (the whole conversation on
 * every call, tool calls run, tool results sent back). `hdcontext.chat.wrapVendors` is
 * `["fakebackend"]`, so hdcontext adds "Fake Backend 1 · hdcontext" to the model picker.
 *
 * The test picks that model in the picker and chats through it: a read of src/app.py, then a
 * write of it (which makes the read stale), then a retrieve of the pruned read, then a request
 * it cancels. It checks the reply in the panel, what the backend received, the status bar,
 * `@hdcontext /status` (with its money line, at prices the test sets for the fake model), the
 * savings view (*hdcontext: Show Savings*), and the cancellation reaching the backend. Screenshots go to
 * test-artifacts/chat/, with tokens.json: what the backend received through the wrapper and what
 * the agent sent (what it would have received without it).
 */

import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';

import type { Locator } from 'playwright-core';

import { formatTokens } from '../../src/status';
import { bigFile } from '../helpers/conversation';
import { EXTENSION_ROOT, VENV_PYTHON } from '../helpers/realDaemon';
import { MODEL, pairingProblems, pickedModel, pickModel, readLog, reply as replyIn, send as sendIn, toolIds, widenChat, type Message } from './chatPanel';
import { ARTIFACTS, CodeServerRun, E2E_VSIX, EDITOR_TESTS_SKIPPED, poll, STEP_MS } from './codeServer';

const FIXTURE_VSIX = path.join(EXTENSION_ROOT, 'out', 'e2e', 'hdcontext-chat-e2e-fixture.vsix');
const APP = bigFile(150);
/** The fake backend's model id (chat-fixture/extension.js), and prices for it (dollars per million tokens). */
const FAKE_MODEL_ID = 'fake-1';
const FAKE_PRICES = { input: 3, output: 15, cacheRead: 0.3, cacheWrite5m: 3.75 };

describe('e2e: the chat panel, through a "· hdcontext" model', { timeout: 6 * 60 * 1000 }, () => {
    let run: CodeServerRun;
    let logFile: string;
    let statusItem: Locator;

    const log = () => readLog(logFile);
    const backendCalls = () => log().filter((l) => l.hop === 'backend');

    const send = (text: string) => sendIn(run, text);
    const reply = (pattern: RegExp) => replyIn(run, pattern);
    /** Sent requests of one agent turn: the backend calls logged after `since`. */
    const callsSince = (since: number) => backendCalls().filter((l) => l.at >= since);

    before(async () => {
        if (EDITOR_TESTS_SKIPPED) {
            return;
        }
        assert.ok(fs.existsSync(VENV_PYTHON), `${VENV_PYTHON} is missing: run make unit`);
        // In the artifacts folder (which the run makes afresh): what each hop received, kept.
        logFile = path.join(ARTIFACTS, 'chat', 'chat.log');
        run = await CodeServerRun.start({
            name: 'chat',
            extensions: [E2E_VSIX, FIXTURE_VSIX],
            files: { 'src/app.py': APP },
            machineSettings: { 'hdcontext.server.pythonPath': VENV_PYTHON },
            settings: {
                'hdcontext.chat.wrapVendors': ['fakebackend'],
                // The fake model is in no price table: the user's own prices for it, so that the
                // money line and the savings view show money (a model without them: tokens only).
                'hdcontext.cache.prices': { [FAKE_MODEL_ID]: FAKE_PRICES },
                'hdcontextE2E.logFile': logFile,
                ...(process.env.HDCONTEXT_E2E_TRACE ? { 'hdcontext.trace.server': 'verbose' } : {}),
            },
        });
        statusItem = run.page
            .locator('#workbench\\.parts\\.statusbar .statusbar-item')
            .filter({ hasText: / \/ \d+(\.\d)?[kMG]? · / })
            .first();
    });

    after(async () => {
        await run?.close();
    });

    it('the model picker lists "Fake Backend 1 · hdcontext", and picking it works', { skip: EDITOR_TESTS_SKIPPED }, async (t) => {
        await run.guarded(async () => {
            await widenChat(run);
            await pickModel(run, MODEL, async () => {
                t.diagnostic(`screenshot: ${await run.shot('chat-picker.png')}`);
            });
            run.mark('model picked');
        });
    });

    let readCallId = '';

    it('turn 1, a file read: the reply is shown, the backend got the conversation', { skip: EDITOR_TESTS_SKIPPED }, async (t) => {
        await run.guarded(async () => {
            // The panel drops a choice whose model leaves the list (then the requests bypass hdcontext).
            assert.equal(await pickedModel(run), MODEL, 'the picked model is still the chat panel\'s');
            const since = Date.now();
            await send('@agent read src/app.py');
            const text = await reply(/Read it: \d+ lines/);
            run.mark('turn 1 answered');
            t.diagnostic(`reply: ${JSON.stringify(text)}`);
            const calls = callsSince(since);
            assert.equal(calls.length, 2, 'the read request, then the one with its result');
            const last = calls[1].messages as Message[];
            readCallId = toolIds(last).calls[0];
            assert.match(readCallId, /^call-read-/);
            assert.deepEqual(toolIds(last).results, [readCallId]);
            assert.ok(last.some((m) => m.parts.some((p) => p.type === 'result' && p.text === APP)), 'the file content reached the backend');
            assert.ok(log().some((l) => l.hop === 'agent' && l.model === 'hdcontext/fakebackend/fake-1'), 'the agent used the picked model');
        });
    });

    it('turn 2, a write that makes the read stale: the backend got the compacted history, tool calls paired', { skip: EDITOR_TESTS_SKIPPED }, async (t) => {
        await run.guarded(async () => {
            const since = Date.now();
            await send('@agent write src/app.py');
            const text = await reply(/Wrote it\./);
            run.mark('turn 2 answered');
            t.diagnostic(`reply: ${JSON.stringify(text)}`);
            const calls = callsSince(since);
            assert.equal(calls.length, 2);
            const last = calls[1].messages as Message[];
            assert.deepEqual(pairingProblems(last), [], 'every tool call answered, every result after its call');
            const ids = toolIds(last);
            const write = ids.calls.find((c) => c.startsWith('call-write-'));
            assert.ok(write && ids.results.includes(write), 'the write and its result are there');
            const sent = log().filter((l) => l.hop === 'agent-send').pop();
            // What the daemon did with the stale read depends on the schedule (cache-aware by
            // default): pruned now, or kept while the status bar shows it as pending.
            if (ids.calls.includes(readCallId)) {
                await poll('the status bar shows the pruning as pending', async () => ((await statusItem.innerText().catch(() => '')).includes('pending') ? true : undefined));
                t.diagnostic('the stale read was kept (pending, cache-aware schedule)');
            } else {
                assert.ok(!ids.results.includes(readCallId), 'the read result went with its call');
                assert.ok((calls[1].tokens ?? 0) < (sent?.tokens as number), 'the backend received fewer tokens than the agent sent');
                t.diagnostic(`the stale read was pruned: backend received ${calls[1].tokens} tokens, the agent sent ${String(sent?.tokens)}`);
            }
            t.diagnostic(`screenshot: ${await run.shot('chat-panel.png')}`);
        });
    });

    it("the status bar shows the conversation's tokens, the figure @hdcontext /status gives", { skip: EDITOR_TESTS_SKIPPED }, async (t) => {
        await run.guarded(async () => {
            await send('@hdcontext /status');
            // The panel draws a reply as it streams: read it once its last line (the session)
            // is there, not at its first (CI once read it cut after "Saved so far").
            const text = await reply(/Session: \S+/);
            assert.match(text, /go to the model on the next call/);
            const m = /([\d,]+)\s+of\s+([\d,]+)\s+tokens/.exec(text);
            assert.ok(m, text);
            const [tokens, limit] = [Number(m[1].replace(/,/g, '')), Number(m[2].replace(/,/g, ''))];
            assert.equal(limit, 100000, "the session's limit is the model's maxInputTokens");
            const shown = await poll('the status bar figure', async () => {
                const s = (await statusItem.innerText().catch(() => '')).trim();
                return s.includes(`${formatTokens(tokens)} / 100k`) ? s : undefined;
            });
            run.mark('status shown');
            t.diagnostic(`@hdcontext /status: ${JSON.stringify(text)}`);
            // The money line: the calls as billed and without hdcontext, at the user's prices.
            assert.match(text, /Cost: \$\d+\.\d\d as billed for \d+ calls?; without hdcontext \$\d+\.\d\d/);
            t.diagnostic(`status bar: ${JSON.stringify(shown)}`);
            await statusItem.hover();
            const hover = run.page.locator('.monaco-hover, .workbench-hover').filter({ hasText: 'Saved so far' }).first();
            await hover.waitFor({ timeout: 15000 });
            const tip = await hover.innerText();
            t.diagnostic(`tooltip: ${JSON.stringify(tip)}`);
            assert.match(tip, /Show savings/, 'the link to the savings view');
            t.diagnostic(`screenshot: ${await run.shot('chat-status.png')}`);
            await run.page.mouse.move(300, 300);
        });
    });

    it('"hdcontext: Show Savings": the page of the window\'s conversation in a webview, its totals drawn', { skip: EDITOR_TESTS_SKIPPED }, async (t) => {
        await run.guarded(async () => {
            await run.runCommand('hdcontext: Show Savings');
            // A webview is an iframe (the host) holding the page's iframe (#active-frame).
            const host = run.page.locator('iframe.webview').last();
            await host.waitFor({ timeout: STEP_MS });
            const page = host.contentFrame().locator('#active-frame').contentFrame();
            const cost = page.locator('[data-testid="total-cost"]');
            await cost.waitFor({ timeout: STEP_MS });
            const totals = {
                cost: (await cost.innerText()).trim(),
                without: (await page.locator('[data-testid="total-without"]').innerText()).trim(),
                saved: (await page.locator('[data-testid="total-saved"]').innerText()).trim(),
                calls: (await page.locator('[data-testid="total-calls"]').innerText()).trim(),
            };
            run.mark('savings shown');
            t.diagnostic(`savings view totals: ${JSON.stringify(totals)}`);
            for (const key of ['cost', 'without', 'saved'] as const) {
                assert.match(totals[key], /^(-?\$\d[\d,]*\.\d\d|<\$0\.01)$/, `${key}: ${totals[key]}`);
            }
            const usageReported = log().filter((l) => l.hop === 'agent-usage').length;
            assert.ok(Number(totals.calls) >= usageReported && usageReported > 0, `${totals.calls} calls, ${usageReported} usages reported`);
            const rows = page.locator('#sessions tbody tr');
            assert.equal(await rows.count(), 1, "the window's one conversation");
            assert.match(await rows.first().innerText(), /fake-1/);
            await page.locator('#daily-chart').waitFor({ timeout: STEP_MS });
            t.diagnostic(`screenshot: ${await run.shot('savings.png')}`);
            await run.runCommand('View: Close Editor');
        });
    });

    it('hdcontext_retrieve, offered with the chat\'s tools, gives back the pruned read', { skip: EDITOR_TESTS_SKIPPED }, async (t) => {
        await run.guarded(async () => {
            assert.equal(await pickedModel(run), MODEL, 'the picked model is still the chat panel\'s');
            const since = Date.now();
            await send(`@agent retrieve ${readCallId}`);
            await reply(/hdcontext_retrieve returned \d+ characters/);
            run.mark('retrieved');
            const calls = callsSince(since);
            assert.ok(calls[0].tools?.includes('hdcontext_retrieve'), `offered: ${String(calls[0].tools)}`);
            const retrieved = log().filter((l) => l.hop === 'agent-tool' && l.name === 'hdcontext_retrieve').pop();
            assert.ok(retrieved, 'the agent ran hdcontext_retrieve');
            assert.ok(String(retrieved.text).endsWith(`\n${APP}`), 'the original read, in full');
            t.diagnostic(`retrieved ${String(retrieved.text).length} characters`);
        });
    });

    it('cancelling a request stops the backend call', { skip: EDITOR_TESTS_SKIPPED }, async (t) => {
        await run.guarded(async () => {
            await send('@agent slow');
            await reply(/Thinking slowly/);
            const started = Date.now();
            await run.page.keyboard.press('Escape');
            const stop = run.page.locator('.interactive-input-part .action-label.codicon-stop-circle, .interactive-input-part a[aria-label^="Cancel"]').first();
            if (await stop.isVisible().catch(() => false)) {
                await stop.click();
            }
            const cancelled = await poll('the backend saw the cancellation', () => log().find((l) => l.hop === 'backend-cancelled'), 15000);
            run.mark('cancelled');
            assert.ok(!log().some((l) => l.hop === 'backend-finished'), 'the backend call did not run to its end');
            t.diagnostic(`backend stopped after ${String(cancelled.after)} parts, ${cancelled.at - started} ms after the click`);
        });
    });

    it('the settings of the chat panel in the Settings UI', { skip: EDITOR_TESTS_SKIPPED }, async (t) => {
        await run.guarded(async () => {
            await run.runCommand('Preferences: Open Settings (UI)');
            const search = run.page.locator('.settings-editor .suggest-input-container .monaco-editor').first();
            await search.waitFor({ timeout: STEP_MS });
            await search.click();
            await run.page.keyboard.type('hdcontext wrap vendors pricing');
            await run.page.locator('.settings-editor .setting-item-contents', { hasText: 'Wrap Vendors' }).first().waitFor({ timeout: STEP_MS });
            await run.page.locator('.settings-editor .setting-item-contents', { hasText: 'Pricing' }).first().waitFor({ timeout: STEP_MS });
            t.diagnostic(`screenshot: ${await run.shot('chat-settings.png')}`);
        });
    });

    it('the figures: tokens the backend received through the wrapper, and what the agent sent', { skip: EDITOR_TESTS_SKIPPED }, async (t) => {
        const lines = log();
        const sent = lines.filter((l) => l.hop === 'agent-send');
        const received = lines.filter((l) => l.hop === 'backend');
        const rows = received.map((r, i) => ({ request: i + 1, agentSent: sent[i]?.tokens, backendReceived: r.tokens }));
        fs.mkdirSync(run.artifacts, { recursive: true });
        fs.writeFileSync(path.join(run.artifacts, 'tokens.json'), JSON.stringify(rows, null, 2) + '\n');
        t.diagnostic(`tokens per request (agent sent → backend received): ${rows.map((r) => `${String(r.agentSent)}→${String(r.backendReceived)}`).join(', ')}`);
        assert.equal(sent.length, received.length);
    });
});
