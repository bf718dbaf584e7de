/**
 * The hdcontext wire protocol, version 2 (shared/PROTOCOL.md), as TypeScript types.
 *
 * No `vscode` import: the Node tests use this module against the real daemon. The entry and
 * Status shapes are declared once, in the `api.d.ts` this extension ships for chat extensions,
 * and re-exported here; the params and results of every method, the method names and the error
 * codes are declared here.
 */

import type {
    Block,
    CacheReport,
    CacheTtl,
    CodeBlock,
    CompactResult,
    CompressionReport,
    DensityReport,
    GetResult,
    HistoryDelta,
    HistoryView,
    IContent,
    MediaBlock,
    PriceMatch,
    PricedAs,
    Speaker,
    Status,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResponseBlock,
    Usage,
} from '../api';

export type {
    Block,
    CacheReport,
    CacheTtl,
    CodeBlock,
    CompactResult,
    CompressionReport,
    DensityReport,
    GetResult,
    HistoryDelta,
    HistoryView,
    IContent,
    MediaBlock,
    PriceMatch,
    PricedAs,
    Speaker,
    Status,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResponseBlock,
    Usage,
};

export const PROTOCOL_VERSION = 2;
/** The settings section the daemon pulls with `workspace/configuration`. */
export const SETTINGS_SECTION = 'hdcontext';

/** Requests, client → daemon. */
export const Methods = {
    open: 'history/open',
    append: 'history/append',
    compact: 'history/compact',
    sync: 'history/sync',
    usage: 'history/usage',
    retrieve: 'history/retrieve',
    refresh: 'history/refresh',
    get: 'history/get',
    setOverride: 'history/setOverride',
    settings: 'history/settings',
    todos: 'history/todos',
    clear: 'history/clear',
    close: 'history/close',
    delete: 'history/delete',
    list: 'history/list',
} as const;

/**
 * Requests the daemon answers that PROTOCOL.md does not list yet (docs/daemon.md, "Additions to
 * PROTOCOL.md"). The tests fail when PROTOCOL.md lists one: move it into `Methods` then.
 */
export const DaemonMethods = {
    /** The savings view's figures, and its page given a nonce. */
    savings: 'stats/savings',
} as const;
export const METHOD_DAEMON_ADDITIONS: readonly string[] = Object.values(DaemonMethods);

/** The language model tool the extension offers for `history/retrieve` (`retrieveTool.ts`). */
export const RETRIEVE_TOOL_NAME = 'hdcontext_retrieve';

/** Daemon → client. */
export const TOKENS_NOTIFICATION = 'history/tokens';
export const SUMMARIZE_REQUEST = 'history/summarize';

export const ErrorCodes = {
    /** Not JSON: `parse error at byte N`. */
    ParseError: -32700,
    /** Not a JSON-RPC 2.0 request, too large, after `shutdown`, or a second `initialize`. */
    InvalidRequest: -32600,
    /** Malformed params: the message names the JSON path and the problem. */
    InvalidParams: -32602,
    /** `unknown session 'abc'`: open it first. */
    UnknownSession: -32001,
    /** No summarizer can be reached for an LLM strategy. */
    NoSummarizer: -32002,
    /** `history/retrieve` of a tool call id the session never saw. */
    UnknownCall: -32003,
    /** The storage folder is held by another daemon, or cannot be used (answered to `initialize`). */
    StorageUnavailable: -32004,
    /** A TCP connection without the right token; the daemon then closes it. */
    Unauthorized: -32005,
    /** A bug in the daemon. */
    InternalError: -32603,
    /** LSP: a request the client answers with a failure (used for `history/summarize`). */
    RequestFailed: -32803,
    /** LSP: the request was cancelled. */
    RequestCancelled: -32800,
} as const;

export const STRATEGIES = ['high-density', 'middle-out', 'top-down-truncation', 'one-shot'] as const;
export type Strategy = (typeof STRATEGIES)[number];
/** Strategies that need a summarizer (an LLM). */
export const LLM_STRATEGIES: readonly string[] = ['middle-out', 'one-shot'];
export const HISTORY_VIEWS: readonly HistoryView[] = ['curated', 'raw', 'transcript'];
/**
 * `cache.ttl`: the lifetimes the client can ask its cache breakpoints: the provider's default
 * only (`5m`), an hour on every one (`1h`), or each as `cache.breakpointTtls` says (`auto`).
 */
