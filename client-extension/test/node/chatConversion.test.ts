import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import {
    CACHE_CONTROL_MIME,
    UNKNOWN_TOOL,
    conversationId,
    promptTsxText,
    retrievedText,
    toEntries,
    toMessages,
    toolPairProblems,
    type ChatMessage,
    type ChatPart,
} from '../../src/chatConversion';
import { bigFile } from '../helpers/conversation';

const text = (value: string): ChatPart => ({ kind: 'text', value });
const call = (callId: string, name: string, input: unknown): ChatPart => ({ kind: 'toolCall', callId, name, input });
const result = (callId: string, ...content: ChatPart[]): ChatPart => ({ kind: 'toolResult', callId, content });
const bytes = (s: string) => new TextEncoder().encode(s);

/** An agent turn as VS Code's chat sends it: read a file, write it, answer. */
export function agentChat(file = 'src/app.py'): ChatMessage[] {
    return [
        { role: 'system', parts: [text('You are a coding agent.')] },
        { role: 'user', parts: [text(`Fix the off-by-one in ${file}.`)] },
        { role: 'assistant', parts: [text('Reading it.'), call('call-read-1', 'read_file', { file_path: file })] },
        { role: 'user', parts: [result('call-read-1', text(bigFile(40)))] },
        { role: 'assistant', parts: [call('call-write-1', 'write_file', { file_path: file, content: 'def f():\n    return 1\n' })] },
        { role: 'user', parts: [result('call-write-1', text('ok')), text('Also explain it.')] },
    ];
}

describe('chat messages → entries', () => {
    it('speakers, blocks, tool names looked up from the calls', () => {
        const { entries, breakpoints } = toEntries(agentChat());
        assert.deepEqual(
            entries.map((e) => e.speaker),
            ['human', 'human', 'ai', 'tool', 'ai', 'tool', 'human'],
        );
        assert.deepEqual(entries[0].metadata, { vscodeRole: 'system' });
        assert.deepEqual(entries[2].blocks[1], { type: 'tool_call', id: 'call-read-1', name: 'read_file', parameters: { file_path: 'src/app.py' } });
        assert.deepEqual(entries[3].blocks[0], { type: 'tool_response', callId: 'call-read-1', toolName: 'read_file', result: bigFile(40) });
        // The text after the results of one user message: a human entry folded back into it.
        assert.deepEqual(entries[6], { speaker: 'human', blocks: [{ type: 'text', text: 'Also explain it.' }], metadata: { vscodeSameMessage: true } });
        assert.deepEqual(breakpoints, []);
    });

    it('a result whose call is not in the conversation, data parts, results of several parts', () => {
        const png = new Uint8Array([137, 80, 78, 71]);
        const { entries } = toEntries([
            { role: 'user', parts: [text('look'), { kind: 'data', mimeType: 'image/png', data: png }] },
            { role: 'user', parts: [result('orphan', text('a'), text('b'))] },
        ]);
        assert.deepEqual(entries[0].blocks[1], { type: 'media', mimeType: 'image/png', data: Buffer.from(png).toString('base64'), encoding: 'base64' });
        const response = entries[1].blocks[0] as { toolName: string; result: unknown };
        assert.equal(response.toolName, UNKNOWN_TOOL);
        assert.deepEqual(response.result, [
            { type: 'text', text: 'a' },
            { type: 'text', text: 'b' },
        ]);
    });

    it('the same messages give the same entries (what lets history/sync see a conversation only grew)', () => {
        assert.deepEqual(toEntries(agentChat()), toEntries(agentChat()));
        const longer = [...agentChat(), { role: 'assistant' as const, parts: [text('Done.')] }];
        assert.deepEqual(toEntries(longer).entries.slice(0, 7), toEntries(agentChat()).entries);
    });

    it("Copilot's cache breakpoints stay out of the entries and come back at the same distance from the end", () => {
        const breakpoint: ChatPart = { kind: 'data', mimeType: CACHE_CONTROL_MIME, data: bytes('ephemeral') };
        const chat = agentChat();
        chat[3].parts.push(breakpoint);
        chat[5].parts.push(breakpoint);
        const plain = toEntries(agentChat()).entries;
        const { entries, breakpoints } = toEntries(chat);
        assert.deepEqual(entries, plain, 'a moved breakpoint does not make the history differ');
        assert.deepEqual(
            breakpoints.map((b) => b.fromEnd),
            [2, 0],
        );
        // Pruning the read (two messages) keeps the breakpoint on the last message.
        const pruned = entries.filter((_, i) => i !== 2 && i !== 3);
        const back = toMessages(pruned, breakpoints);
        assert.ok(back[back.length - 1].parts.includes(breakpoint));
    });

    it("the daemon's breakpoints replace the chat's message ones; the system prompt keeps its own", () => {
        const mark: ChatPart = { kind: 'data', mimeType: CACHE_CONTROL_MIME, data: bytes('ephemeral') };
        const chat = agentChat();
        chat[0].parts.push(mark); // the system prompt's
        chat[3].parts.push(mark); // the chat's two on the newest messages
        chat[5].parts.push(mark);
        const { entries, breakpoints } = toEntries(chat);
        assert.deepEqual(
            breakpoints.map((b) => b.system),
            [0, undefined, undefined],
        );
        // The daemon names entry 1 (an anchor: the first user message) and entry 5 (the tool
        // entry that shares the last user message with the text after it).
        const back = toMessages(entries, breakpoints, () => true, [1, 5]);
        const marks = back.map((m) => m.parts.filter((p) => p === mark).length);
        assert.deepEqual(marks, [1, 1, 0, 0, 0, 1]);
        // Right after the entry's own parts: between the tool result and the text that follows.
        assert.deepEqual(
            back[5].parts.map((p) => p.kind),
            ['toolResult', 'data', 'text'],
        );
        assert.deepEqual(back[1].parts.map((p) => p.kind), ['text', 'data']);
        // A breakpoint on the system prompt's entry is not doubled.
        const onSystem = toMessages(entries, breakpoints, () => true, [0, 6]);
        assert.deepEqual(
            onSystem.map((m) => m.parts.filter((p) => p === mark).length),
            [1, 0, 0, 0, 0, 1],
        );
        // A chat that puts none on its messages (a model that takes none) gets none.
        const plain = toEntries(agentChat());
        const none = toMessages(plain.entries, plain.breakpoints, () => true, [1, 6]);
        assert.ok(none.every((m) => m.parts.every((p) => p.kind !== 'data')));
    });
});

