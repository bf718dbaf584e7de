/**
 * The chat conversations this window sent through hdcontext: which one is current (for
 * `@hdcontext` and the status bar), the order to search for a tool call (`hdcontext_retrieve`),
 * the last history the daemon gave each, so that the next `history/compact` can answer with
 * a delta from it, what each of its tool calls went to the model as (sentCalls.ts), and whether
 * the daemon was told what these conversations cannot ask of the prompt cache (TWIN_OVERRIDES).
 * No `vscode` import.
 */

import type { ChatMessage } from './chatConversion';
import type { DaemonClient } from './daemonClient';
import { ErrorCodes, type IContent, type SettingsResult, type WireCompactResult } from './protocol';
import { SentCalls } from './sentCalls';

/**
 * The session overrides of every conversation of the chat panel's "· hdcontext" models. Their
 * message breakpoints are Copilot's `cache_control` data parts, which carry only 'ephemeral' (no
 * ttl), and VS Code's language model API has no way to ask a lifetime, nor to make a refresh call
 * of one output token: so these conversations get the provider's default lifetime and no refresh
 * call, and the daemon must price them so, whatever `hdcontext.cache.ttl` and
 * `hdcontext.cache.refresh` say (those still apply to the daemon's other clients, such as chat
 * extensions through the API).
 */
export const TWIN_OVERRIDES: ReadonlyArray<readonly [key: string, value: unknown]> = [
    ['cache.ttl', '5m'],
    ['cache.refresh', false],
];

/**
 * Sets TWIN_OVERRIDES on a session (`history/setOverride`, one key at a time). A daemon older
 * than the prompt cache's lifetime refuses the keys as unknown (-32602): it prices the default
 * lifetime anyway, so that is no failure (`log` says so); anything else is.
 */
export async function setTwinOverrides(
    client: Pick<DaemonClient, 'setOverride'>,
    sessionId: string,
    log: (line: string) => void = () => undefined,
): Promise<SettingsResult | undefined> {
    let result: SettingsResult | undefined;
    for (const [key, value] of TWIN_OVERRIDES) {
        try {
            result = await client.setOverride(sessionId, key, value);
        } catch (err) {
            if ((err as { code?: unknown }).code !== ErrorCodes.InvalidParams) {
                throw err;
            }
            log(`session ${sessionId}: the daemon refused ${key} = ${JSON.stringify(value)} (${err instanceof Error ? err.message : String(err)}); an older daemon knows no cache lifetime`);
        }
    }
    return result;
}

/** How many conversations the window remembers at all (ids only, beyond `max`). */
const MAX_REMEMBERED = 256;

interface Held {
    revision: string | undefined;
    history: IContent[];
}

export class ChatSessions {
    private readonly held = new Map<string, Held>();
    /** Most recent first. */
    private order: string[] = [];

    private readonly calls: SentCalls;
    /** Sessions this window set TWIN_OVERRIDES on. */
    private readonly overridden = new Set<string>();

    /** At most `max` conversations keep their history here (the others get a whole one next time). */
    constructor(private readonly max = 16) {
        this.calls = new SentCalls(max);
    }

    /** The revision to ask a delta from, if this window holds one for the session. */
    base(sessionId: string): string | undefined {
        return this.held.get(sessionId)?.revision;
    }

    /**
     * The history a `history/compact` result stands for: `history` when it came whole, else the
     * delta applied to the history held for its base. Throws when the delta's base is not held
     * (nothing is changed then). `given`, the conversation the request handed the daemon, says
     * which of its tool calls and results the history pruned or replaced (see `asSent`).
     */
    apply(sessionId: string, result: WireCompactResult, given?: readonly IContent[]): IContent[] {
        let history: IContent[];
        if (result.history !== undefined) {
            history = result.history;
        } else if (result.delta !== undefined) {
            const { base, keep, entries } = result.delta;
            if (base === null) {
                history = entries;
            } else {
                const held = this.held.get(sessionId);
                if (held?.revision !== base) {
                    throw new Error(`the daemon answered with a delta from revision ${base}, which this window does not hold`);
                }
                if (keep > held.history.length) {
                    throw new Error(`the daemon's delta keeps ${keep} entries of a history of ${held.history.length}`);
                }
                history = held.history.slice(0, keep).concat(entries);
            }
        } else {
            throw new Error('the daemon answered history/compact with neither a history nor a delta');
        }
        this.held.set(sessionId, { revision: result.revision, history });
        if (given !== undefined) {
            this.calls.record(sessionId, given, history);
        }
        this.served(sessionId);
        return history;
    }

    /** A chat message as it went to the model last time (`undefined`: as it is). */
    asSent(message: ChatMessage): ChatMessage | undefined {
        return this.calls.asSent(message);
    }

    /**
     * Whether TWIN_OVERRIDES are to be set on the session before its next compact: once a window,
     * and again whenever the daemon held none of the conversation it was handed (`heldNothing`:
     * the session is new, or was deleted since).
     */
    needsTwinOverrides(sessionId: string, heldNothing: boolean): boolean {
        return heldNothing || !this.overridden.has(sessionId);
    }

    /** TWIN_OVERRIDES are set on the session. */
    twinOverridesSet(sessionId: string): void {
        this.overridden.add(sessionId);
    }

    /** Marks the session as the current conversation. */
    served(sessionId: string): void {
        this.order = [sessionId, ...this.order.filter((id) => id !== sessionId)].slice(0, MAX_REMEMBERED);
        for (const old of this.order.slice(this.max)) {
            this.held.delete(old);
        }
        if (this.overridden.size > MAX_REMEMBERED) {
            // Forgotten conversations: their overrides are set again should they come back.
            const kept = new Set(this.order);
            [...this.overridden].filter((id) => !kept.has(id)).forEach((id) => this.overridden.delete(id));
        }
    }

    /** The conversation served last, if any. */
    get active(): string | undefined {
        return this.order[0];
    }

    /** The conversations served, most recent first. */
    recent(): readonly string[] {
        return this.order;
    }
}
