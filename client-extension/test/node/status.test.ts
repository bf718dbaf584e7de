import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import type { Status } from '../../src/protocol';
import {
    ERROR_SHARE,
    SessionTracker,
    WARNING_SHARE,
    formatCount,
    formatPercent,
    formatTokens,
    statusLevel,
    statusReport,
    statusText,
    statusTooltip,
} from '../../src/status';

function status(over: Partial<Status> = {}): Status {
    const s: Status = {
        sessionId: 'chat-1',
        version: 3,
        entryCount: 12,
        totalTokens: 42100,
        contextLimit: 200000,
        threshold: 0.85,
        percent: 21.05,
        strategy: 'high-density',
        savedTokens: 2258,
        ...over,
    };
    if (over.percent === undefined) {
        s.percent = (100 * s.totalTokens) / s.contextLimit;
    }
    return s;
}

describe('formatTokens', () => {
    const cases: Array<[number, string]> = [
        [0, '0'],
        [7, '7'],
        [999, '999'],
        [1000, '1k'],
        [1049, '1k'],
        [1050, '1.1k'],
        [4139, '4.1k'],
        [42100, '42.1k'],
        [99949, '99.9k'],
        [99950, '100k'],
        [123456, '123k'],
        [200000, '200k'],
        [999499, '999k'],
        [999999, '1M'],
        [1500000, '1.5M'],
        [2000000, '2M'],
        [-1500, '-1.5k'],
    ];
    for (const [n, want] of cases) {
        it(`${n} → ${want}`, () => assert.equal(formatTokens(n), want));
    }
    it('non-finite', () => assert.equal(formatTokens(Number.NaN), '?'));
});

describe('formatPercent', () => {
    const cases: Array<[number, string]> = [
        [0, '0%'],
        [0.04, '<0.1%'],
        [0.4, '0.4%'],
        [2.07, '2.1%'],
        [9.94, '9.9%'],
        [21.05, '21%'],
        [85, '85%'],
        [100, '100%'],
        [130.6, '131%'],
    ];
    for (const [p, want] of cases) {
        it(`${p} → ${want}`, () => assert.equal(formatPercent(p), want));
    }
});

describe('statusText', () => {
    it('is the figure the issue shows', () => assert.equal(statusText(status()), '42.1k / 200k · 21%'));
    it('small sessions', () => assert.equal(statusText(status({ totalTokens: 4139, contextLimit: 200000 })), '4.1k / 200k · 2.1%'));
    it('uses the daemon percent, not its own', () =>
        assert.equal(statusText(status({ totalTokens: 1000, contextLimit: 2000, percent: 50 })), '1k / 2k · 50%'));
    it('formatCount groups digits', () => assert.equal(formatCount(170000), '170,000'));
});

describe('statusLevel', () => {
    it('normal well below the threshold', () => assert.equal(statusLevel(status()), 'normal'));
    it('warning near the threshold', () => {
        const point = 0.85 * 200000;
        assert.equal(statusLevel(status({ totalTokens: Math.ceil(WARNING_SHARE * point) })), 'warning');
        assert.equal(statusLevel(status({ totalTokens: Math.floor(WARNING_SHARE * point) - 1 })), 'normal');
        assert.equal(statusLevel(status({ totalTokens: point + 1 })), 'warning');
    });
    it('error near or over the limit', () => {
        assert.equal(statusLevel(status({ totalTokens: ERROR_SHARE * 200000 })), 'error');
        assert.equal(statusLevel(status({ totalTokens: 250000 })), 'error');
    });
    it('a threshold of 1 warns at 90% and errs at 95%', () => {
        assert.equal(statusLevel(status({ threshold: 1, totalTokens: 179000 })), 'normal');
        assert.equal(statusLevel(status({ threshold: 1, totalTokens: 181000 })), 'warning');
        assert.equal(statusLevel(status({ threshold: 1, totalTokens: 190000 })), 'error');
    });
    it('a broken limit is an error, not a crash', () => assert.equal(statusLevel(status({ contextLimit: 0, percent: 0 })), 'error'));
});