describe('entries → chat messages', () => {
    it('round trip: the messages the client sent', () => {
        const chat = agentChat();
        const { entries, breakpoints } = toEntries(chat);
        assert.deepEqual(toMessages(entries, breakpoints), chat);
    });

    it('a stale read pruned (call and result gone): still provider-valid', () => {
        const { entries } = toEntries(agentChat());
        // What the daemon does to a stale read: the call block and the tool entry go.
        const pruned = [entries[0], entries[1], { ...entries[2], blocks: [entries[2].blocks[0]] }, entries[4], entries[5], entries[6]];
        const back = toMessages(pruned);
        assert.deepEqual(toolPairProblems(back), []);
        assert.deepEqual(
            back.map((m) => m.role),
            ['system', 'user', 'assistant', 'assistant', 'user'],
        );
        assert.ok(!JSON.stringify(back).includes('call-read-1'));
    });

    it('results the daemon rewrote, summaries, code and thinking blocks of other clients', () => {
        const back = toMessages([
            { speaker: 'ai', blocks: [{ type: 'tool_call', id: 'c1', name: 'grep', parameters: null }] },
            { speaker: 'tool', blocks: [{ type: 'tool_response', callId: 'c1', toolName: 'grep', result: '[Result pruned — re-run tool to retrieve]' }] },
            { speaker: 'ai', blocks: [{ type: 'tool_call', id: 'c2', name: 'run', parameters: { cmd: 'ls' } }] },
            { speaker: 'tool', blocks: [{ type: 'tool_response', callId: 'c2', toolName: 'run', result: { exitCode: 1 }, error: 'failed' }] },
            { speaker: 'ai', blocks: [{ type: 'thinking', thought: 'hmm' }, { type: 'code', code: 'x = 1', language: 'py' }] },
        ]);
        assert.deepEqual(back[0].parts, [call('c1', 'grep', {})]);
        assert.deepEqual(back[1].parts, [result('c1', text('[Result pruned — re-run tool to retrieve]'))]);
        assert.deepEqual(back[3].parts, [result('c2', text('{"exitCode":1}'), text('Error: failed'))]);
        const llxprt = toMessages([{ speaker: 'tool', blocks: [{ type: 'tool_response', callId: 'c3', toolName: 'read_file', result: { output: 'a\nb' } }] }]);
        assert.deepEqual(llxprt[0].parts, [result('c3', text('a\nb'))]);
        assert.deepEqual(back[4].parts, [text('```py\nx = 1\n```')]);
    });

    it('parts kept by reference come back as themselves, or as their text when not known', () => {
        const tsx: ChatPart = { kind: 'opaque', ref: 'p123', text: 'file contents' };
        const chat: ChatMessage[] = [
            { role: 'user', parts: [text('hi')] },
            { role: 'assistant', parts: [call('c', 'read_file', { path: 'a' })] },
            { role: 'user', parts: [result('c', tsx)] },
        ];
        const { entries } = toEntries(chat);
        assert.deepEqual((entries[2].blocks[0] as { result: unknown }).result, [{ type: 'text', text: 'file contents', vscodeRef: 'p123' }]);
        assert.deepEqual(toMessages(entries, [], (ref) => ref === 'p123'), chat);
        assert.deepEqual(toMessages(entries, [], () => false)[2].parts, [result('c', text('file contents'))]);
    });
});

