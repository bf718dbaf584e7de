import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';

import { ErrorCodes, Methods, SUMMARIZE_REQUEST, TOKENS_NOTIFICATION, isStatus, serverProtocolVersion } from '../../src/protocol';
import { REPO_ROOT } from '../helpers/realDaemon';

// shared/ sits beside the repository (in CI too); the checks against PROTOCOL.md skip without it.
const PROTOCOL_MD = [path.join(REPO_ROOT, '..', 'shared', 'PROTOCOL.md')].find((p) => fs.existsSync(p));

describe('protocol constants', () => {
    it('isStatus accepts a Status and refuses the rest', () => {
        const s = {
            sessionId: 'a',
            version: 0,
            entryCount: 0,
            totalTokens: 0,
            contextLimit: 200000,
            threshold: 0.85,
            percent: 0,
            strategy: 'high-density',
            savedTokens: 0,
        };
        assert.ok(isStatus(s));
        const usage = { calls: 1, inputTokens: 10, cacheReadTokens: 0, cacheWriteTokens: 10, outputTokens: 2 };
        assert.ok(isStatus({ ...s, pendingTokens: 0, usage }));
        assert.ok(!isStatus({ ...s, pendingTokens: 'x' }));
        assert.ok(isStatus({ ...s, maskedOutputs: 2, maskedTokens: 900 }));
        assert.ok(!isStatus({ ...s, maskedOutputs: '2' }));
        assert.ok(!isStatus({ ...s, maskedTokens: null }));
        assert.ok(!isStatus({ ...s, usage: { ...usage, inputTokens: null } }));
        assert.ok(!isStatus({ ...s, totalTokens: '3' }));
        assert.ok(!isStatus({ ...s, percent: Number.NaN }));
        assert.ok(!isStatus(null));
        assert.ok(!isStatus([s]));
        const { sessionId: _drop, ...noId } = s;
        assert.ok(!isStatus(noId));
    });

    it('serverProtocolVersion reads capabilities.experimental.hdcontext', () => {
        assert.equal(serverProtocolVersion({ experimental: { hdcontext: { protocolVersion: 1 } } }), 1);
        assert.equal(serverProtocolVersion({ experimental: {} }), undefined);
        assert.equal(serverProtocolVersion(undefined), undefined);
    });

    it('every method, notification and error code of PROTOCOL.md is declared', { skip: !PROTOCOL_MD && 'shared/PROTOCOL.md not found' }, () => {
        const text = fs.readFileSync(PROTOCOL_MD as string, 'utf8');
        const documented = new Set([...text.matchAll(/^\| `(history\/\w+)` \|/gm)].map((m) => m[1]));
        assert.deepEqual([...documented].sort(), Object.values(Methods).sort());
        assert.ok(text.includes(`Notification \`${TOKENS_NOTIFICATION}\``));
        assert.ok(text.includes(`Request \`${SUMMARIZE_REQUEST}\``));
        const codes = [...text.matchAll(/^\| (-32\d{3}) \|/gm)].map((m) => Number(m[1])).sort();
        // RequestFailed and RequestCancelled are LSP's, not the daemon's.
        const ours = Object.entries(ErrorCodes)
            .filter(([name]) => name !== 'RequestFailed' && name !== 'RequestCancelled')
            .map(([, code]) => code)
            .sort();
        assert.deepEqual(codes, ours);
    });
});
