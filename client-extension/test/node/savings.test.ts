/**
 * The savings view's pure parts (savings.ts), and `stats/savings` of the real daemon through the
 * typed client: the money line of `/status` against the price table for a known usage, tokens
 * only for a model the table does not know, the tooltip's one link, the webview's policy.
 */

import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { ResponseError } from 'vscode-jsonrpc/node';

import { DaemonMethods, ErrorCodes, isSavingsFigures, type SavingsFigures, type SavingsTotals, type Status } from '../../src/protocol';
import {
    FIGURES_MESSAGE,
    SHOW_SAVINGS_COMMAND,
    TOOLTIP_TRUSTED_COMMANDS,
    escapeMarkdown,
    formatMoney,
    makeNonce,
    moneyLine,
    savingsScope,
    tooltipMarkdown,
    webviewPolicy,
    withPolicy,
} from '../../src/savings';
import { statusReport, statusTooltip } from '../../src/status';
import { readsOnly } from '../helpers/conversation';
import { EXTENSION_ROOT, startDaemon, type RunningDaemon } from '../helpers/realDaemon';

/**
 * claude-sonnet-4-5's row of server/hdcontext/core/cache/prices.py (checked 2026-11-26), in
 * dollars per million tokens: the test's own copy, so that the money line is held to the table.
 */
const SONNET_4_5 = { input: 3, cacheWrite5m: 3.75, output: 15 };
/** A usage whose cost is known: 2,000 plain input tokens, 18,000 written to the cache, 300 out. */
const USAGE = { inputTokens: 20_000, cacheReadTokens: 0, cacheWriteTokens: 18_000, outputTokens: 300 };
const KNOWN_COST = (2_000 * SONNET_4_5.input + 18_000 * SONNET_4_5.cacheWrite5m + 300 * SONNET_4_5.output) / 1e6; // $0.078

function totals(over: Partial<SavingsTotals> = {}): SavingsTotals {
    return {
        calls: 4,
        refreshCalls: 0,
        tokens: { agent: 90_000, model: 60_000, cacheRead: 40_000, cacheWrite: 8_000, output: 1_200 },
        cost: 0.5,
        estimatedCost: 0,
        without: 0.75,
        saved: 0.25,
        ratio: 0.6667,
        refreshCost: 0,
        pricedCalls: 4,
        estimatedCalls: 0,
        unpricedCalls: 0,
        maskedOutputs: 0,
        fetchedBack: 0,
        unpriced: [],
        ...over,
    };
}

function figures(t: SavingsTotals, currency = 'USD'): SavingsFigures {
    return { storageDir: '/s', currency, pricesChecked: '2026-11-26', since: null, generatedAt: 0, totals: t, days: [], sessions: [], sessionsWithoutRecords: 0 };
}

describe('formatMoney', () => {
    const cases: Array<[number | null, string]> = [
        [0.078, '$0.08'],
        [0.5, '$0.50'],
        [1234.5, '$1,234.50'],
        [0, '$0.00'],
        [0.004, '<$0.01'],
        [-0.02, '-$0.02'],
        [-0.001, '-<$0.01'],
        [null, '–'],
    ];
    for (const [v, want] of cases) {
        it(`${v} → ${want}`, () => assert.equal(formatMoney(v, 'USD'), want));
    }
    it("another currency is written as that currency, an unknown code after the amount", () => {
        assert.equal(formatMoney(2.5, 'EUR'), '€2.50');
        assert.equal(formatMoney(2.5, 'credits'), '2.50 credits');
    });
});