export const CACHE_TTL_SETTINGS = ['5m', '1h', 'auto'] as const;
export type CacheTtlSetting = (typeof CACHE_TTL_SETTINGS)[number];

// -- the fields of the shapes, to hold them to PROTOCOL.md and to the daemon ----------------------

/** Usage's fields (PROTOCOL.md "Status"). */
export const USAGE_FIELDS = ['calls', 'inputTokens', 'cacheReadTokens', 'cacheWriteTokens', 'outputTokens'] as const satisfies readonly (keyof Usage)[];
/** Status's fields as PROTOCOL.md lists them. */
export const STATUS_FIELDS = [
    'sessionId',
    'version',
    'entryCount',
    'totalTokens',
    'contextLimit',
    'threshold',
    'percent',
    'strategy',
    'savedTokens',
    'pendingTokens',
    'maskedOutputs',
    'maskedTokens',
    'usage',
] as const satisfies readonly (keyof Status)[];
/**
 * Daemon additions not yet in the contract: Status fields the daemon sends that PROTOCOL.md does
 * not list. The tests fail when PROTOCOL.md lists one (move it to STATUS_FIELDS) or when the
 * daemon sends a field neither list has.
 */
export const STATUS_DAEMON_ADDITIONS = ['predicted', 'mispredicted', 'pricedAs'] as const satisfies readonly (keyof Status)[];
/** CompactResult `cache`'s fields (PROTOCOL.md "CompactResult"). */
export const CACHE_REPORT_FIELDS = [
    'pricing',
    'stablePrefix',
    'editsApplied',
    'editsPending',
    'pendingTokens',
    'cold',
    'breakpoints',
    'breakpointTtls',
    'refreshAt',
] as const satisfies readonly (keyof CacheReport)[];

// -- params and results ---------------------------------------------------------------------------

export interface SessionParams {
    sessionId: string;
}
export interface OpenParams extends SessionParams {
    contextLimit?: number;
    model?: string;
}
export interface AppendParams extends SessionParams {
    entries: IContent[];
}
/** What `history/compact` sends back: the whole history, a delta from `base`, or neither. */
export type CompactReply = 'full' | 'delta' | 'none';
export interface CompactParams extends SessionParams {
    pendingTokens?: number;
    /** The time of the model call, ms since the epoch (default: the daemon's clock). */
    at?: number;
    reply?: CompactReply;
    /** The revision the client holds, for `reply: "delta"`. */
    base?: string;
}
/** `history/compact` on the wire: `history` with reply `full`, `delta` with `delta`, neither with `none`. */
export interface WireCompactResult extends Omit<CompactResult, 'history'> {
    history?: IContent[];
    delta?: HistoryDelta;
}
export interface SyncParams extends SessionParams {
    /** The whole conversation as the client holds it now. */
    entries: IContent[];
    contextLimit?: number;
    model?: string;
}
export interface SyncResult extends Status {
    appended: number;
    /** Index into `entries` where they part from the session's history (an edit or regenerate), else null. */
    forkedAt: number | null;
}
export interface UsageParams extends SessionParams {
    inputTokens: number;
    cacheReadTokens?: number;
    cacheWriteTokens?: number;
    /** Of `cacheWriteTokens`, those written for an hour (priced at 2x, the rest at 1.25x). */
    cacheWrite1hTokens?: number;
    outputTokens?: number;
    at?: number;
    /** How the answer ended, as the provider said (`tool_use`, `end_turn`, …): what the session waits on. */
    stopReason?: string;
}
/** `history/refresh`: what a refresh call sends at `at` (ms since the epoch; default: the daemon's clock). */
export interface RefreshParams extends SessionParams {
    at?: number;
}
export interface RetrieveParams extends SessionParams {
    callId: string;
}
/** A tool call and its response as they were appended, before any pruning. */
export interface RetrieveResult {
    call: ToolCallBlock | null;
    response: ToolResponseBlock;
}
export interface GetParams extends SessionParams {
    view?: HistoryView;
}
export interface SetOverrideParams extends SessionParams {
    key: string;
    /** `null` removes the override. */
    value: unknown;
}
export type SettingSource = 'override' | 'settings' | 'default';
/** The result of `history/setOverride` and `history/settings`: dotted keys. */
export interface SettingsResult {
    values: Record<string, unknown>;
    sources: Record<string, SettingSource>;
}
export interface Todo {
    id: string;
    content: string;
    status: string;
    subtasks?: unknown[];
    [extra: string]: unknown;
}
export interface TodosParams extends SessionParams {
    todos: Todo[];
}
export type ListParams = Record<string, never>;
export interface ListResult {
    sessions: Status[];
}
export interface SummarizeParams {
    sessionId: string;
    strategy: string;
    prompt: string;
    messages: IContent[];
}
export interface SummarizeResult {
    text: string;
}

