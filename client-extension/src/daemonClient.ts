/**
 * A typed client for the hdcontext daemon, over any JSON-RPC connection that can send requests
 * and take notifications and requests: a vscode-jsonrpc `MessageConnection` (the Node tests) or
 * vscode-languageclient's `LanguageClient` (the extension). No `vscode` import.
 */

import {
    Methods,
    SUMMARIZE_REQUEST,
    TOKENS_NOTIFICATION,
    isStatus,
    type CompactResult,
    type GetResult,
    type HistoryView,
    type IContent,
    type ListResult,
    type RequestMap,
    type RequestMethod,
    type SettingsResult,
    type Status,
    type SummarizeParams,
    type SummarizeResult,
    type Todo,
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

    compact(sessionId: string, options: { pendingTokens?: number } = {}): Promise<CompactResult> {
        return this.request(Methods.compact, { sessionId, ...definedOnly(options) });
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
