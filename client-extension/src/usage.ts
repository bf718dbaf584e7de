/**
 * What a model call cost, as the model reported it. No `vscode` import.
 *
 * VS Code's stable language model API has no usage field. Copilot's models report usage as a
 * response part: a `LanguageModelDataPart` of MIME type `token_usage` holding the provider's
 * usage object as JSON. Its shape is the provider's (OpenAI's chat completions, OpenAI's
 * responses, Anthropic's), so every known shape is read here into one: `inputTokens` counts
 * every input token of the call, cached or not (`history/usage`'s figures), `cacheReadTokens`
 * those read from the prompt cache, `cacheWriteTokens` those written to it.
 */

import type { Usage } from './protocol';

/** Copilot's `CustomDataPartMimeTypes.TokenUsage`. */
export const TOKEN_USAGE_MIME = 'token_usage';

export interface ReportedUsage {
    inputTokens: number;
    cacheReadTokens?: number;
    cacheWriteTokens?: number;
    outputTokens?: number;
}

function count(v: unknown): number | undefined {
    return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.round(v) : undefined;
}

function record(v: unknown): Record<string, unknown> {
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

/** The usage a model reported, or undefined when `value` is no usage object this knows. */
export function parseUsage(value: unknown): ReportedUsage | undefined {
    const u = record(value);
    // Ours (history/usage's names).
    if (count(u.inputTokens) !== undefined) {
        return defined({
            inputTokens: count(u.inputTokens) as number,
            cacheReadTokens: count(u.cacheReadTokens),
            cacheWriteTokens: count(u.cacheWriteTokens),
            outputTokens: count(u.outputTokens),
        });
    }
    // OpenAI chat completions (and Copilot's own): prompt_tokens includes the cached ones.
    if (count(u.prompt_tokens) !== undefined) {
        return defined({
            inputTokens: count(u.prompt_tokens) as number,
            cacheReadTokens: count(record(u.prompt_tokens_details).cached_tokens),
            cacheWriteTokens: count(u.cache_creation_input_tokens),
            outputTokens: count(u.completion_tokens),
        });
    }
    if (count(u.input_tokens) !== undefined) {
        const input = count(u.input_tokens) as number;
        const read = count(u.cache_read_input_tokens);
        const write = count(u.cache_creation_input_tokens);
        if (read !== undefined || write !== undefined) {
            // Anthropic: input_tokens are only the uncached ones.
            return defined({ inputTokens: input + (read ?? 0) + (write ?? 0), cacheReadTokens: read, cacheWriteTokens: write, outputTokens: count(u.output_tokens) });
        }
        // OpenAI responses: input_tokens includes the cached ones.
        return defined({ inputTokens: input, cacheReadTokens: count(record(u.input_tokens_details).cached_tokens), outputTokens: count(u.output_tokens) });
    }
    return undefined;
}

/** A `token_usage` part's bytes (UTF-8 JSON), read. */
export function parseUsageBytes(data: Uint8Array): ReportedUsage | undefined {
    try {
        return parseUsage(JSON.parse(new TextDecoder().decode(data)) as unknown);
    } catch {
        return undefined;
    }
}

/** Share of input tokens read from the prompt cache, over the session's reported calls; undefined when none reported. */
export function cacheHitRate(usage: Usage | undefined): number | undefined {
    if (!usage || usage.calls <= 0 || usage.inputTokens <= 0) {
        return undefined;
    }
    return Math.min(1, usage.cacheReadTokens / usage.inputTokens);
}

function defined(u: ReportedUsage): ReportedUsage {
    const out: ReportedUsage = { inputTokens: u.inputTokens };
    if (u.cacheReadTokens !== undefined) {
        out.cacheReadTokens = u.cacheReadTokens;
    }
    if (u.cacheWriteTokens !== undefined) {
        out.cacheWriteTokens = u.cacheWriteTokens;
    }
    if (u.outputTokens !== undefined) {
        out.outputTokens = u.outputTokens;
    }
    return out;
}
