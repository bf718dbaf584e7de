/**
 * What the status bar says about a session: text, tooltip and level, and the `@hdcontext /status`
 * report. No `vscode` import.
 *
 * Text: `42.1k / 200k · 21%` (tokens of the curated view / context limit · percent), then
 * `· 3.2k pending` while density edits wait (cache-aware schedule) and `· 62% cached` once the
 * model reported what it read from its prompt cache.
 * Level: `error` when the total is near or over the limit (≥ ERROR_SHARE of it), `warning` when
 * it nears the compression threshold (≥ WARNING_SHARE of threshold × limit), else `normal`.
 */

import { RETRIEVE_TOOL_NAME, type SavingsFigures, type Status } from './protocol';
import { moneyLine } from './savings';
import { cacheHitRate } from './usage';

export type Level = 'normal' | 'warning' | 'error';

/** Warning from this share of the compression point (threshold × limit) on. */
export const WARNING_SHARE = 0.9;
/** Error from this share of the context limit on. */
export const ERROR_SHARE = 0.95;

/** Compact token counts: 512, 4.2k, 42.1k, 200k, 1.5M. */
export function formatTokens(n: number): string {
    if (!Number.isFinite(n)) {
        return '?';
    }
    const sign = n < 0 ? '-' : '';
    const abs = Math.abs(n);
    if (abs < 1000) {
        return sign + String(Math.round(abs));
    }
    const units: [number, string][] = [
        [1e3, 'k'],
        [1e6, 'M'],
        [1e9, 'G'],
    ];
    for (let i = 0; i < units.length; i++) {
        const [size, suffix] = units[i];
        const value = abs / size;
        const shown = value < 100 ? trimZero(value.toFixed(1)) : String(Math.round(value));
        if (Number(shown) < 1000 || i === units.length - 1) {
            return sign + shown + suffix;
        }
    }
    return sign + String(abs); // not reached
}

function trimZero(fixed: string): string {
    return fixed.endsWith('.0') ? fixed.slice(0, -2) : fixed;
}

/** 21%, 9.5%, 0.4%, 0%: one decimal below 10, none from 10 on. */
export function formatPercent(p: number): string {
    if (!Number.isFinite(p)) {
        return '?%';
    }
    if (p === 0) {
        return '0%';
    }
    if (Math.abs(p) < 10) {
        const fixed = trimZero(p.toFixed(1));
        return (fixed === '0' ? '<0.1' : fixed) + '%';
    }
    return String(Math.round(p)) + '%';
}

/** Grouped digits, as people read them: 170,000. */
export function formatCount(n: number): string {
    return Math.round(n).toLocaleString('en-US');
}

/** `42.1k / 200k · 21%`, then `· 3.2k pending` and `· 62% cached` when there is something to say. */
export function statusText(s: Status): string {
    let text = `${formatTokens(s.totalTokens)} / ${formatTokens(s.contextLimit)} · ${formatPercent(s.percent)}`;
    if ((s.pendingTokens ?? 0) > 0) {
        text += ` · ${formatTokens(s.pendingTokens ?? 0)} pending`;
    }
    const hit = cacheHitRate(s.usage);
    if (hit !== undefined) {
        text += ` · ${formatPercent(100 * hit)} cached`;
    }
    return text;
}

/** The token count at which compression runs. */
export function compressionPoint(s: Status): number {
    return s.threshold * s.contextLimit;
}

export function statusLevel(s: Status): Level {
    if (s.contextLimit <= 0) {
        return 'error';
    }
    if (s.totalTokens >= ERROR_SHARE * s.contextLimit) {
        return 'error';
    }
    if (s.totalTokens >= WARNING_SHARE * compressionPoint(s)) {
        return 'warning';
    }
    return 'normal';
}

/**
 * Plain-text tooltip: session, tokens, strategy, threshold, saved tokens, what waits and what was
 * masked, the prompt cache, how the session is priced when that needs saying, and the level's reason.
 */
