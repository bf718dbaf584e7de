import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';

import {
    CACHE_REPORT_FIELDS,
    DaemonMethods,
    ErrorCodes,
    METHOD_DAEMON_ADDITIONS,
    Methods,
    STATUS_DAEMON_ADDITIONS,
    STATUS_FIELDS,
    SUMMARIZE_REQUEST,
    TOKENS_NOTIFICATION,
    USAGE_FIELDS,
    isStatus,
    serverProtocolVersion,
} from '../../src/protocol';
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
        // The price table's figures (daemon additions), checked when present.
        const priced = { predicted: usage, mispredicted: 1, pricedAs: { model: 'claude-opus-5-5', match: 'fallback' } };
        assert.ok(isStatus({ ...s, ...priced }));
        assert.ok(isStatus({ ...s, ...priced, pricedAs: { model: null, match: 'preset' } }));
        assert.ok(isStatus({ ...s, ...priced, pricedAs: { model: 'x', match: 'a match of a newer daemon' } }), 'an unknown match still shows');
        assert.ok(!isStatus({ ...s, ...priced, pricedAs: { model: 3, match: 'exact' } }));
        assert.ok(!isStatus({ ...s, ...priced, pricedAs: 'claude-opus-5-5' }));
        assert.ok(!isStatus({ ...s, ...priced, mispredicted: '1' }));
        assert.ok(!isStatus({ ...s, ...priced, predicted: { ...usage, calls: undefined } }));
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
        const documented = new Set([...text.matchAll(/^\| `(\w+\/\w+)` \|/gm)].map((m) => m[1]));
        assert.deepEqual([...documented].sort(), Object.values(Methods).sort());
        // The daemon's additions (docs/daemon.md): not in the contract yet, and not in Methods.
        assert.deepEqual([...METHOD_DAEMON_ADDITIONS], Object.values(DaemonMethods));
        for (const method of METHOD_DAEMON_ADDITIONS) {
            assert.ok(!text.includes(`\`${method}\``), `PROTOCOL.md now lists ${method}: move it from DaemonMethods to Methods`);
            assert.ok(!(Object.values(Methods) as string[]).includes(method));
        }
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

    it("Status's and CompactResult cache's fields are PROTOCOL.md's, the daemon's additions apart", { skip: !PROTOCOL_MD && 'shared/PROTOCOL.md not found' }, () => {
        const text = fs.readFileSync(PROTOCOL_MD as string, 'utf8');
        const block = (after: string) => {
            const start = text.indexOf('```json', text.indexOf(after));
            return text.slice(start, text.indexOf('```\n', start + 7));
        };
        const keys = (json: string) => new Set([...json.matchAll(/"(\w+)":/g)].map((m) => m[1]));
        const status = keys(block('**Status**'));
        assert.deepEqual([...status].sort(), [...STATUS_FIELDS, ...USAGE_FIELDS].sort());
        for (const key of STATUS_DAEMON_ADDITIONS) {
            assert.ok(!status.has(key), `PROTOCOL.md now lists Status.${key}: move it from STATUS_DAEMON_ADDITIONS to STATUS_FIELDS`);
        }
        const result = block('**CompactResult**');
        const cache = result.slice(result.indexOf('"cache": {'), result.indexOf('}', result.indexOf('"cache": {')));
        assert.deepEqual([...keys(cache)].filter((k) => k !== 'cache').sort(), [...CACHE_REPORT_FIELDS].sort());
    });
});
