/**
 * The API of the hdcontext extension (`hdcontext.hdcontext`), for chat extensions.
 *
 * A chat extension hands its conversation to the hdcontext daemon and, before each model call,
 * asks it for the history to send:
 *
 * ```ts
 * const api: HdcontextApi = await vscode.extensions.getExtension('hdcontext.hdcontext')!.activate();
 * await api.open('chat-1', { contextLimit: 128000, model: 'gpt-4o' });
 * await api.append('chat-1', [{ speaker: 'human', blocks: [{ type: 'text', text: 'Hi' }] }]);
 * const { history } = await api.compact('chat-1', { pendingTokens: 2000 });
 * // send `history` to the model, then append its answer (and tool calls / results) again
 * ```
 *
 * Every call waits for the daemon to be up; it rejects with an Error when the daemon cannot
 * start (its message says why, e.g. that the interpreter lacks the `hdcontext` package), and with
 * an Error whose `code` is the protocol's error code when the daemon refuses the request
 * (-32602 bad params, -32001 unknown session, -32002 no summarizer for an LLM strategy).
 *
 * The wire shapes below are those of the hdcontext wire protocol, version 2 (PROTOCOL.md).
 * This file needs no other declarations (no `vscode` import): copy it into your extension.
 */

/** A text block. */
export interface TextBlock {
    type: 'text';
    text: string;
    [extra: string]: unknown;
}
/** A tool call made by the model. */
export interface ToolCallBlock {
    type: 'tool_call';
    id: string;
    name: string;
    parameters: unknown;
    [extra: string]: unknown;
}
/** The result of a tool call (`callId` is the call's `id`). */
export interface ToolResponseBlock {
    type: 'tool_response';
    callId: string;
    toolName: string;
    result: unknown;
    error?: string;
    [extra: string]: unknown;
}
export interface ThinkingBlock {
    type: 'thinking';
    thought: string;
    [extra: string]: unknown;
}
export interface MediaBlock {
    type: 'media';
    mimeType: string;
    data: string;
    encoding: 'url' | 'base64';
    [extra: string]: unknown;
}
export interface CodeBlock {
    type: 'code';
    code: string;
    language?: string;
    [extra: string]: unknown;
}
export type Block = TextBlock | ToolCallBlock | ToolResponseBlock | ThinkingBlock | MediaBlock | CodeBlock;

export type Speaker = 'human' | 'ai' | 'tool';

/** One history entry (llxprt's IContent JSON). Unknown extra keys are kept unchanged. */
export interface IContent {
    speaker: Speaker;
    blocks: Block[];
    /** `timestamp` (ms since the epoch) is set by the daemon on append when absent. */
    metadata?: { timestamp?: number; id?: string; [key: string]: unknown };
    [extra: string]: unknown;
}

/** What a status bar shows about one session. */
export interface Status {
    sessionId: string;
    /** Increases by one with every change to the session's history. */
    version: number;
    entryCount: number;
    /** Tokens of the curated view the next model call would receive. */
    totalTokens: number;
    contextLimit: number;
    /** Share of contextLimit at which compression runs, in (0, 1]. */
    threshold: number;
    /** 100 × totalTokens / contextLimit. */
    percent: number;
    strategy: string;
    /** Tokens that density edits and compression have removed so far. */
    savedTokens: number;
    /**
     * Tokens that density edits waiting for a cheaper moment would remove (cache-aware schedule).
     * Absent from a protocol-1 daemon.
     */
    pendingTokens?: number;
    /** What the provider billed over the session's model calls (`history/usage`). Absent from a protocol-1 daemon. */
    usage?: Usage;
    /**
     * Tool outputs the model had already read that masking replaced with a pointer so far
     * (`compression.density.masking`); each comes back whole from `history/retrieve` by its call id.
     * Absent from a daemon without masking.
     */
    maskedOutputs?: number;
    /** The tokens those outputs took, less their pointers (part of `savedTokens`). */
    maskedTokens?: number;
    /**
     * What the daemon expected of the calls `usage` counts, in its own count of the history's
     * tokens (the provider also counts the system prompt and tools): input, read from the cache,
     * written to it. Absent from a daemon without a price table.
     */
    predicted?: Usage;
    /**
     * Reported calls whose share of input read from the prompt cache was more than a quarter off
     * what the daemon expected: a price model that does not fit the provider shows here.
     */
    mispredicted?: number;
    /** The row of the daemon's price table that prices the session's calls, and how it was found. */
    pricedAs?: PricedAs;
}

/**
 * How a session's model found its prices: `exact` (its own row of the price table), `family`
 * (the row of the model it is a dated or renamed release of), `fallback` (the model is not in
 * the table: its provider's most common row stands in), `override` (the user's
 * `hdcontext.cache.prices`), `preset` (a provider's preset, e.g. Gemini's, or `cache.pricing`
 * naming another provider).
 */
export type PriceMatch = 'exact' | 'family' | 'fallback' | 'override' | 'preset';

export interface PricedAs {
    /** The row's model id; null for a preset. */
    model: string | null;
    match: PriceMatch;
}

