import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { cacheHitRate, parseUsage, parseUsageBytes } from '../../src/usage';

describe('parseUsage: what a model reported, in history/usage figures', () => {
    it('OpenAI chat completions (Copilot): prompt_tokens includes the cached ones', () => {
        assert.deepEqual(parseUsage({ prompt_tokens: 1200, completion_tokens: 80, total_tokens: 1280, prompt_tokens_details: { cached_tokens: 1000 } }), {
            inputTokens: 1200,
            cacheReadTokens: 1000,
            outputTokens: 80,
        });
    });

    it('Anthropic: input_tokens are only the uncached ones', () => {
        assert.deepEqual(parseUsage({ input_tokens: 50, cache_read_input_tokens: 900, cache_creation_input_tokens: 250, output_tokens: 40 }), {
            inputTokens: 1200,
            cacheReadTokens: 900,
            cacheWriteTokens: 250,
            outputTokens: 40,
        });
    });

    it('OpenAI responses, and our own names', () => {
        assert.deepEqual(parseUsage({ input_tokens: 1200, input_tokens_details: { cached_tokens: 600 }, output_tokens: 9 }), {
            inputTokens: 1200,
            cacheReadTokens: 600,
            outputTokens: 9,
        });
        assert.deepEqual(parseUsage({ inputTokens: 10, cacheWriteTokens: 10 }), { inputTokens: 10, cacheWriteTokens: 10 });
    });

    it('anything else is no usage', () => {
        for (const bad of [null, 3, 'x', [], {}, { prompt_tokens: -1 }, { inputTokens: Number.NaN }]) {
            assert.equal(parseUsage(bad), undefined, JSON.stringify(bad));
        }
        assert.equal(parseUsageBytes(new TextEncoder().encode('not json')), undefined);
        assert.deepEqual(parseUsageBytes(new TextEncoder().encode('{"prompt_tokens":5}')), { inputTokens: 5 });
    });
});

describe('cacheHitRate', () => {
    it('read from the cache over all input, once a call reported', () => {
        assert.equal(cacheHitRate({ calls: 2, inputTokens: 2000, cacheReadTokens: 1500, cacheWriteTokens: 0, outputTokens: 0 }), 0.75);
        assert.equal(cacheHitRate({ calls: 0, inputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, outputTokens: 0 }), undefined);
        assert.equal(cacheHitRate(undefined), undefined);
    });
});
