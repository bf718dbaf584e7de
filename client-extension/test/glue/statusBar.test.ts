import './register';

import assert from 'node:assert/strict';
import { beforeEach, describe, it } from 'node:test';

import type { Status } from '../../src/protocol';
import { SHOW_SESSIONS_COMMAND, StatusBar } from '../../src/statusBar';
import { SHOW_SAVINGS_COMMAND } from '../../src/savings';
import { MarkdownString, resetState, state, type ThemeColor } from './vscodeMock';

function status(over: Partial<Status> = {}): Status {
    const s: Status = {
        sessionId: 'chat-1',
        version: 1,
        entryCount: 6,
        totalTokens: 42100,
        contextLimit: 200000,
        threshold: 0.85,
        percent: 0,
        strategy: 'high-density',
        savedTokens: 0,
        ...over,
    };
    s.percent = (100 * s.totalTokens) / s.contextLimit;
    return s;
}

const bg = (bar: StatusBar) => (bar.item.backgroundColor as ThemeColor | undefined)?.id;

describe('StatusBar', () => {
    beforeEach(resetState);

    it('one item, shown, idle until the daemon starts, whose click opens sessions and actions', () => {
        const bar = new StatusBar();
        assert.equal(state.statusItems.length, 1);
        const item = state.statusItems[0];
        assert.ok(item.visible);
        assert.equal(item.command, SHOW_SESSIONS_COMMAND);
        assert.equal(item.text, '$(layers) hdcontext');
        assert.match(String(item.tooltip), /starts when a chat first uses it/);
        bar.starting();
        assert.match(item.text, /sync~spin/);
        bar.running();
        assert.equal(item.text, '$(layers) hdcontext');
        assert.match(String(item.tooltip), /no chat session yet/);
    });

    it('history/tokens: text, tooltip, and no colour well below the threshold', () => {
        const bar = new StatusBar();
        bar.running();
        bar.update(status({ savedTokens: 1234 }));
        assert.equal(bar.item.text, '$(layers) 42.1k / 200k · 21%');
        assert.match(String(bar.item.tooltip), /Strategy: high-density · compresses at 85% \(170,000 tokens\)/);
        assert.match(String(bar.item.tooltip), /Saved so far: 1,234 tokens/);
        assert.equal(bar.item.backgroundColor, undefined);
    });

    it('the tooltip links to the savings view, trusted for that command only', () => {
        const bar = new StatusBar();
        bar.running();
        for (const shown of [undefined, status({ sessionId: '[x](command:workbench.action.terminal.new)' })]) {
            if (shown) {
                bar.update(shown);
            }
            const tip = bar.item.tooltip;
            assert.ok(tip instanceof MarkdownString);
            assert.deepEqual(tip.isTrusted, { enabledCommands: [SHOW_SAVINGS_COMMAND] });
            assert.equal(tip.supportThemeIcons, true);
            const links = [...tip.value.matchAll(/(?<!\\)\]\((command:[^ )]+)/g)].map((m) => m[1]);
            assert.deepEqual(links, [`command:${SHOW_SAVINGS_COMMAND}`]);
        }
    });

    it('warning near the threshold, error near the limit, back to normal after compaction', () => {
        const bar = new StatusBar();
        bar.running();
        bar.update(status({ version: 2, totalTokens: 160000 }));
        assert.equal(bg(bar), 'statusBarItem.warningBackground');
        bar.update(status({ version: 3, totalTokens: 196000 }));
        assert.equal(bg(bar), 'statusBarItem.errorBackground');
        bar.update(status({ version: 4, totalTokens: 30000 }));
        assert.equal(bg(bar), undefined);
        assert.equal(bar.item.text, '$(layers) 30k / 200k · 15%');
    });

    it('shows the most recently updated session, and another on request', () => {
        const bar = new StatusBar();
        bar.running();
        bar.update(status({ sessionId: 'a', totalTokens: 1000 }));
        bar.update(status({ sessionId: 'b', totalTokens: 2000 }));
        assert.equal(bar.item.text, '$(layers) 2k / 200k · 1%');
        assert.match(String(bar.item.tooltip), /2 sessions/);
        bar.select('a');
        assert.equal(bar.item.text, '$(layers) 1k / 200k · 0.5%');
        bar.forget('a');
        assert.equal(bar.item.text, '$(layers) hdcontext');
    });

    it('a failure is shown in red until the daemon runs again', () => {
        const bar = new StatusBar();
        bar.failed('hdcontext: cannot start the daemon: python3 cannot import hdcontext');
        assert.equal(bar.item.text, '$(error) hdcontext');
        assert.equal(bg(bar), 'statusBarItem.errorBackground');
        assert.match(String(bar.item.tooltip), /cannot import hdcontext/);
        bar.update(status());
        assert.equal(bar.item.text, '$(error) hdcontext', 'a stray Status does not hide the failure');
        bar.running();
        assert.equal(bar.item.text, '$(layers) 42.1k / 200k · 21%');
    });
});