describe('the money line of /status', () => {
    it('priced: the cost as billed, without hdcontext, what was saved and its share', () => {
        const line = moneyLine(figures(totals()));
        assert.equal(line, '- Cost: **$0.50** as billed for 4 calls; without hdcontext **$0.75**: **$0.25 saved** (33%).');
    });

    it('says which part is estimated and which calls are in tokens only, and why', () => {
        const line = moneyLine(
            figures(
                totals({
                    calls: 5,
                    estimatedCalls: 1,
                    estimatedCost: 0.01,
                    unpricedCalls: 1,
                    unpriced: [{ model: 'my_model', why: 'my_model is not in the price table (checked 2026-11-26)', calls: 1 }],
                }),
            ),
        );
        assert.match(line, /Of the cost, \$0\.01 is estimated from hdcontext's own count \(1 call without reported usage/);
        assert.match(line, /1 call in tokens only: my\\_model is not in the price table/);
    });

    it('in tokens only when nothing could be priced: no money at all', () => {
        const t = totals({
            cost: null,
            without: null,
            saved: null,
            ratio: null,
            estimatedCost: null,
            pricedCalls: 0,
            unpricedCalls: 4,
            unpriced: [{ model: 'local-llm', why: 'local-llm is not in the price table (checked 2026-11-26)', calls: 4 }],
        });
        const line = moneyLine(figures(t));
        assert.doesNotMatch(line, /\$/);
        assert.equal(
            line,
            '- Cost: in tokens only (local-llm is not in the price table (checked 2026-11-26)): 60,000 input tokens went to the model (90,000 tokens sent by the agent), 1,200 output tokens.',
        );
    });

    it('the share saved in whole percent, as the page has it', () => {
        assert.match(moneyLine(figures(totals({ cost: 0.0213, without: 0.0231, saved: 0.0018, ratio: 0.9221 }))), /\*\*<\$0\.01 saved\*\* \(8%\)\.$/);
    });

    it('a session dearer with hdcontext (its refresh calls) says so, not a negative saving', () => {
        const line = moneyLine(figures(totals({ refreshCalls: 2, cost: 0.8, without: 0.75, saved: -0.05, ratio: 1.0667 })));
        assert.match(line, /\*\*\$0\.05 more\*\* than without it/);
    });

    it('no call yet', () => {
        assert.match(moneyLine(figures(totals({ calls: 0, pricedCalls: 0 }))), /no model call of this conversation has been recorded yet/);
    });

    it('statusReport puts it in when the figures are there, and not otherwise', () => {
        const s: Status = { sessionId: 'c', version: 1, entryCount: 2, totalTokens: 10, contextLimit: 100, threshold: 0.85, percent: 10, strategy: 'high-density', savedTokens: 0 };
        assert.doesNotMatch(statusReport(s), /Cost:/);
        assert.match(statusReport(s, figures(totals())), /^- Cost: \*\*\$0\.50\*\*/m);
    });
});

describe('the tooltip: one link, to the savings view, trusted for it alone', () => {
    const links = (md: string) => [...md.matchAll(/(?<!\\)\]\((command:[^ )]+)/g)].map((m) => m[1]);

    it('ends with the command link and nothing else can run', () => {
        const s: Status = { sessionId: 'chat-1', version: 1, entryCount: 2, totalTokens: 10, contextLimit: 100, threshold: 0.85, percent: 10, strategy: 'high-density', savedTokens: 1234 };
        const md = tooltipMarkdown(statusTooltip(s));
        assert.deepEqual(links(md), [`command:${SHOW_SAVINGS_COMMAND}`]);
        assert.ok(md.endsWith(`(command:${SHOW_SAVINGS_COMMAND} "What the calls cost, with hdcontext and without it")`));
        assert.match(md, /Saved so far: 1,234 tokens {2}\n/);
        assert.deepEqual([...TOOLTIP_TRUSTED_COMMANDS], [SHOW_SAVINGS_COMMAND]);
    });

    it("a session id cannot become a link, an icon or markup", () => {
        const evil = '[x](command:workbench.action.terminal.new) $(alert) <img src=x> *b* `c`';
        const md = tooltipMarkdown(`hdcontext · session ${evil}\n# heading\n- item\n1. one`);
        assert.deepEqual(links(md), [`command:${SHOW_SAVINGS_COMMAND}`]);
        assert.ok(md.includes('\\[x\\](command:workbench.action.terminal.new)'));
        assert.ok(md.includes('\\$(alert)') && md.includes('\\<img src=x\\>') && md.includes('\\*b\\*') && md.includes('\\`c\\`'));
        assert.ok(md.includes('  \n\\# heading  \n\\- item  \n\\1. one'));
        assert.equal(escapeMarkdown('Strategy: high-density · compresses at 85% (170,000 tokens)'), 'Strategy: high-density · compresses at 85% (170,000 tokens)');
    });

    it('package.json contributes the command, under the hdcontext category', () => {
        const pkg = JSON.parse(fs.readFileSync(path.join(EXTENSION_ROOT, 'package.json'), 'utf8')) as { contributes: { commands: Array<{ command: string; title: string; category: string }> } };
        const cmd = pkg.contributes.commands.find((c) => c.command === SHOW_SAVINGS_COMMAND);
        assert.deepEqual(cmd && { title: cmd.title, category: cmd.category }, { title: 'Show Savings', category: 'hdcontext' });
    });
});