describe('toolPairProblems', () => {
    it('names a call without its result and a result without its call', () => {
        assert.deepEqual(toolPairProblems(agentChat()), []);
        const chat = agentChat();
        chat.splice(3, 2); // the read's result and the write's call
        const problems = toolPairProblems(chat);
        assert.equal(problems.length, 2);
        assert.match(problems[0], /call-read-1 has no result/);
        assert.match(problems[1], /call-write-1 answers no call/);
    });
});

describe('conversationId', () => {
    const id = (chat: ChatMessage[], scope = 'file:///ws') => conversationId(toEntries(chat).entries, scope);

    it('the same for every request of a conversation; other for another first request or workspace', () => {
        const first = agentChat().slice(0, 2);
        assert.equal(id(agentChat()), id(first));
        assert.equal(id([...agentChat(), { role: 'assistant', parts: [text('more')] }]), id(first));
        assert.notEqual(id([first[0], { role: 'user', parts: [text('Something else.')] }]), id(first));
        assert.notEqual(id(first, 'file:///other'), id(first));
        assert.match(id(first), /^vscode-chat-[0-9a-f]{24}$/);
    });

    it('an edit after the first answer keeps the id (a fork for history/sync)', () => {
        const edited = agentChat();
        edited[5] = { role: 'user', parts: [text('Never mind.')] };
        assert.equal(id(edited), id(agentChat()));
    });
});

describe('promptTsxText and retrievedText', () => {
    it("a prompt-tsx tree's text nodes, in order", () => {
        const tree = { node: { type: 1, ctor: 2, children: [{ type: 2, text: 'line 1\n' }, { type: 1, children: [{ type: 2, text: 'line 2' }] }] } };
        assert.equal(promptTsxText(tree), 'line 1\nline 2');
        assert.equal(promptTsxText(null), '');
    });

    it('what the model gets back: the call and its first result', () => {
        const out = retrievedText(
            'call-read-1',
            { type: 'tool_call', id: 'call-read-1', name: 'read_file', parameters: { file_path: 'a.py' } },
            { type: 'tool_response', callId: 'call-read-1', toolName: 'read_file', result: [{ type: 'text', text: 'x = 1', vscodeRef: 'p1' }] },
        );
        assert.equal(out, 'The output of tool call call-read-1 (read_file {"file_path":"a.py"}) as it was returned, before hdcontext pruned it:\nx = 1');
    });
});
