/**
 * *hdcontext: Show Savings* with the fake `vscode` module and the real daemon: the webview gets
 * the daemon's page behind a policy that lets only its nonce run, for the window's sessions, and
 * new figures are posted to it as calls come in, without a reload.
 */

import './register';

import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';

import type { HdcontextApi } from '../../api';
import { activate, deactivate } from '../../src/extension';
import type { SavingsFigures } from '../../src/protocol';
import { FIGURES_MESSAGE, SHOW_SAVINGS_COMMAND, webviewPolicy } from '../../src/savings';
import { VIEW_TYPE } from '../../src/savingsView';
import { readThenWrite } from '../helpers/conversation';
import { VENV_PYTHON, tempDir } from '../helpers/realDaemon';
import { FakeLanguageClient } from './fakeClient';
import { Uri, resetState, state } from './vscodeMock';

const factory = (s: unknown, c: unknown) => new FakeLanguageClient(s, c) as never;
const until = async (ok: () => boolean, what: string, ms = 15000) => {
    const end = Date.now() + ms;
    while (!ok()) {
        if (Date.now() > end) {
            assert.fail(`timeout: ${what}`);
        }
        await new Promise((r) => setTimeout(r, 20));
    }
};

describe('hdcontext: Show Savings', () => {
    let api: HdcontextApi;
    let ctx: { subscriptions: Array<{ dispose(): unknown }>; globalStorageUri: Uri };

    beforeEach(async () => {
        resetState();
        FakeLanguageClient.instances = [];
        state.config['hdcontext.server.pythonPath'] = VENV_PYTHON;
        ctx = { subscriptions: [], globalStorageUri: Uri.file(tempDir('savings-storage')) };
        api = await activate(ctx as never, factory);
    });
    afterEach(async () => {
        await deactivate();
        ctx.subscriptions.forEach((d) => d.dispose());
    });

    it("opens the page of the window's sessions behind a nonce-only policy, and posts new figures", async () => {
        await api.open('window-chat', { model: 'claude-sonnet-4-5' });
        await api.append('window-chat', readThenWrite());
        await api.compact('window-chat');

        await state.commands.get(SHOW_SAVINGS_COMMAND)?.();
        assert.deepEqual(state.errors, []);
        assert.equal(state.panels.length, 1);
        const panel = state.panels[0];
        assert.equal(panel.viewType, VIEW_TYPE);
        assert.equal(panel.options.enableScripts, true);
        assert.equal(panel.options.enableCommandUris, false);
        assert.deepEqual(panel.options.localResourceRoots, []);
        const html = panel.webview.html;
        const nonce = /<script nonce="([^"]+)">/.exec(html)?.[1];
        assert.ok(nonce, 'the script carries a nonce');
        assert.ok(html.includes(`<meta http-equiv="Content-Security-Policy" content="${webviewPolicy(nonce)}">`));
        assert.ok(html.includes(`<style nonce="${nonce}">`));
        assert.ok(html.includes('"sessionId":"window-chat"'));

        // A new call: the figures come to the open page by postMessage, not as a new page.
        await api.compact('window-chat');
        await until(() => panel.posted.length > 0, 'figures posted after the call');
        const message = panel.posted[panel.posted.length - 1] as { type: string; figures: SavingsFigures };
        assert.equal(message.type, FIGURES_MESSAGE);
        assert.equal(message.figures.totals.calls, 2);
        assert.deepEqual(
            message.figures.sessions.map((s) => s.sessionId),
            ['window-chat'],
        );
        assert.equal(panel.htmls.length, 1);

        // Run again: the same panel, brought forward with a fresh page (and a fresh nonce).
        await state.commands.get(SHOW_SAVINGS_COMMAND)?.();
        assert.equal(state.panels.length, 1);
        assert.equal(panel.revealed, 1);
        assert.equal(panel.htmls.length, 2);
        assert.notEqual(/<script nonce="([^"]+)">/.exec(panel.webview.html)?.[1], nonce);

        // Closed: no more updates.
        panel.dispose();
        const posted = panel.posted.length;
        await api.compact('window-chat');
        await new Promise((r) => setTimeout(r, 600));
        assert.equal(panel.posted.length, posted);
    });
});
