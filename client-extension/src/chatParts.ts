/**
 * VS Code's language model message parts to the plain `ChatPart`s of chatConversion.ts and back.
 *
 * One `PartTable` serves one request: it remembers the parts it could only keep by reference
 * (prompt-tsx trees, parts of later API versions such as thinking), so that the way back hands
 * the model the very objects the client sent.
 */

import * as vscode from 'vscode';

import { partRef, promptTsxText, type ChatMessage, type ChatPart, type ChatRole } from './chatConversion';

/** `LanguageModelChatMessageRole.System` (a proposed API): Copilot sends its system prompt with it. */
const SYSTEM_ROLE = 3 as vscode.LanguageModelChatMessageRole;

export class PartTable {
    private readonly originals = new Map<string, unknown>();

    has(ref: string): boolean {
        return this.originals.has(ref);
    }

    fromRequest(messages: readonly vscode.LanguageModelChatRequestMessage[]): ChatMessage[] {
        return messages.map((m, i) => {
            const out: ChatMessage = { role: roleOf(m.role), parts: m.content.map((p, j) => this.part(p, `${i}.${j}`)) };
            if (m.name !== undefined) {
                out.name = m.name;
            }
            return out;
        });
    }

    toVscode(messages: readonly ChatMessage[]): vscode.LanguageModelChatMessage[] {
        return messages.map(
            (m) =>
                new vscode.LanguageModelChatMessage(
                    m.role === 'assistant' ? vscode.LanguageModelChatMessageRole.Assistant : m.role === 'system' ? SYSTEM_ROLE : vscode.LanguageModelChatMessageRole.User,
                    m.parts.map((p) => this.back(p)) as vscode.LanguageModelInputPart[],
                    m.name,
                ),
        );
    }

    private part(p: unknown, where: string): ChatPart {
        if (p instanceof vscode.LanguageModelTextPart) {
            return { kind: 'text', value: p.value };
        }
        if (p instanceof vscode.LanguageModelToolCallPart) {
            return { kind: 'toolCall', callId: p.callId, name: p.name, input: p.input };
        }
        if (p instanceof vscode.LanguageModelToolResultPart) {
            return { kind: 'toolResult', callId: p.callId, content: p.content.map((c, k) => this.part(c, `${where}.${k}`)) };
        }
        if (p instanceof vscode.LanguageModelDataPart) {
            return { kind: 'data', mimeType: p.mimeType, data: p.data };
        }
        if (p instanceof vscode.LanguageModelPromptTsxPart) {
            return this.keep(p, json(p.value) ?? where, promptTsxText(p.value));
        }
        // Variants of a later API (e.g. LanguageModelToolResultPart2) by their shape: a call must
        // stay a call and a result a result, or the history would lose its tool-call pairs.
        const shape = (p ?? {}) as { callId?: unknown; name?: unknown; input?: unknown; content?: unknown; value?: unknown };
        if (typeof shape.callId === 'string' && typeof shape.name === 'string' && typeof shape.input === 'object') {
            return { kind: 'toolCall', callId: shape.callId, name: shape.name, input: shape.input };
        }
        if (typeof shape.callId === 'string' && Array.isArray(shape.content)) {
            return { kind: 'toolResult', callId: shape.callId, content: shape.content.map((c: unknown, k: number) => this.part(c, `${where}.${k}`)) };
        }
        if (typeof shape.value === 'string' && /TextPart/.test(constructorName(p))) {
            return { kind: 'text', value: shape.value };
        }
        // A part this API version does not name (e.g. a thinking part): kept as it is.
        const value = (p as { value?: unknown } | null)?.value;
        const text = typeof value === 'string' ? value : Array.isArray(value) && value.every((v) => typeof v === 'string') ? value.join('') : '';
        return this.keep(p, `${constructorName(p)}:${json(p) ?? where}`, text);
    }

    private keep(original: unknown, identity: string, text: string): ChatPart {
        const ref = partRef(identity);
        this.originals.set(ref, original);
        return { kind: 'opaque', ref, text };
    }

    private back(p: ChatPart): unknown {
        switch (p.kind) {
            case 'text':
                return new vscode.LanguageModelTextPart(p.value);
            case 'toolCall':
                return new vscode.LanguageModelToolCallPart(p.callId, p.name, (p.input ?? {}) as object);
            case 'toolResult':
                return new vscode.LanguageModelToolResultPart(p.callId, p.content.map((c) => this.back(c)));
            case 'data':
                return new vscode.LanguageModelDataPart(p.data, p.mimeType);
            case 'opaque':
                return this.originals.has(p.ref) ? this.originals.get(p.ref) : new vscode.LanguageModelTextPart(p.text);
        }
    }
}

/** The request's messages as they came, for a request that must go out unchanged. */
export function unchanged(messages: readonly vscode.LanguageModelChatRequestMessage[]): vscode.LanguageModelChatMessage[] {
    return messages.map((m) => new vscode.LanguageModelChatMessage(m.role, m.content as vscode.LanguageModelInputPart[], m.name));
}

function roleOf(role: vscode.LanguageModelChatMessageRole): ChatRole {
    return role === vscode.LanguageModelChatMessageRole.Assistant ? 'assistant' : role === SYSTEM_ROLE ? 'system' : 'user';
}

function json(value: unknown): string | undefined {
    try {
        return JSON.stringify(value);
    } catch {
        return undefined;
    }
}

function constructorName(value: unknown): string {
    return (value as { constructor?: { name?: string } } | null)?.constructor?.name ?? typeof value;
}
