/**
 * A typed client for the hdcontext daemon, over any JSON-RPC connection that can send requests
 * and take notifications and requests: a vscode-jsonrpc `MessageConnection` (the Node tests) or
 * vscode-languageclient's `LanguageClient` (the extension). No `vscode` import.
 */

import {
    DaemonMethods,
    Methods,
    SUMMARIZE_REQUEST,
    TOKENS_NOTIFICATION,
    isStatus,
    type CompactResult,
    type GetResult,
    type HistoryView,
    type IContent,
    type ListResult,
    type RetrieveResult,
    type RequestMap,
    type RequestMethod,
    type SavingsParams,
    type SavingsResult,
    type SettingsResult,
    type Status,
    type SummarizeParams,
    type SummarizeResult,
    type SyncResult,
    type Todo,
    type UsageParams,
    type WireCompactResult,
} from './protocol';

export interface Disposable {
    dispose(): unknown;
}

/** The shape of vscode-jsonrpc's (and vscode's) CancellationToken. */
export interface CancellationToken {
    readonly isCancellationRequested: boolean;
    onCancellationRequested(listener: (e: unknown) => unknown): Disposable;
}

/** What both a vscode-jsonrpc MessageConnection and a LanguageClient provide. */
export interface RpcConnection {
    sendRequest<R>(method: string, params: unknown): Promise<R>;
    onNotification(method: string, handler: (params: any) => void): Disposable;
    onRequest(method: string, handler: (params: any, token: CancellationToken) => unknown): Disposable;
}

export type SummarizeHandler = (params: SummarizeParams, token: CancellationToken) => Promise<SummarizeResult>;

export class DaemonClient {
    constructor(private readonly connection: RpcConnection) {}

    /** Any request of the protocol, typed by its method name. */
    request<M extends RequestMethod>(method: M, params: RequestMap[M][0]): Promise<RequestMap[M][1]> {
        return this.connection.sendRequest<RequestMap[M][1]>(method, params);
    }

    open(sessionId: string, options: { contextLimit?: number; model?: string } = {}): Promise<Status> {
        return this.request(Methods.open, { sessionId, ...definedOnly(options) });
    }

    append(sessionId: string, entries: IContent[]): Promise<Status> {
        return this.request(Methods.append, { sessionId, entries });
    }

    /** The whole history (reply `full`). */
    async compact(sessionId: string, options: { pendingTokens?: number; at?: number } = {}): Promise<CompactResult> {
        // No `reply`: the default, `full`, always carries `history`.
        return (await this.request(Methods.compact, { sessionId, ...definedOnly(options) })) as CompactResult;
    }

    /** The history as a delta from `base` (the revision the caller holds), or whole when `base` is unknown. */
    compactDelta(sessionId: string, options: { base?: string; pendingTokens?: number; at?: number } = {}): Promise<WireCompactResult> {
        return this.request(Methods.compact, { sessionId, reply: 'delta', ...definedOnly(options) });
    }

    /** Hands over the whole conversation as the client holds it; the daemon appends what is new, or forks. */
    sync(sessionId: string, entries: IContent[], options: { contextLimit?: number; model?: string } = {}): Promise<SyncResult> {
        return this.request(Methods.sync, { sessionId, entries, ...definedOnly(options) });
    }

    usage(params: UsageParams): Promise<Status> {
        return this.request(Methods.usage, definedOnly(params) as UsageParams);
    }

    /**
     * What a refresh call sends now (or at `at`): the history the provider holds, its breakpoints
     * and their lifetimes; an empty history when no refresh pays. The daemon bills it like a call.
     */
    refresh(sessionId: string, options: { at?: number } = {}): Promise<CompactResult> {
        return this.request(Methods.refresh, { sessionId, ...definedOnly(options) });
    }

    retrieve(sessionId: string, callId: string): Promise<RetrieveResult> {
        return this.request(Methods.retrieve, { sessionId, callId });
    }

    get(sessionId: string, view?: HistoryView): Promise<GetResult> {
        return this.request(Methods.get, view === undefined ? { sessionId } : { sessionId, view });
    }

    setOverride(sessionId: string, key: string, value: unknown): Promise<SettingsResult> {
        return this.request(Methods.setOverride, { sessionId, key, value });
    }

    settings(sessionId: string): Promise<SettingsResult> {
        return this.request(Methods.settings, { sessionId });
    }

    todos(sessionId: string, todos: Todo[]): Promise<Status> {
        return this.request(Methods.todos, { sessionId, todos });
    }

    clear(sessionId: string): Promise<Status> {
        return this.request(Methods.clear, { sessionId });
    }

    close(sessionId: string): Promise<null> {
        return this.request(Methods.close, { sessionId });
    }

    delete(sessionId: string): Promise<null> {
        return this.request(Methods.delete, { sessionId });
    }

    list(): Promise<ListResult> {
        return this.request(Methods.list, {});
    }

    /**
     * `stats/savings` (a daemon addition): what the calls of these sessions (of the whole storage
     * folder when none) cost and would have cost without hdcontext; with a nonce, the page too.
     */
    savings(params: SavingsParams = {}): Promise<SavingsResult> {
        return this.request(DaemonMethods.savings, definedOnly(params) as SavingsParams);
    }

    /** `history/tokens`; payloads that are not a Status are dropped (and reported to `onBad`). */
    onTokens(handler: (status: Status) => void, onBad?: (payload: unknown) => void): Disposable {
        return this.connection.onNotification(TOKENS_NOTIFICATION, (params: unknown) => {
            if (isStatus(params)) {
                handler(params);
            } else if (onBad) {
                onBad(params);
            }
        });
    }

    /** Answers `history/summarize`. A rejection is sent back as the error (code kept when it has one). */
    onSummarize(handler: SummarizeHandler): Disposable {
        return this.connection.onRequest(SUMMARIZE_REQUEST, (params: SummarizeParams, token: CancellationToken) =>
            handler(params, token),
        );
    }
}

function definedOnly<T extends object>(options: T): Partial<T> {
    const out: Partial<T> = {};
    for (const [k, v] of Object.entries(options) as [keyof T, T[keyof T]][]) {
        if (v !== undefined) {
            out[k] = v;
        }
    }
    return out;
}
