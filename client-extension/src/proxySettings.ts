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

const PROXY_VARIABLES = ['https_proxy', 'HTTPS_PROXY', 'http_proxy', 'HTTP_PROXY'];
const NO_PROXY_VARIABLES = ['no_proxy', 'NO_PROXY'];

/**
 * The daemon's environment: `base`, with the editor's own proxy (`http.proxy`, `http.noProxy`,
 * read by `read` from section `http`) as the variables the daemon's `hdcontext proxy` reaches
 * its upstreams by (HTTPS_PROXY…, NO_PROXY). An agent inside the editor (Cline, Roo…) reaches a
 * provider through that setting; the proxy in front of it must too. The setting wins over the
 * variables, as it does in the editor; unset (or `http.proxySupport: off`), they stay as they are.
 */
export function daemonEnvironment(base: NodeJS.ProcessEnv, read: Read): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = { ...base, PYTHONUNBUFFERED: '1' };
    const proxy = text(read('proxy'));
    if (proxy === undefined || read('proxySupport') === 'off') {
        return env; // with http.proxySupport off the editor's agents do not use it either
    }
    for (const name of PROXY_VARIABLES) {
        env[name] = proxy;
    }
    const noProxy = read('noProxy');
    if (Array.isArray(noProxy)) {
        const hosts = noProxy.map(text).filter((h): h is string => h !== undefined);
        if (hosts.length) {
            for (const name of NO_PROXY_VARIABLES) {
                env[name] = hosts.join(',');
            }
        }
    }
    return env;
}