/** Totals of the usage reported for a session's model calls. */
export interface Usage {
    calls: number;
    inputTokens: number;
    cacheReadTokens: number;
    cacheWriteTokens: number;
    outputTokens: number;
}

export interface DensityReport {
    removals: number;
    replacements: number;
    /** Entries each rule touched; `maskedPruned` is absent from a daemon without masking. */
    metadata: { readWritePairsPruned: number; fileDeduplicationsPruned: number; recencyPruned: number; maskedPruned?: number };
    tokensBefore: number;
    tokensAfter: number;
}

export interface CompressionReport {
    strategy: string;
    tokensBefore: number;
    tokensAfter: number;
    /** A JSONL export of the whole transcript, named in LLM summaries; null when none was written. */
    transcriptPath: string | null;
}

/**
 * The new history as a change of an earlier one: the first `keep` entries of revision `base`,
 * then `entries`. `base` null: `entries` is the whole history.
 */
export interface HistoryDelta {
    base: string | null;
    keep: number;
    entries: IContent[];
}

/** What the compaction means for the provider's prompt cache. */
export interface CacheReport {
    /** The price model in use: `anthropic`, `openai`, `gemini` or `none`. */
    pricing: string;
    /** How many leading entries are unchanged from the previous reply (what the cache can serve). */
    stablePrefix: number;
    editsApplied: number;
    /** Density edits held back until applying them costs less than it saves. */
    editsPending: number;
    pendingTokens: number;
    /** The cache is taken to be cold (its time to live passed, or the provider said so). */
    cold: boolean;
    /**
     * Indices of `history` whose last block should carry a prompt-cache breakpoint (Anthropic
     * `cache_control`, OpenAI's `prompt_cache_breakpoint`), ascending, the last entry always among
     * them, at most `hdcontext.cache.maxBreakpoints`: put the request's message breakpoints there
     * and nowhere else in the messages (those on tools and system stay the client's). Absent from
     * a daemon older than that.
     */
    breakpoints?: number[];
    /**
     * One lifetime per breakpoint, in the same order, every `1h` before every `5m`: put
     * `cache_control: {type: 'ephemeral', ttl: '1h'}` on a breakpoint named `1h` (and make your
     * own tools and system breakpoints an hour too when any message breakpoint is). All `5m`
     * unless `hdcontext.cache.ttl` is `auto` or `1h`. Absent from a daemon older than that.
     */
    breakpointTtls?: CacheTtl[];
    /**
     * With `hdcontext.cache.refresh`: when (ms since the epoch) a refresh call keeps the cache
     * for less than the rewrite a longer pause would cost, if no model call has come by then;
     * null when none pays. Absent from a daemon older than that.
     */
    refreshAt?: number | null;
}

/** A prompt-cache breakpoint's lifetime: the provider's default (`5m`: five minutes at Anthropic) or an hour. */
export type CacheTtl = '5m' | '1h';

/** What `compact` returns: the history to send to the model, and what was done to it. */
export interface CompactResult {
    history: IContent[];
    /** Names this history; a later `compact` can answer as a delta from it. Absent from a protocol-1 daemon. */
    revision?: string;
    /** Absent from a protocol-1 daemon. */
    cache?: CacheReport;
    status: Status;
    density: DensityReport | null;
    compression: CompressionReport | null;
    /** True when even the emergency pass left the history over the context limit. */
    overLimit: boolean;
}

/**
 * `curated`: what a model receives; `raw`: the working history with density edits applied;
 * `transcript`: everything ever appended, never pruned.
 */
export type HistoryView = 'curated' | 'raw' | 'transcript';

export interface GetResult {
    entries: IContent[];
    status: Status;
}

/** Structurally the same as `vscode.Disposable`. */
export interface Disposable {
    dispose(): unknown;
}
/** Structurally the same as `vscode.Event<T>`. */
export type Event<T> = (listener: (e: T) => unknown, thisArgs?: unknown, disposables?: Disposable[]) => Disposable;

export interface OpenOptions {
    /** The chat model's context window: overrides `hdcontext.contextLimit` for this session. */
    contextLimit?: number;
    /** The chat model's name (informational). */
    model?: string;
}

export interface CompactOptions {
    /** Tokens about to be added (e.g. the new user message and tool schemas). */
    pendingTokens?: number;
}

export interface HdcontextApi {
    /** The wire protocol version this extension speaks. */
    readonly protocolVersion: 2;
    /** Creates the session, or resumes the stored one (also after a restart). */
    open(sessionId: string, options?: OpenOptions): Promise<Status>;
    /** Appends entries, all or none. */
    append(sessionId: string, entries: IContent[]): Promise<Status>;
    /** Call it before each model call: returns the history to send. */
    compact(sessionId: string, options?: CompactOptions): Promise<CompactResult>;
    /** One view of the session's history (default `curated`). */
    getHistory(sessionId: string, view?: HistoryView): Promise<GetResult>;
    /** Fires with a session's Status after every change to it (the daemon's `history/tokens`). */
    readonly onTokens: Event<Status>;
}
