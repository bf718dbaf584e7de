import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { ChatSessions, TWIN_OVERRIDES, setTwinOverrides } from '../../src/chatSessions';
import { ErrorCodes, type IContent, type SettingsResult, type Status, type WireCompactResult } from '../../src/protocol';

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

    it('the twin overrides: once a window per session, and again when the daemon held none of the conversation', () => {
        const chats = new ChatSessions();
        assert.equal(chats.needsTwinOverrides('s', false), true, 'a session this window has not told');
        chats.twinOverridesSet('s');
        assert.equal(chats.needsTwinOverrides('s', false), false);
        assert.equal(chats.needsTwinOverrides('s', true), true, 'new again, or deleted since');
        assert.equal(chats.needsTwinOverrides('other', false), true);
    });
});

describe('setTwinOverrides', () => {
    const settled: SettingsResult = { values: { 'cache.ttl': '5m', 'cache.refresh': false }, sources: { 'cache.ttl': 'override', 'cache.refresh': 'override' } };

    it('sets cache.ttl 5m and cache.refresh false on the session, one key at a time', async () => {
        assert.deepEqual(TWIN_OVERRIDES, [
            ['cache.ttl', '5m'],
            ['cache.refresh', false],
        ]);
        const asked: unknown[][] = [];
        const result = await setTwinOverrides({ setOverride: async (...args: unknown[]) => (asked.push(args), settled) }, 's');
        assert.deepEqual(asked, [
            ['s', 'cache.ttl', '5m'],
            ['s', 'cache.refresh', false],
        ]);
        assert.equal(result, settled);
    });

    it('a daemon that knows no cache lifetime refuses the keys: said, and no failure; any other failure is one', async () => {
        const logged: string[] = [];
        const older = async (): Promise<SettingsResult> => {
            throw Object.assign(new Error("key: setting 'cache.ttl': \"5m\" is not valid, expected a known hdcontext setting"), { code: ErrorCodes.InvalidParams });
        };
        assert.equal(await setTwinOverrides({ setOverride: older }, 's', (l) => logged.push(l)), undefined);
        assert.equal(logged.length, 2);
        assert.match(logged[0], /session s: the daemon refused cache\.ttl = "5m" .*an older daemon knows no cache lifetime/);
        const gone = async (): Promise<SettingsResult> => {
            throw Object.assign(new Error("unknown session 's'"), { code: ErrorCodes.UnknownSession });
        };
        await assert.rejects(setTwinOverrides({ setOverride: gone }, 's'), /unknown session/);
    });
});
