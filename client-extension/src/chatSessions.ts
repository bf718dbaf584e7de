/**
 * The chat conversations this window sent through hdcontext: which one is current (for
 * `@hdcontext` and the status bar), the order to search for a tool call (`hdcontext_retrieve`),
 * and the last history the daemon gave each, so that the next `history/compact` can answer with
 * a delta from it, and what each of its tool calls went to the model as (sentCalls.ts). No
 * `vscode` import.
 */

import type { ChatMessage } from './chatConversion';
import type { IContent, WireCompactResult } from './protocol';
import { SentCalls } from './sentCalls';

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

    /** Marks the session as the current conversation. */
    served(sessionId: string): void {
        this.order = [sessionId, ...this.order.filter((id) => id !== sessionId)].slice(0, MAX_REMEMBERED);
        for (const old of this.order.slice(this.max)) {
            this.held.delete(old);
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