describe('statusTooltip', () => {
    it('names strategy, threshold and saved tokens', () => {
        const tip = statusTooltip(status());
        assert.match(tip, /session chat-1/);
        assert.match(tip, /42,100 of 200,000 tokens \(21%\) · 12 entries/);
        assert.match(tip, /Strategy: high-density · compresses at 85% \(170,000 tokens\)/);
        assert.match(tip, /Saved so far: 2,258 tokens/);
        assert.match(tip, /Click for sessions and actions/);
    });
    it('says why it is coloured', () => {
        assert.match(statusTooltip(status({ totalTokens: 160000 })), /Nearing the compression threshold/);
        assert.match(statusTooltip(status({ totalTokens: 210000 })), /Over the context limit/);
        assert.match(statusTooltip(status({ totalTokens: 192000 })), /Near the context limit/);
    });
    it('one entry, several sessions', () => {
        const tip = statusTooltip(status({ entryCount: 1 }), { sessionCount: 3 });
        assert.match(tip, /· 1 entry$/m);
        assert.match(tip, /3 sessions/);
    });
});

describe('pending pruning and the prompt cache (protocol 2)', () => {
    const usage = { calls: 3, inputTokens: 30000, cacheReadTokens: 18600, cacheWriteTokens: 11400, outputTokens: 2000 };

    it('the text adds what waits and the cache hit rate, when there is something to say', () => {
        assert.equal(statusText(status({ pendingTokens: 0 })), '42.1k / 200k · 21%');
        assert.equal(statusText(status({ pendingTokens: 3210 })), '42.1k / 200k · 21% · 3.2k pending');
        assert.equal(statusText(status({ pendingTokens: 3210, usage })), '42.1k / 200k · 21% · 3.2k pending · 62% cached');
        assert.equal(statusText(status({ usage: { ...usage, calls: 0, inputTokens: 0, cacheReadTokens: 0 } })), '42.1k / 200k · 21%');
    });

    it('the tooltip explains them', () => {
        const tip = statusTooltip(status({ pendingTokens: 3210, usage }));
        assert.match(tip, /Pending: 3,210 more tokens go once pruning them costs less than re-reading the prompt cache/);
        assert.match(tip, /Prompt cache: 62% of 30,000 input tokens read from it over 3 model calls \(as reported by the model\)/);
        assert.match(statusTooltip(status()), /Prompt cache: not reported by the model yet/);
    });

    it('the @hdcontext /status report', () => {
        const report = statusReport(status({ pendingTokens: 3210, usage }));
        assert.match(report, /^\*\*42,100\*\* of 200,000 tokens \(21%\) go to the model on the next call, in 12 entries\./);
        assert.match(report, /Saved so far: 2,258 tokens/);
        assert.match(report, /Pending: 3,210 more tokens/);
        assert.match(report, /Model calls: 3; input 30,000 tokens, 62% read from the prompt cache \(18,600\), 11,400 written to it; output 2,000 tokens\./);
        assert.match(report, /Session: `chat-1`/);
        assert.match(statusReport(status()), /has not reported its token usage/);
    });
});

describe('masking (what it took out, how to get it back)', () => {
    it('the tooltip says how many outputs, how many tokens, and names the retrieve tool', () => {
        const tip = statusTooltip(status({ maskedOutputs: 14, maskedTokens: 23456 }));
        assert.match(tip, /Masked: 14 tool outputs the model had already read \(23,456 tokens\), each now a one-line pointer; the model gets any back whole with hdcontext_retrieve and its call id/);
        assert.match(statusTooltip(status({ maskedOutputs: 1, maskedTokens: 80 })), /Masked: 1 tool output the model/);
        assert.doesNotMatch(statusTooltip(status()), /Masked/);
        assert.doesNotMatch(statusTooltip(status({ maskedOutputs: 0, maskedTokens: 0 })), /Masked/);
    });

    it('the @hdcontext /status report', () => {
        const report = statusReport(status({ maskedOutputs: 14, maskedTokens: 23456 }));
        assert.match(report, /- Masked: 14 tool outputs the model had already read \(23,456 tokens\) became one-line pointers that name the call\./);
        assert.match(report, /gets any of them back with `hdcontext_retrieve` and the call id/);
        assert.doesNotMatch(statusReport(status()), /Masked/);
    });

    it('the pending line says masking may wait for a cold cache', () => {
        assert.match(statusTooltip(status({ pendingTokens: 500 })), /or once the cache has gone cold/);
    });
});