export function statusTooltip(s: Status, extra: { sessionCount?: number } = {}): string {
    const lines = [
        `hdcontext · session ${s.sessionId}`,
        `${formatCount(s.totalTokens)} of ${formatCount(s.contextLimit)} tokens (${formatPercent(s.percent)}) · ${s.entryCount} ${s.entryCount === 1 ? 'entry' : 'entries'}`,
        `Strategy: ${s.strategy} · compresses at ${formatPercent(s.threshold * 100)} (${formatCount(compressionPoint(s))} tokens)`,
        `Saved so far: ${formatCount(s.savedTokens)} tokens`,
    ];
    if ((s.pendingTokens ?? 0) > 0) {
        lines.push(
            `Pending: ${formatCount(s.pendingTokens ?? 0)} more tokens go once pruning them costs less than re-reading the prompt cache, or once the cache has gone cold`,
        );
    }
    const masked = maskedLine(s);
    if (masked) {
        lines.push(masked);
    }
    lines.push(cacheLine(s), ...pricingLines(s));
    const level = statusLevel(s);
    if (level === 'error') {
        lines.push(
            s.totalTokens > s.contextLimit
                ? 'Over the context limit: compact now, or raise the limit.'
                : 'Near the context limit.',
        );
    } else if (level === 'warning') {
        lines.push('Nearing the compression threshold.');
    }
    if (extra.sessionCount !== undefined && extra.sessionCount > 1) {
        lines.push(`${extra.sessionCount} sessions: click to pick another, or for actions.`);
    } else {
        lines.push('Click for sessions and actions.');
    }
    return lines.join('\n');
}

/** What masking took out so far and how the model gets it back, when it took anything. */
function maskedLine(s: Status): string | undefined {
    const n = s.maskedOutputs ?? 0;
    if (n <= 0) {
        return undefined;
    }
    const outputs = n === 1 ? '1 tool output' : `${formatCount(n)} tool outputs`;
    return (
        `Masked: ${outputs} the model had already read (${formatCount(s.maskedTokens ?? 0)} tokens), each now a one-line pointer; ` +
        `the model gets any back whole with ${RETRIEVE_TOOL_NAME} and its call id`
    );
}

/** The prompt cache as the model reported it (`history/usage`), or that it has not. */
function cacheLine(s: Status): string {
    const hit = cacheHitRate(s.usage);
    const u = s.usage;
    if (hit === undefined || !u) {
        return 'Prompt cache: not reported by the model yet';
    }
    return (
        `Prompt cache: ${formatPercent(100 * hit)} of ${formatCount(u.inputTokens)} input tokens read from it ` +
        `over ${u.calls} model ${u.calls === 1 ? 'call' : 'calls'} (as reported by the model)`
    );
}

/**
 * What the user should know of how the session is priced, when there is something to say: a
 * model the price table lacks (`pricedAs.match` fallback), and calls that read from the prompt
 * cache otherwise than the daemon expected (`mispredicted`). Plain text, one line each.
 */
function pricingLines(s: Status): string[] {
    const lines: string[] = [];
    const priced = fallbackPrices(s);
    if (priced) {
        lines.push(`Priced as ${priced}: this session's model is not in the price table, so hdcontext plans with that model's prices (hdcontext.cache.prices can set yours)`);
    }
    const missed = mispredictedCalls(s);
    if (missed) {
        lines.push(`Prompt cache not as expected on ${missed}: the model read much more or much less from it than hdcontext planned for (over a quarter off), so its pruning may cost more than it reckoned`);
    }
    return lines;
}

/** The row a session's model falls back to (its provider's most common), when it does. */
function fallbackPrices(s: Status): string | undefined {
    const p = s.pricedAs;
    if (p?.match !== 'fallback') {
        return undefined;
    }
    return p.model ?? "its provider's usual model";
}

/** `3 of 12 model calls`, `1 model call`: the calls held against the daemon's expectation that missed it. */
function mispredictedCalls(s: Status): string | undefined {
    const n = s.mispredicted ?? 0;
    if (!(n > 0)) {
        return undefined;
    }
    const of = s.predicted?.calls ?? s.usage?.calls ?? 0;
    const calls = (k: number) => `${formatCount(k)} model ${k === 1 ? 'call' : 'calls'}`;
    return of >= n ? `${formatCount(n)} of ${calls(of)}` : calls(n);
}

/**
 * The `@hdcontext /status` answer (Markdown): the conversation's tokens, savings and cost figures;
 * with its `stats/savings` figures, what its calls cost and would have cost without hdcontext.
 */
