import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import type { ChatMessage } from '../../src/chatConversion';
import type { IContent } from '../../src/protocol';
import { SentCalls } from '../../src/sentCalls';

const call = (id: string, name: string, parameters: Record<string, unknown>): IContent => ({ speaker: 'ai', blocks: [{ type: 'tool_call', id, name, parameters }] });
const result = (callId: string, toolName: string, value: unknown): IContent => ({ speaker: 'tool', blocks: [{ type: 'tool_response', callId, toolName, result: value }] });
const FILE = 'line\n'.repeat(200);
const ECHO = 'The file a.py has been updated.\n   1\tx = 2\n   2\ty = 3\n';

/** A read, an edit with its echo, a question: what the chat panel sent. */
const GIVEN: IContent[] = [
    { speaker: 'human', blocks: [{ type: 'text', text: 'Fix a.py.' }] },
    call('r1', 'read_file', { file_path: 'a.py' }),
    result('r1', 'read_file', FILE),
    call('e1', 'replace', { file_path: 'a.py', old_string: 'x = 1', new_string: 'x = 2' }),
    result('e1', 'replace', ECHO),
    { speaker: 'human', blocks: [{ type: 'text', text: 'Thanks.' }] },
];
/** What went to the model: the read pruned, the echo cut to its first line. */
const SENT: IContent[] = [GIVEN[0], GIVEN[3], result('e1', 'replace', 'The file a.py has been updated.'), GIVEN[5]];

const readCall: ChatMessage = { role: 'assistant', parts: [{ kind: 'text', value: 'Reading it.' }, { kind: 'toolCall', callId: 'r1', name: 'read_file', input: { file_path: 'a.py' } }] };
const readResult: ChatMessage = { role: 'user', parts: [{ kind: 'toolResult', callId: 'r1', content: [{ kind: 'text', value: FILE }] }] };
const editCall: ChatMessage = { role: 'assistant', parts: [{ kind: 'toolCall', callId: 'e1', name: 'replace', input: { old_string: 'x = 1', new_string: 'x = 2', file_path: 'a.py' } }] };
const editResult: ChatMessage = {
    role: 'user',
    parts: [
        { kind: 'toolResult', callId: 'e1', content: [{ kind: 'text', value: ECHO }] },
        { kind: 'text', value: 'Thanks.' },
    ],
};

describe('SentCalls', () => {
    it('a message counts as it went: pruned parts gone, replaced ones as their replacement, the rest as it is', () => {
        const calls = new SentCalls();
        calls.record('s', GIVEN, SENT);
        assert.deepEqual(calls.asSent(readCall), { role: 'assistant', parts: [{ kind: 'text', value: 'Reading it.' }] });
        assert.deepEqual(calls.asSent(readResult), { role: 'user', parts: [] });
        assert.deepEqual(calls.asSent(editResult), {
            role: 'user',
            parts: [
                { kind: 'toolResult', callId: 'e1', content: [{ kind: 'text', value: 'The file a.py has been updated.' }] },
                { kind: 'text', value: 'Thanks.' },
            ],
        });
        // Sent as given (the daemon writes the keys in another order): nothing to change.
        assert.equal(calls.asSent(editCall), undefined);
        assert.equal(calls.asSent({ role: 'user', parts: [{ kind: 'text', value: 'Fix a.py.' }] }), undefined);
    });

    it('a call it has not sent counts as it is; the last request of a session is what counts', () => {
        const calls = new SentCalls();
        const unseen: ChatMessage = { role: 'user', parts: [{ kind: 'toolResult', callId: 'r9', content: [{ kind: 'text', value: FILE }] }] };
        assert.equal(calls.asSent(readResult), undefined);
        calls.record('s', GIVEN, SENT);
        assert.equal(calls.asSent(unseen), undefined);
        // The next request sent everything as given (a cold cache let nothing wait... or the
        // daemon could not prune): the read counts whole again.
        calls.record('s', GIVEN, GIVEN);
        assert.equal(calls.asSent(readResult), undefined);
    });

    it('remembers as many conversations as it is told, the newest first', () => {
        const calls = new SentCalls(2);
        calls.record('a', GIVEN, SENT);
        calls.record('b', [], []);
        assert.deepEqual(calls.asSent(readResult)?.parts, []);
        calls.record('c', [], []);
        assert.equal(calls.asSent(readResult), undefined, 'a is forgotten');
    });
});