/** Tokens of a savings figure: what the agent sent, what went to the model, the cache, the output. */
export interface SavingsTokens {
    agent: number;
    model: number;
    cacheRead: number;
    cacheWrite: number;
    output: number;
}
/** Calls of a model the price table does not know (or of a session without usage): tokens only, and why. */
export interface UnpricedCalls {
    model: string | null;
    why: string;
    calls: number;
}
/**
 * Sums over calls (`core/stats.py` `Figures.to_json`). Money in the figures' `currency`; `cost`,
 * `without`, `saved` and `ratio` are null when no call could be priced.
 */
export interface SavingsTotals {
    calls: number;
    refreshCalls: number;
    tokens: SavingsTokens;
    cost: number | null;
    estimatedCost: number | null;
    without: number | null;
    saved: number | null;
    /** cost ÷ without. */
    ratio: number | null;
    refreshCost: number | null;
    pricedCalls: number;
    estimatedCalls: number;
    unpricedCalls: number;
    maskedOutputs: number;
    fetchedBack: number;
    unpriced: UnpricedCalls[];
}
export interface SavingsSession extends SavingsTotals {
    sessionId: string;
    model: string | null;
    pricedAs: { row: string | null; match: string } | null;
    first: string | null;
    last: string | null;
    lastAt: number | null;
    /** Each call: [seq, at, kind, agent, model, cacheRead, cost, without, basis]. */
    series?: unknown[][];
}
/** What the savings page shows (`core/stats.py` `page_json`): counts, prices, model names and session ids. */
export interface SavingsFigures {
    storageDir: string;
    /** ISO 4217, e.g. `USD`. */
    currency: string;
    pricesChecked: string;
    since: string | null;
    generatedAt: number;
    totals: SavingsTotals;
    days: Array<SavingsTotals & { day: string }>;
    sessions: SavingsSession[];
    sessionsWithoutRecords: number;
}
/** `stats/savings`: the figures of these sessions (all the storage folder's when left out). */
export interface SavingsParams {
    sessions?: string[];
    /** For the page's script and style (base64, 16 to 128 characters): asks for `html` too. */
    nonce?: string;
}
export interface SavingsResult {
    figures: SavingsFigures;
    /** The page, when a nonce was given. */
    html: string | null;
    /** Named sessions the storage folder does not hold. */
    missing: string[];
}

/** `initializationOptions.proxy`: the daemon also serves `hdcontext proxy` on loopback. */
export interface ProxyOptions {
    port: number;
    anthropicUpstream?: string;
    openaiUpstream?: string;
    contextLimit?: number;
}

/** `initializationOptions` of `initialize`. */
export interface InitializationOptions {
    settings?: Record<string, unknown>;
    storageDir?: string;
    /** The tool through which the client's model calls `history/retrieve`: pointers then name it. */
    retrieveTool?: string;
    proxy?: ProxyOptions;
}

