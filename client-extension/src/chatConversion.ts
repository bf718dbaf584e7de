/**
 * A chat panel's messages (VS Code's `LanguageModelChatRequestMessage`s, as plain data) to
 * hdcontext entries (IContent) and back. No `vscode` import: `chatParts.ts` maps vscode's part
 * classes to the plain `ChatPart`s here, so Node tests cover every rule below.
 *
 * The round trip must give the model what the client sent, minus what the daemon pruned:
 * - a user message's tool results become a `tool` entry, its other parts a `human` entry marked
 *   `metadata.vscodeSameMessage`, which the way back folds into the same user message;
 * - parts IContent has no block for (prompt-tsx trees, parts of later VS Code versions) travel as
 *   a text block holding their text (what the daemon counts) and a `vscodeRef`, the hash of the
 *   part; the way back puts the original part object in its place;
 * - Copilot's prompt-cache breakpoints (data parts of type `cache_control`) move to the newest
 *   messages on every turn, so they are kept out of the history (which would otherwise differ
 *   on every request and fork). On the way back, those of the system prompt return to it; those
 *   on the conversation's messages give way to the daemon's (`cache.breakpoints`: right after
 *   the last part of each entry it names), or, from a daemon that names none, return to the
 *   message at the same distance from the end.
 *
 * Everything here is deterministic: the same messages give the same entries, which is what lets
 * `history/sync` see that a conversation only grew.
 */

import { createHash } from 'node:crypto';

import type { Block, IContent, ToolCallBlock, ToolResponseBlock } from './protocol';

export type ChatRole = 'user' | 'assistant' | 'system';

export type ChatPart =
    | { kind: 'text'; value: string }
    | { kind: 'toolCall'; callId: string; name: string; input: unknown }
    | { kind: 'toolResult'; callId: string; content: ChatPart[] }
    | { kind: 'data'; mimeType: string; data: Uint8Array }
    /** A part kept by reference: `ref` names the original object, `text` is what it reads as. */
    | { kind: 'opaque'; ref: string; text: string };

export interface ChatMessage {
    role: ChatRole;
    parts: ChatPart[];
    name?: string;
}

/** Copilot's prompt-cache breakpoint (its `CustomDataPartMimeTypes.CacheControl`). */
export const CACHE_CONTROL_MIME = 'cache_control';
/** The tool name of a result whose call is not in the conversation. */
export const UNKNOWN_TOOL = 'unknown';

/** A cache breakpoint part the chat put on a message. */
export interface Breakpoint {
    /** The message's distance from the end of the conversation (0 = the last message). */
    fromEnd: number;
    part: ChatPart;
    /** On a system message: the how-manieth system message (0 = the first), else absent. */
    system?: number;
}

/** What `toEntries` gives: the entries, and the cache breakpoints it took out. */
export interface Converted {
    entries: IContent[];
    breakpoints: Breakpoint[];
}

// -- chat messages → entries -------------------------------------------------------------------

export function toEntries(messages: readonly ChatMessage[]): Converted {
    const names = toolNames(messages);
    const entries: IContent[] = [];
    const breakpoints: Breakpoint[] = [];
    let systems = 0;
    messages.forEach((message, i) => {
        const parts: ChatPart[] = [];
        for (const part of message.parts) {
            if (part.kind === 'data' && part.mimeType === CACHE_CONTROL_MIME) {
                const fromEnd = messages.length - 1 - i;
                breakpoints.push(message.role === 'system' ? { fromEnd, part, system: systems } : { fromEnd, part });
            } else {
                parts.push(part);
            }
        }
        systems += message.role === 'system' ? 1 : 0;
        entries.push(...messageEntries({ ...message, parts }, names));
    });
    return { entries, breakpoints };
}

