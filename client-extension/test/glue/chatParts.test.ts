import './register';

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { PartTable } from '../../src/chatParts';
import {
    LanguageModelChatMessage,
    LanguageModelChatMessageRole as Role,
    LanguageModelDataPart,
    LanguageModelPromptTsxPart,
    LanguageModelTextPart as Text,
    LanguageModelToolCallPart as ToolCall,
    LanguageModelToolResultPart as ToolResult,
} from './vscodeMock';

/** Parts of API versions this build does not name. */
class LanguageModelToolResultPart2 {
    constructor(
        readonly callId: string,
        readonly content: unknown[],
    ) {}
}
class LanguageModelThinkingPart {
    constructor(
        readonly value: string | string[],
        readonly id?: string,
    ) {}
}

describe('PartTable: vscode parts to plain parts and back', () => {
    it('text, calls, results, data; prompt-tsx and unknown parts come back as the very objects', () => {
        const tsx = new LanguageModelPromptTsxPart({ node: { children: [{ text: 'file body' }] } });
        const thinking = new LanguageModelThinkingPart(['step 1, ', 'step 2'], 'th-1');
        const image = new LanguageModelDataPart(new Uint8Array([1, 2, 3]), 'image/png');
        const messages = [
            { role: Role.User, content: [new Text('hi'), image], name: undefined },
            { role: Role.Assistant, content: [thinking, new ToolCall('c1', 'read_file', { path: 'a' })], name: undefined },
            { role: Role.User, content: [new LanguageModelToolResultPart2('c1', [tsx])], name: undefined },
        ];
        const table = new PartTable();
        const plain = table.fromRequest(messages as never);
        assert.deepEqual(plain[0].parts[0], { kind: 'text', value: 'hi' });
        assert.equal(plain[1].parts[0].kind, 'opaque');
        assert.equal((plain[1].parts[0] as { text: string }).text, 'step 1, step 2');
        assert.deepEqual(plain[1].parts[1], { kind: 'toolCall', callId: 'c1', name: 'read_file', input: { path: 'a' } });
        const result = plain[2].parts[0] as { kind: string; callId: string; content: Array<{ kind: string; text: string }> };
        assert.equal(result.kind, 'toolResult', 'a result of a later API version is still a result');
        assert.equal(result.content[0].text, 'file body');
        // The same parts give the same refs (what keeps a conversation's entries equal request after request).
        assert.deepEqual(new PartTable().fromRequest(messages as never), plain);

        const back = table.toVscode(plain) as unknown as LanguageModelChatMessage[];
        assert.deepEqual(
            back.map((m) => m.role),
            [Role.User, Role.Assistant, Role.User],
        );
        const content = back.map((m) => m.content as unknown[]);
        assert.ok(content[0][1] instanceof LanguageModelDataPart);
        assert.equal(content[1][0], thinking, 'the thinking part itself');
        assert.ok(content[2][0] instanceof ToolResult);
        assert.equal((content[2][0] as ToolResult).content[0], tsx, 'the prompt-tsx part itself');
    });
});
