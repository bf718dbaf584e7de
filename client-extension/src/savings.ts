/**
 * The savings view's pure parts (no `vscode` import, so the Node tests run them): the money line
 * of `@hdcontext /status`, the status bar tooltip with its one command link, and the webview's
 * content security policy.
 *
 * Money is shown only where the daemon priced it (`stats/savings`): a call whose model the price
 * table does not know, or of a session whose usage no client reported, is counted in tokens and
 * said why, never priced as some other model.
 */

import { randomBytes } from 'node:crypto';

import type { SavingsFigures, SavingsTotals } from './protocol';

export const SHOW_SAVINGS_COMMAND = 'hdcontext.showSavings';
/** The only command a tooltip link may run (`MarkdownString.isTrusted.enabledCommands`). */
export const TOOLTIP_TRUSTED_COMMANDS: readonly string[] = [SHOW_SAVINGS_COMMAND];
/** What the page's script takes (`edges/stats/page.py`): `{type, figures}`. */
export const FIGURES_MESSAGE = 'hdcontext.stats';

/** `$0.08`, `$1,234.50`, `<$0.01`, `-$0.02`: cents, as the page shows them; `–` for none. */
export function formatMoney(value: number | null | undefined, currency: string): string {
    if (value === null || value === undefined || !Number.isFinite(value)) {
        return '–';
    }
    let format: Intl.NumberFormat;
    try {
        format = new Intl.NumberFormat('en-US', { style: 'currency', currency, minimumFractionDigits: 2, maximumFractionDigits: 2 });
    } catch {
        // Not an ISO 4217 code: the amount, then what the daemon called its currency.
        return `${value.toFixed(2)} ${currency}`;
    }
    const abs = Math.abs(value);
    if (abs > 0 && abs < 0.005) {
        return (value < 0 ? '-' : '') + '<' + format.format(0.01);
    }
    return format.format(value);
}

function plural(n: number, one: string, many = `${one}s`): string {
    return `${Math.round(n).toLocaleString('en-US')} ${n === 1 ? one : many}`;
}

/** Markdown's active characters in text that is not ours (a session id, a model name) escaped. */
export function escapeMarkdown(text: string): string {
    return text
        .replace(/[\\`*_{}[\]<>|~!&]/g, (c) => `\\${c}`)
        .replace(/\$\(/g, '\\$(')
        .replace(/^(\s*)([#+=-]|\d+[.)])/gm, (_m, space: string, lead: string) => `${space}\\${lead}`);
}

/**
 * The money line of `@hdcontext /status` (Markdown, a list item): what the session's calls cost
 * as billed and what they would have cost without hdcontext, in the provider's currency; in
 * tokens only, saying why, for calls that could not be priced.
 */
export function moneyLine(figures: SavingsFigures): string {
    const t: SavingsTotals = figures.totals;
    const money = (v: number | null) => formatMoney(v, figures.currency);
    const all = t.calls + t.refreshCalls;
    if (all === 0) {
        return '- Cost: no model call of this conversation has been recorded yet.';
    }
    const why = unpricedWhy(t);
    if (t.cost === null || t.without === null) {
        return (
            `- Cost: in tokens only (${why || 'no price known'}): ${plural(t.tokens.model, 'input token')} went to the model ` +
            `(${plural(t.tokens.agent, 'token')} sent by the agent), ${plural(t.tokens.output, 'output token')}.`
        );
    }
    const saved = t.saved ?? t.without - t.cost;
    const share = t.ratio === null ? '' : ` (${formatShare(1 - t.ratio)})`;
    const outcome = saved >= 0 ? `**${money(saved)} saved**${share}` : `**${money(-saved)} more** than without it (refresh calls)`;
    let line = `- Cost: **${money(t.cost)}** as billed for ${plural(t.pricedCalls, 'call')}; without hdcontext **${money(t.without)}**: ${outcome}.`;
    if (t.estimatedCalls > 0) {
        line += ` Of the cost, ${money(t.estimatedCost)} is estimated from hdcontext's own count (${plural(t.estimatedCalls, 'call')} without reported usage, input only).`;
    }
    if (t.unpricedCalls > 0) {
        line += ` ${plural(t.unpricedCalls, 'call')} in tokens only: ${why}.`;
    }
    return line;
}

/** 33%, 8%: the share saved, in whole percent as the page shows it. */
function formatShare(share: number): string {
    return `${Math.round(100 * share)}%`;
}

/** Why calls are in tokens only, each reason once, escaped (a model name is the client's). */
function unpricedWhy(t: SavingsTotals): string {
    return [...new Set(t.unpriced.map((u) => u.why))].map(escapeMarkdown).join('; ');
}

/** The command link the tooltip ends with. */
export function savingsLink(): string {
    return `[$(graph) Show savings](command:${SHOW_SAVINGS_COMMAND} "What the calls cost, with hdcontext and without it")`;
}

/**
 * The status bar tooltip as Markdown: the plain tooltip's lines, escaped (a session id is the
 * client's: it must not become a link), one to a line, then the one command link.
 */
export function tooltipMarkdown(plain: string): string {
    const lines = plain.split('\n').map(escapeMarkdown);
    return `${lines.join('  \n')}\n\n${savingsLink()}`;
}

/** A fresh nonce: 18 random bytes, base64 (24 characters; `stats/savings` takes 16 to 128). */
export function makeNonce(): string {
    return randomBytes(18).toString('base64');
}

/**
 * The webview's content security policy: nothing from anywhere (no network, no other frame, no
 * form) but the page's own inline script and style, by nonce, and `data:` images.
 */
export function webviewPolicy(nonce: string): string {
    return [
        "default-src 'none'",
        `script-src 'nonce-${nonce}'`,
        `style-src 'nonce-${nonce}'`,
        'img-src data:',
        "base-uri 'none'",
        "form-action 'none'",
    ].join('; ');
}

/** The daemon's page with the policy first in its head, before anything it could apply to. */
export function withPolicy(html: string, nonce: string): string {
    const head = /<head>/i.exec(html);
    if (!head) {
        throw new Error('hdcontext: the savings page from the daemon has no <head>');
    }
    const meta = `<meta http-equiv="Content-Security-Policy" content="${webviewPolicy(nonce)}">`;
    const at = head.index + head[0].length;
    return html.slice(0, at) + meta + html.slice(at);
}

/** `stats/savings`' sessions for a window: the ones it knows, or the whole storage when none. */
export function savingsScope(windowSessions: readonly string[]): string[] | undefined {
    return windowSessions.length > 0 ? [...windowSessions] : undefined;
}