function messageEntries(message: ChatMessage, names: Map<string, string>): IContent[] {
    const meta = message.name === undefined ? {} : { vscodeName: message.name };
    if (message.role === 'assistant') {
        const blocks = message.parts.map((p) => partBlock(p));
        return blocks.length ? [entry('ai', blocks, meta)] : [];
    }
    const results = message.parts.filter((p): p is Extract<ChatPart, { kind: 'toolResult' }> => p.kind === 'toolResult');
    const rest = message.parts.filter((p) => p.kind !== 'toolResult');
    const out: IContent[] = [];
    if (results.length) {
        out.push(entry('tool', results.map((r) => responseBlock(r, names)), meta));
    }
    if (rest.length) {
        out.push(
            entry('human', rest.map((p) => partBlock(p)), {
                ...meta,
                ...(message.role === 'system' ? { vscodeRole: 'system' } : {}),
                ...(results.length ? { vscodeSameMessage: true } : {}),
            }),
        );
    }
    return out;
}

function entry(speaker: IContent['speaker'], blocks: Block[], metadata: Record<string, unknown>): IContent {
    return Object.keys(metadata).length ? { speaker, blocks, metadata } : { speaker, blocks };
}

function partBlock(part: ChatPart): Block {
    switch (part.kind) {
        case 'text':
            return { type: 'text', text: part.value };
        case 'toolCall':
            return { type: 'tool_call', id: part.callId, name: part.name, parameters: part.input ?? {} };
        case 'data':
            return { type: 'media', mimeType: part.mimeType, data: base64(part.data), encoding: 'base64' };
        case 'opaque':
            return { type: 'text', text: part.text, vscodeRef: part.ref };
        case 'toolResult':
            // Only in a user message, where messageEntries takes it out first.
            return { type: 'text', text: resultText(part.content) };
    }
}

/** A tool result: its text when it is one text part, else a list of encoded parts. */
function responseBlock(part: Extract<ChatPart, { kind: 'toolResult' }>, names: Map<string, string>): ToolResponseBlock {
    const only = part.content.length === 1 ? part.content[0] : undefined;
    const result: unknown = only?.kind === 'text' ? only.value : part.content.map((p) => partBlock(p));
    return { type: 'tool_response', callId: part.callId, toolName: names.get(part.callId) ?? UNKNOWN_TOOL, result };
}

function toolNames(messages: readonly ChatMessage[]): Map<string, string> {
    const names = new Map<string, string>();
    for (const m of messages) {
        for (const p of m.parts) {
            if (p.kind === 'toolCall') {
                names.set(p.callId, p.name);
            }
        }
    }
    return names;
}

// -- entries → chat messages -------------------------------------------------------------------

/**
 * The entries as chat messages, with the breakpoints put back. `known` tells which `vscodeRef`s
 * the way back can resolve (the parts of the request being served); a block whose ref is not
 * known becomes plain text. `at`: the daemon's `cache.breakpoints` (entry indices), where the
 * chat's message breakpoints go instead of where the chat had them.
 */
export function toMessages(
    entries: readonly IContent[],
    breakpoints: readonly Breakpoint[] = [],
    known: (ref: string) => boolean = () => true,
    at?: readonly number[],
): ChatMessage[] {
    const out: ChatMessage[] = [];
    /** Per entry: the message it went into, and how many parts that message had after it. */
    const ends: Array<{ message: number; parts: number } | undefined> = [];
    for (const e of entries) {
        ends.push(undefined);
        const meta = (e.metadata ?? {}) as Record<string, unknown>;
        const name = typeof meta.vscodeName === 'string' ? meta.vscodeName : undefined;
        const parts = e.blocks.flatMap((b) => blockParts(b, known));
        const last = out[out.length - 1];
        if (e.speaker === 'ai') {
            if (parts.length) {
                out.push(message('assistant', parts, name));
            }
        } else if (e.speaker === 'human' && meta.vscodeSameMessage === true && last?.role === 'user') {
            last.parts.push(...parts);
        } else if (parts.length) {
            out.push(message(e.speaker === 'human' && meta.vscodeRole === 'system' ? 'system' : 'user', parts, name));
        }
        const target = out[out.length - 1];
        if (parts.length && target) {
            ends[ends.length - 1] = { message: out.length - 1, parts: target.parts.length };
        }
    }
    putBreakpoints(out, breakpoints, ends, at);
    return out;
}

