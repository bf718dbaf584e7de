import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { ChatSessions } from '../../src/chatSessions';
import type { IContent, Status, WireCompactResult } from '../../src/protocol';

const e = (text: string): IContent => ({ speaker: 'human', blocks: [{ type: 'text', text }] });
const status = { sessionId: 's', version: 1, entryCount: 0, totalTokens: 0, contextLimit: 1, threshold: 0.85, percent: 0, strategy: 'high-density', savedTokens: 0 } as Status;
const reply = (over: Partial<WireCompactResult>): WireCompactResult => ({ status, density: null, compression: null, overLimit: false, ...over });

describe('ChatSessions', () => {
    it('a whole history, then deltas from it', () => {
        const chats = new ChatSessions();
        assert.equal(chats.base('s'), undefined);
        assert.deepEqual(chats.apply('s', reply({ revision: 'r1', delta: { base: null, keep: 0, entries: [e('a'), e('b')] } })), [e('a'), e('b')]);
        assert.equal(chats.base('s'), 'r1');
        // The daemon pruned b and appended c.
        assert.deepEqual(chats.apply('s', reply({ revision: 'r2', delta: { base: 'r1', keep: 1, entries: [e('c')] } })), [e('a'), e('c')]);
        assert.equal(chats.base('s'), 'r2');
        // A protocol-1 daemon answers `history` whole.
        assert.deepEqual(chats.apply('s', reply({ history: [e('x')] })), [e('x')]);
        assert.equal(chats.base('s'), undefined);
    });

    it('a delta from a revision this window does not hold is refused, and changes nothing', () => {
        const chats = new ChatSessions();
        chats.apply('s', reply({ revision: 'r1', delta: { base: null, keep: 0, entries: [e('a')] } }));
        assert.throws(() => chats.apply('s', reply({ revision: 'r3', delta: { base: 'r2', keep: 1, entries: [] } })), /revision r2/);
        assert.throws(() => chats.apply('s', reply({ revision: 'r3', delta: { base: 'r1', keep: 5, entries: [] } })), /keeps 5 entries of a history of 1/);
        assert.throws(() => chats.apply('s', reply({ revision: 'r3' })), /neither a history nor a delta/);
        assert.equal(chats.base('s'), 'r1');
    });

    it('the current conversation is the one served last; old ones drop their history', () => {
        const chats = new ChatSessions(2);
        for (const id of ['a', 'b', 'c']) {
            chats.apply(id, reply({ revision: `r-${id}`, delta: { base: null, keep: 0, entries: [] } }));
        }
        chats.served('b');
        assert.equal(chats.active, 'b');
        assert.deepEqual(chats.recent(), ['b', 'c', 'a']);
        assert.equal(chats.base('a'), undefined, 'beyond max: asks for a whole history next time');
        assert.equal(chats.base('c'), 'r-c');
    });
});