/** Method name → [params, result], for the typed client. */
export interface RequestMap {
    'history/open': [OpenParams, Status];
    'history/append': [AppendParams, Status];
    'history/compact': [CompactParams, WireCompactResult];
    'history/sync': [SyncParams, SyncResult];
    'history/usage': [UsageParams, Status];
    'history/retrieve': [RetrieveParams, RetrieveResult];
    /** Always the whole history (empty when no refresh pays now); `density` and `compression` null. */
    'history/refresh': [RefreshParams, CompactResult];
    'history/get': [GetParams, GetResult];
    'history/setOverride': [SetOverrideParams, SettingsResult];
    'history/settings': [SessionParams, SettingsResult];
    'history/todos': [TodosParams, Status];
    'history/clear': [SessionParams, Status];
    'history/close': [SessionParams, null];
    'history/delete': [SessionParams, null];
    'history/list': [ListParams, ListResult];
    'stats/savings': [SavingsParams, SavingsResult];
}
export type RequestMethod = keyof RequestMap;

// -- checks at the edge -----------------------------------------------------------------------------

function isRecord(value: unknown): value is Record<string, unknown> {
    return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A `history/tokens` payload the status bar can show (a daemon bug must not break the UI). */
export function isStatus(value: unknown): value is Status {
    if (!isRecord(value)) {
        return false;
    }
    const numbers = ['version', 'entryCount', 'totalTokens', 'contextLimit', 'threshold', 'percent', 'savedTokens'];
    const isNumber = (v: unknown) => typeof v === 'number' && Number.isFinite(v);
    const isUsage = (u: unknown) => isRecord(u) && USAGE_FIELDS.every((k) => isNumber(u[k]));
    // pendingTokens, usage, the masked figures and the price table's are later than protocol 1:
    // checked when present, so an older daemon still shows.
    const optional = (v: unknown, ok: (v: unknown) => boolean) => v === undefined || ok(v);
    return (
        typeof value.sessionId === 'string' &&
        typeof value.strategy === 'string' &&
        numbers.every((k) => isNumber(value[k])) &&
        optional(value.pendingTokens, isNumber) &&
        optional(value.maskedOutputs, isNumber) &&
        optional(value.maskedTokens, isNumber) &&
        optional(value.usage, isUsage) &&
        optional(value.predicted, isUsage) &&
        optional(value.mispredicted, isNumber) &&
        optional(value.pricedAs, isPricedAs)
    );
}

/**
 * `pricedAs`: a model id or null, and a match. A match this extension does not know yet is
 * kept (only `fallback` changes what is shown), so a newer daemon's Status still shows.
 */
function isPricedAs(value: unknown): boolean {
    return isRecord(value) && (value.model === null || typeof value.model === 'string') && typeof value.match === 'string';
}

/** A `stats/savings` reply's figures, as far as the money line reads them (a daemon bug must not break /status). */
export function isSavingsFigures(value: unknown): value is SavingsFigures {
    if (!isRecord(value) || typeof value.currency !== 'string' || !isRecord(value.totals) || !Array.isArray(value.sessions)) {
        return false;
    }
    const t = value.totals;
    const count = (v: unknown) => typeof v === 'number' && Number.isFinite(v) && v >= 0;
    const money = (v: unknown) => v === null || (typeof v === 'number' && Number.isFinite(v));
    return (
        ['calls', 'refreshCalls', 'pricedCalls', 'estimatedCalls', 'unpricedCalls'].every((k) => count(t[k])) &&
        ['cost', 'estimatedCost', 'without', 'saved', 'ratio'].every((k) => money(t[k])) &&
        isRecord(t.tokens) &&
        ['agent', 'model', 'output'].every((k) => count((t.tokens as Record<string, unknown>)[k])) &&
        Array.isArray(t.unpriced) &&
        t.unpriced.every((u) => isRecord(u) && typeof u.why === 'string' && count(u.calls))
    );
}

/** The daemon's `capabilities.experimental.hdcontext.protocolVersion`, if it says one. */
export function serverProtocolVersion(capabilities: unknown): number | undefined {
    if (!isRecord(capabilities) || !isRecord(capabilities.experimental)) {
        return undefined;
    }
    const hd = capabilities.experimental.hdcontext;
    return isRecord(hd) && typeof hd.protocolVersion === 'number' ? hd.protocolVersion : undefined;
}