function putBreakpoints(
    out: ChatMessage[],
    breakpoints: readonly Breakpoint[],
    ends: ReadonlyArray<{ message: number; parts: number } | undefined>,
    at: readonly number[] | undefined,
): void {
    const systemOnes = breakpoints.filter((b) => b.system !== undefined);
    const own = breakpoints.filter((b) => b.system === undefined);
    const systems = out.flatMap((m, i) => (m.role === 'system' ? [i] : []));
    const marked = new Set<number>();
    for (const { part, system } of systemOnes) {
        const index = systems[system ?? 0];
        if (index !== undefined) {
            out[index].parts.push(part);
            marked.add(index);
        }
    }
    if (at === undefined || own.length === 0) {
        // No daemon's breakpoints (or a chat that places none on its messages: its model takes none).
        for (const { fromEnd, part } of own) {
            out[out.length - 1 - fromEnd]?.parts.push(part);
        }
        return;
    }
    const template = own[0].part;
    // From the last one back, so that an insertion leaves the places before it as they were.
    const places = [...new Set(at)].flatMap((i) => (ends[i] ? [ends[i]] : [])).sort((a, b) => b.message - a.message || b.parts - a.parts);
    const done = new Set<string>();
    for (const { message: index, parts } of places) {
        const key = `${index}:${parts}`;
        if (done.has(key) || (marked.has(index) && parts === out[index].parts.length - 1)) {
            continue;
        }
        done.add(key);
        out[index].parts.splice(parts, 0, template);
    }
}

function message(role: ChatRole, parts: ChatPart[], name: string | undefined): ChatMessage {
    return name === undefined ? { role, parts } : { role, parts, name };
}

function blockParts(block: Block, known: (ref: string) => boolean): ChatPart[] {
    const ref = typeof block.vscodeRef === 'string' ? block.vscodeRef : undefined;
    if (ref !== undefined && known(ref)) {
        return [{ kind: 'opaque', ref, text: typeof block.text === 'string' ? block.text : '' }];
    }
    switch (block.type) {
        case 'text':
            return block.text ? [{ kind: 'text', value: block.text }] : [];
        case 'tool_call':
            return [{ kind: 'toolCall', callId: block.id, name: block.name, input: isObject(block.parameters) ? block.parameters : {} }];
        case 'tool_response':
            return [{ kind: 'toolResult', callId: block.callId, content: resultParts(block, known) }];
        case 'media':
            return [{ kind: 'data', mimeType: block.mimeType, data: block.encoding === 'base64' ? unbase64(block.data) : new TextEncoder().encode(block.data) }];
        case 'thinking':
            // A thought from another client: the model's reasoning, not something to send back as text.
            return [];
        case 'code':
            return [{ kind: 'text', value: '```' + (block.language ?? '') + '\n' + block.code + '\n```' }];
    }
}

function resultParts(block: ToolResponseBlock, known: (ref: string) => boolean): ChatPart[] {
    const { result } = block;
    let parts: ChatPart[];
    if (typeof result === 'string') {
        parts = [{ kind: 'text', value: result }];
    } else if (Array.isArray(result) && result.every(isEncodedBlock)) {
        parts = result.flatMap((b) => blockParts(b, known));
    } else if (isObject(result) && typeof result.output === 'string' && Object.keys(result).length === 1) {
        // `{output: "…"}`, as llxprt-style agents give results through the API.
        parts = [{ kind: 'text', value: result.output }];
    } else {
        parts = [{ kind: 'text', value: JSON.stringify(result) ?? '' }];
    }
    if (typeof block.error === 'string' && block.error) {
        parts.push({ kind: 'text', value: `Error: ${block.error}` });
    }
    // A result with no content at all is still a result: the call must stay answered.
    return parts.length ? parts : [{ kind: 'text', value: '' }];
}

function isEncodedBlock(value: unknown): value is Block {
    return isObject(value) && (value.type === 'text' || value.type === 'media');
}

