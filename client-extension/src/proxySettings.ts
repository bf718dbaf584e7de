/**
 * The `hdcontext.proxy.*` settings as the daemon's `initializationOptions.proxy`: with
 * `hdcontext.proxy.enabled`, the daemon the extension starts also serves `hdcontext proxy` on
 * loopback, over its own sessions, so an agent pointed at it (Claude Code, Cline, Aider…) shows
 * in the status bar like a chat. No `vscode` import: the Node tests use it as it is.
 */
import type { ProxyOptions } from './protocol';

export const PROXY_SETTINGS = 'proxy';
export const DEFAULT_PROXY_PORT = 8787;

/** Reads one key of section `hdcontext` (`proxy.enabled`…). */
export type Read = (key: string) => unknown;

function text(value: unknown): string | undefined {
    return typeof value === 'string' && value.trim() ? value.trim() : undefined;
}

function whole(value: unknown, min: number, max: number): number | undefined {
    return typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max ? value : undefined;
}

/** The proxy's options, or `undefined` when the proxy is off. */
export function proxyOptions(read: Read): ProxyOptions | undefined {
    if (read('proxy.enabled') !== true) {
        return undefined;
    }
    const options: ProxyOptions = { port: whole(read('proxy.port'), 1, 65535) ?? DEFAULT_PROXY_PORT };
    const anthropic = text(read('proxy.anthropicUpstream'));
    const openai = text(read('proxy.openaiUpstream'));
    const limit = whole(read('proxy.contextLimit'), 1, Number.MAX_SAFE_INTEGER);
    if (anthropic) {
        options.anthropicUpstream = anthropic;
    }
    if (openai) {
        options.openaiUpstream = openai;
    }
    if (limit !== undefined) {
        options.contextLimit = limit;
    }
    return options;
}