export function statusReport(s: Status, savings?: SavingsFigures): string {
    const lines = [
        `**${formatCount(s.totalTokens)}** of ${formatCount(s.contextLimit)} tokens (${formatPercent(s.percent)}) go to the model on the next call, in ${s.entryCount} ${s.entryCount === 1 ? 'entry' : 'entries'}.`,
        `- Saved so far: ${formatCount(s.savedTokens)} tokens (stale reads, what edits left behind, duplicate @file inclusions, old and masked tool output, compression).`,
    ];
    const masked = s.maskedOutputs ?? 0;
    if (masked > 0) {
        lines.push(
            `- Masked: ${formatCount(masked)} tool ${masked === 1 ? 'output' : 'outputs'} the model had already read (${formatCount(s.maskedTokens ?? 0)} tokens) ` +
                `became one-line pointers that name the call. Nothing is lost: the model gets any of them back with \`${RETRIEVE_TOOL_NAME}\` and the call id, ` +
                'and *hdcontext: Show Session History…* (transcript) shows them all.',
        );
    }
    if ((s.pendingTokens ?? 0) > 0) {
        lines.push(`- Pending: ${formatCount(s.pendingTokens ?? 0)} more tokens will be pruned once that costs less than re-reading the prompt cache.`);
    }
    const u = s.usage;
    if (u && u.calls > 0) {
        const hit = cacheHitRate(u);
        lines.push(
            `- Model calls: ${u.calls}; input ${formatCount(u.inputTokens)} tokens` +
                (hit === undefined ? '' : `, ${formatPercent(100 * hit)} read from the prompt cache (${formatCount(u.cacheReadTokens)})`) +
                `, ${formatCount(u.cacheWriteTokens)} written to it; output ${formatCount(u.outputTokens)} tokens.`,
        );
    } else {
        lines.push('- Model calls: the model has not reported its token usage (cache figures appear when it does).');
    }
    if (savings) {
        lines.push(moneyLine(savings));
    }
    const priced = fallbackPrices(s);
    if (priced) {
        lines.push(
            `- Priced as **${priced}**: this conversation's model is not in hdcontext's price table, so hdcontext plans its pruning with that model's prices ` +
                '(`hdcontext.cache.prices` can set yours).',
        );
    }
    const missed = mispredictedCalls(s);
    if (missed) {
        lines.push(
            `- Prompt cache not as expected on ${missed}: the model read much more or much less from it than hdcontext planned for (over a quarter off), ` +
                'so its pruning may cost more than it reckoned.',
        );
    }
    lines.push(`- Strategy: ${s.strategy}, compresses at ${formatPercent(s.threshold * 100)} (${formatCount(compressionPoint(s))} tokens).`);
    lines.push(`- Session: \`${s.sessionId}\`.`);
    return lines.join('\n');
}

/**
 * The sessions the status bar knows, and which one is active: the most recently updated or
 * opened. Statuses that arrive out of order (a lower version of the same session) are ignored.
 */
export class SessionTracker {
    private readonly sessions = new Map<string, Status>();
    private activeId: string | undefined;

    /** Records a Status; returns true when the shown (active) session changed or was updated. */
    update(s: Status, makeActive = true): boolean {
        const known = this.sessions.get(s.sessionId);
        if (known !== undefined && s.version < known.version) {
            // An older snapshot of the same session (e.g. a list reply racing a notification).
            return false;
        }
        this.sessions.set(s.sessionId, s);
        if (makeActive) {
            this.activeId = s.sessionId;
        }
        return this.activeId === s.sessionId;
    }

    /** Makes a known session the active one. */
    activate(sessionId: string): boolean {
        if (!this.sessions.has(sessionId)) {
            return false;
        }
        this.activeId = sessionId;
        return true;
    }

    remove(sessionId: string): void {
        this.sessions.delete(sessionId);
        if (this.activeId === sessionId) {
            this.activeId = undefined;
        }
    }

    get active(): Status | undefined {
        return this.activeId === undefined ? undefined : this.sessions.get(this.activeId);
    }

    get(sessionId: string): Status | undefined {
        return this.sessions.get(sessionId);
    }

    /** Active first, then the others by id. */
    all(): Status[] {
        const others = [...this.sessions.values()]
            .filter((s) => s.sessionId !== this.activeId)
            .sort((a, b) => a.sessionId.localeCompare(b.sessionId));
        const active = this.active;
        return active ? [active, ...others] : others;
    }

    get size(): number {
        return this.sessions.size;
    }

    clear(): void {
        this.sessions.clear();
        this.activeId = undefined;
    }
}