function isObject(value: unknown): value is Record<string, unknown> {
    return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// -- what a provider accepts -----------------------------------------------------------------------

/**
 * Where the messages break the tool-call rules providers enforce: every call of an assistant
 * message answered in the very next (user) message, and every result answering a call of the
 * message just before. Empty when they hold.
 */
export function toolPairProblems(messages: readonly ChatMessage[]): string[] {
    const problems: string[] = [];
    messages.forEach((m, i) => {
        const calls = m.parts.filter((p) => p.kind === 'toolCall').map((p) => (p as { callId: string }).callId);
        const next = messages[i + 1];
        const answered = new Set(
            next?.role === 'user' ? next.parts.filter((p) => p.kind === 'toolResult').map((p) => (p as { callId: string }).callId) : [],
        );
        for (const id of calls) {
            if (!answered.has(id)) {
                problems.push(`message ${i}: tool call ${id} has no result in the next message`);
            }
        }
        const prev = messages[i - 1];
        const asked = new Set(
            prev?.role === 'assistant' ? prev.parts.filter((p) => p.kind === 'toolCall').map((p) => (p as { callId: string }).callId) : [],
        );
        for (const p of m.parts) {
            if (p.kind === 'toolResult' && !asked.has(p.callId)) {
                problems.push(`message ${i}: tool result ${p.callId} answers no call of the message before`);
            }
        }
    });
    return problems;
}

// -- identities ------------------------------------------------------------------------------------

/**
 * A session id for the conversation these messages belong to: a hash of its first request (the
 * messages before the first assistant message) and of `scope` (the workspace). Later requests of
 * the same conversation start with the same messages, so they get the same id; a conversation
 * whose first message is edited becomes a new one, an edit further on is a fork `history/sync`
 * handles.
 */
export function conversationId(entries: readonly IContent[], scope: string): string {
    const firstAi = entries.findIndex((e) => e.speaker === 'ai');
    const first = firstAi < 0 ? entries : entries.slice(0, firstAi);
    return 'vscode-chat-' + hash(JSON.stringify([scope, first])).slice(0, 24);
}

/** The `vscodeRef` of a part kept by reference: a hash of its JSON, so it is the same every request. */
export function partRef(json: string): string {
    return 'p' + hash(json).slice(0, 24);
}

function hash(text: string): string {
    return createHash('sha256').update(text).digest('hex');
}

/** The text of a prompt-tsx tree (`LanguageModelPromptTsxPart.value`): its text nodes, in order. */
export function promptTsxText(value: unknown): string {
    const out: string[] = [];
    const walk = (v: unknown): void => {
        if (Array.isArray(v)) {
            v.forEach(walk);
        } else if (isObject(v)) {
            if (typeof v.text === 'string') {
                out.push(v.text);
            }
            for (const [k, child] of Object.entries(v)) {
                if (k !== 'text') {
                    walk(child);
                }
            }
        }
    };
    walk(value);
    return out.join('');
}

/** What `hdcontext_retrieve` hands the model: the call, then its result as it was first returned. */
export function retrievedText(callId: string, call: ToolCallBlock | null, response: ToolResponseBlock): string {
    const what = call ? `${call.name} ${JSON.stringify(call.parameters)}` : response.toolName;
    const head = `The output of tool call ${callId} (${what}) as it was returned, before hdcontext pruned it:`;
    const parts = resultParts(response, () => false);
    return `${head}\n${resultText(parts)}`;
}

/** The text a tool result reads as (for the retrieve tool, and counting). */
export function resultText(parts: readonly ChatPart[]): string {
    return parts
        .map((p) => (p.kind === 'text' ? p.value : p.kind === 'opaque' ? p.text : p.kind === 'data' ? `[${p.mimeType}, ${p.data.length} bytes]` : ''))
        .join('');
}

function base64(data: Uint8Array): string {
    return Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('base64');
}

function unbase64(text: string): Uint8Array {
    return new Uint8Array(Buffer.from(text, 'base64'));
}
