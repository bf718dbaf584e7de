/**
 * What went to the model, tool call by tool call, in the last request of each conversation this
 * window sent: a call or result the daemon pruned went as nothing, one it replaced (a pointer, an
 * edit's echo cut to its first line, a write's content as a pointer) went as the replacement.
 *
 * Why: the chat panel decides when to summarize its conversation from the token counts the
 * model gives it (`provideTokenCount`, message by message). Counted as they came, the messages
 * reach the chat's limit as early as without hdcontext, and the chat summarizes away what
 * hdcontext had made room for. Counted as they go out, the chat's own summarization comes later
 * by what hdcontext saved. Tool calls and results are the parts the daemon prunes or replaces
 * and the ones a message can be matched by (their call ids); the other parts of a message are
 * counted as they are. No `vscode` import.
 */

import { toMessages, type ChatMessage, type ChatPart } from './chatConversion';
import type { Block, IContent } from './protocol';

/** A call id's blocks as they went out: `null` pruned, a block replaced; absent: as given. */
interface Sent {
    call?: Block | null;
    response?: Block | null;
}

export class SentCalls {
    /** By session, the conversation sent last at the end (the first searched). */
    private readonly sessions = new Map<string, Map<string, Sent>>();

    constructor(private readonly maxSessions = 16) {}

    /**
     * Records a request: `given`, the conversation handed to the daemon, and `sent`, the
     * history that went to the model. Replaces what the session's previous request recorded.
     */
    record(sessionId: string, given: readonly IContent[], sent: readonly IContent[]): void {
        const out = new Map<string, Block>();
        for (const entry of sent) {
            for (const block of entry.blocks) {
                const key = blockKey(block);
                if (key !== undefined) {
                    out.set(key, block);
                }
            }
        }
        const changed = new Map<string, Sent>();
        for (const entry of given) {
            for (const block of entry.blocks) {
                const key = blockKey(block);
                if (key === undefined) {
                    continue;
                }
                const went = out.get(key);
                if (went !== undefined && sameJson(went, block)) {
                    continue;
                }
                const [kind, callId] = splitKey(key);
                const sentOf = changed.get(callId) ?? {};
                sentOf[kind] = went ?? null;
                changed.set(callId, sentOf);
            }
        }
        this.sessions.delete(sessionId);
        this.sessions.set(sessionId, changed);
        for (const old of this.sessions.keys()) {
            if (this.sessions.size <= this.maxSessions) {
                break;
            }
            this.sessions.delete(old);
        }
    }

    /**
     * The message as it went to the model in the last request that held it, or `undefined` when
     * it went as it is (or was never sent). Parts the daemon pruned are gone from it, so it may
     * have none.
     */
    asSent(message: ChatMessage): ChatMessage | undefined {
        let changed = false;
        const parts = message.parts.flatMap((part) => {
            const went = this.went(part);
            if (went === undefined) {
                return [part];
            }
            changed = true;
            return went;
        });
        return changed ? { ...message, parts } : undefined;
    }

    /** What went out for a tool call or result part, if not the part itself. */
    private went(part: ChatPart): ChatPart[] | undefined {
        if (part.kind !== 'toolCall' && part.kind !== 'toolResult') {
            return undefined;
        }
        const kind = part.kind === 'toolCall' ? 'call' : 'response';
        const sent = this.lookup(part.callId, kind);
        if (sent === undefined) {
            return undefined;
        }
        if (sent === null) {
            return [];
        }
        // The replacement as the twin sends it (refs resolved to their text: it is only counted).
        const speaker = kind === 'call' ? 'ai' : 'tool';
        return toMessages([{ speaker, blocks: [sent] }], [], () => false).flatMap((m) => m.parts);
    }

    private lookup(callId: string, kind: keyof Sent): Block | null | undefined {
        const sessions = [...this.sessions.values()];
        for (let i = sessions.length - 1; i >= 0; i--) {
            const sent = sessions[i].get(callId);
            if (sent !== undefined && kind in sent) {
                return sent[kind];
            }
        }
        return undefined;
    }
}

function blockKey(block: Block): string | undefined {
    if (block.type === 'tool_call') {
        return `call:${block.id}`;
    }
    if (block.type === 'tool_response') {
        return `response:${block.callId}`;
    }
    return undefined;
}

function splitKey(key: string): [keyof Sent, string] {
    const colon = key.indexOf(':');
    return [key.slice(0, colon) as keyof Sent, key.slice(colon + 1)];
}

/** Equal as JSON values (the daemon may write an object's keys in another order). */
function sameJson(a: unknown, b: unknown): boolean {
    if (a === b) {
        return true;
    }
    if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || Array.isArray(a) !== Array.isArray(b)) {
        return false;
    }
    if (Array.isArray(a) && Array.isArray(b)) {
        return a.length === b.length && a.every((v, i) => sameJson(v, b[i]));
    }
    const ka = Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined);
    const kb = Object.keys(b).filter((k) => (b as Record<string, unknown>)[k] !== undefined);
    return ka.length === kb.length && ka.every((k) => sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}