describe("the webview's policy", () => {
    it('allows the nonce\'d script and style and nothing else', () => {
        const nonce = makeNonce();
        assert.match(nonce, /^[A-Za-z0-9+/=]{24}$/);
        assert.notEqual(makeNonce(), nonce);
        const policy = webviewPolicy(nonce);
        assert.equal(
            policy,
            `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; img-src data:; base-uri 'none'; form-action 'none'`,
        );
        assert.doesNotMatch(policy, /unsafe|https?:|\*/);
    });

    it('goes first in the head', () => {
        const html = withPolicy('<!DOCTYPE html>\n<html><head><meta charset="utf-8"><style nonce="n">x</style></head></html>', 'abcdefghijklmnop');
        assert.ok(html.startsWith(`<!DOCTYPE html>\n<html><head><meta http-equiv="Content-Security-Policy" content="${webviewPolicy('abcdefghijklmnop')}"><meta charset`));
        assert.throws(() => withPolicy('<p>no head</p>', 'abcdefghijklmnop'), /no <head>/);
    });

    it('the whole storage when the window knows no session', () => {
        assert.equal(savingsScope([]), undefined);
        assert.deepEqual(savingsScope(['a', 'b']), ['a', 'b']);
    });
});

describe('stats/savings of the real daemon', () => {
    let d: RunningDaemon;

    before(async () => {
        d = await startDaemon();
        for (const [sessionId, model, at] of [
            ['sonnet', 'claude-sonnet-4-5', 1_764_000_000_000],
            ['local', 'my-local-model', 1_764_000_060_000],
        ] as const) {
            await d.client.sync(sessionId, readsOnly(['src/a.py']), { model });
            await d.client.compact(sessionId, { at });
            await d.client.usage({ sessionId, ...USAGE, at: at + 1000 });
        }
    });
    after(async () => {
        await d?.stop();
    });

    it('the money line of a known usage is the price table\'s', async () => {
        const reply = await d.client.savings({ sessions: ['sonnet'] });
        assert.ok(isSavingsFigures(reply.figures));
        const t = reply.figures.totals;
        assert.ok(t.cost !== null && Math.abs(t.cost - KNOWN_COST) < 1e-6, `${t.cost} is ${KNOWN_COST}`);
        assert.ok(t.without !== null && t.without >= t.cost);
        const line = moneyLine(reply.figures);
        assert.ok(line.startsWith(`- Cost: **$0.08** as billed for 1 call; without hdcontext **${formatMoney(t.without, 'USD')}**`), line);
        assert.equal(reply.html, null);
        assert.deepEqual(reply.missing, []);
    });

    it('a model the table does not know is in tokens only, never priced', async () => {
        const { figures: f } = await d.client.savings({ sessions: ['local'] });
        const line = moneyLine(f);
        assert.doesNotMatch(line, /\$/);
        assert.match(line, /^- Cost: in tokens only \(my-local-model is not in the price table/);
        assert.match(line, /20,000 input tokens went to the model/);
    });

    it('with a nonce, the page: its script and style carry it, nothing is loaded from anywhere', async () => {
        const nonce = makeNonce();
        const { html, figures: f } = await d.client.savings({ nonce });
        assert.equal(f.sessions.length, 2);
        assert.ok(html);
        const page = withPolicy(html, nonce);
        const tags = [...page.matchAll(/<(script|style)\b([^>]*)>/g)];
        assert.ok(tags.length >= 2);
        for (const [, tag, attrs] of tags) {
            const data = tag === 'script' && attrs.includes('type="application/json"');
            assert.ok(data || attrs.includes(`nonce="${nonce}"`), `<${tag}${attrs}> carries the nonce`);
        }
        assert.doesNotMatch(page, /\s(src|href)=/);
        assert.ok(page.includes(FIGURES_MESSAGE), 'the page takes posted figures');
    });

    it('bad params: -32602', async () => {
        await assert.rejects(d.client.savings({ nonce: 'short' }), (err: unknown) => err instanceof ResponseError && err.code === ErrorCodes.InvalidParams && /nonce/.test(err.message));
        await assert.rejects(
            d.connection.sendRequest(DaemonMethods.savings, { sessions: 'sonnet' }),
            (err: unknown) => err instanceof ResponseError && err.code === ErrorCodes.InvalidParams && /sessions/.test(err.message),
        );
    });
});