describe('how the session is priced (the price table)', () => {
    const usage = { calls: 12, inputTokens: 120000, cacheReadTokens: 90000, cacheWriteTokens: 30000, outputTokens: 4000 };
    const predicted = { ...usage, calls: 10 };

    it('the tooltip says when the model is priced as another: not in the price table', () => {
        const tip = statusTooltip(status({ pricedAs: { model: 'claude-opus-5-5', match: 'fallback' } }));
        assert.match(
            tip,
            /^Priced as claude-opus-5-5: this session's model is not in the price table, so hdcontext plans with that model's prices \(hdcontext\.cache\.prices can set yours\)$/m,
        );
        // After the prompt cache line, before the level and the click hint.
        const lines = tip.split('\n');
        assert.equal(lines.findIndex((l) => l.startsWith('Priced as')), lines.findIndex((l) => l.startsWith('Prompt cache:')) + 1);
        for (const match of ['exact', 'family', 'override', 'preset'] as const) {
            assert.doesNotMatch(statusTooltip(status({ pricedAs: { model: match === 'preset' ? null : 'claude-sonnet-5', match } })), /Priced as/, match);
        }
        assert.doesNotMatch(statusTooltip(status()), /Priced as/);
    });

    it('the tooltip says how many calls used the prompt cache otherwise than expected, when any did', () => {
        const tip = statusTooltip(status({ usage, predicted, mispredicted: 3 }));
        assert.match(
            tip,
            /^Prompt cache not as expected on 3 of 10 model calls: the model read much more or much less from it than hdcontext planned for \(over a quarter off\), so its pruning may cost more than it reckoned$/m,
        );
        assert.match(statusTooltip(status({ usage, mispredicted: 1 })), /not as expected on 1 of 12 model calls:/, 'without predicted: of the reported calls');
        assert.match(statusTooltip(status({ mispredicted: 1 })), /not as expected on 1 model call:/);
        assert.doesNotMatch(statusTooltip(status({ usage, predicted, mispredicted: 0 })), /not as expected/);
        assert.doesNotMatch(statusTooltip(status({ usage })), /not as expected/);
    });

    it('the @hdcontext /status report says both', () => {
        const report = statusReport(status({ usage, predicted, mispredicted: 2, pricedAs: { model: 'gpt-6.2-sol', match: 'fallback' } }));
        assert.match(report, /^- Priced as \*\*gpt-6\.2-sol\*\*: this conversation's model is not in hdcontext's price table, so hdcontext plans its pruning with that model's prices \(`hdcontext\.cache\.prices` can set yours\)\.$/m);
        assert.match(report, /^- Prompt cache not as expected on 2 of 10 model calls: the model read much more or much less from it than hdcontext planned for \(over a quarter off\), so its pruning may cost more than it reckoned\.$/m);
        const plain = statusReport(status({ usage, predicted, mispredicted: 0, pricedAs: { model: 'claude-sonnet-5', match: 'exact' } }));
        assert.doesNotMatch(plain, /Priced as|not as expected/);
    });
});

describe('SessionTracker', () => {
    it('the most recently updated session is active', () => {
        const t = new SessionTracker();
        t.update(status({ sessionId: 'a' }));
        t.update(status({ sessionId: 'b' }));
        assert.equal(t.active?.sessionId, 'b');
        t.update(status({ sessionId: 'a', version: 4 }));
        assert.equal(t.active?.sessionId, 'a');
        assert.deepEqual(
            t.all().map((s) => s.sessionId),
            ['a', 'b'],
        );
    });
    it('ignores an older version of a session', () => {
        const t = new SessionTracker();
        t.update(status({ version: 5, totalTokens: 900 }));
        assert.equal(t.update(status({ version: 4, totalTokens: 100 })), false);
        assert.equal(t.active?.totalTokens, 900);
        // Same version, new limit (a settings change): taken.
        t.update(status({ version: 5, totalTokens: 900, contextLimit: 1000 }));
        assert.equal(t.active?.contextLimit, 1000);
    });
    it('update without activation keeps the active one', () => {
        const t = new SessionTracker();
        t.update(status({ sessionId: 'a' }));
        t.update(status({ sessionId: 'b' }), false);
        assert.equal(t.active?.sessionId, 'a');
        assert.equal(t.size, 2);
        assert.ok(t.activate('b'));
        assert.equal(t.active?.sessionId, 'b');
        assert.equal(t.activate('zzz'), false);
        t.remove('b');
        assert.equal(t.active, undefined);
        t.clear();
        assert.equal(t.size, 0);
    });
});
