/**
 * The typed client against the real daemon (`python -m hdcontext serve`), over vscode-jsonrpc.
 */

import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { ResponseError } from 'vscode-jsonrpc/node';

import { setTwinOverrides } from '../../src/chatSessions';
import {
    CACHE_REPORT_FIELDS,
    ErrorCodes,
    PROTOCOL_VERSION,
    STATUS_DAEMON_ADDITIONS,
    STATUS_FIELDS,
    serverProtocolVersion,
    type Status,
} from '../../src/protocol';
import { DAEMON_SETTINGS, daemonSection } from '../../src/settingsSection';
import { statusReport, statusTooltip } from '../../src/status';
import { readThenWrite, readsOnly } from '../helpers/conversation';
import { EXTENSION_ROOT, startDaemon, waitFor, type RunningDaemon } from '../helpers/realDaemon';

async function rejectsWith(p: Promise<unknown>, code: number, message?: RegExp): Promise<ResponseError<unknown>> {
    try {
        await p;
    } catch (err) {
        assert.ok(err instanceof ResponseError, `a ResponseError, got ${String(err)}`);
        assert.equal(err.code, code, err.message);
        if (message) {
            assert.match(err.message, message);
        }
        return err;
    }
    assert.fail(`expected error ${code}`);
}

describe('the real daemon, over vscode-jsonrpc', () => {
    let d: RunningDaemon;
    let settings: Record<string, unknown> = {};
    const tokens: Status[] = [];

    before(async () => {
        d = await startDaemon({ settings: () => settings });
        d.client.onTokens((s) => tokens.push(s));
    });
    after(async () => {
        await d?.stop();
    });

    it('initialize: a protocol version, server hdcontext, then a settings pull', async () => {
        // 1 until the daemon's side of version 2 lands on main.
        const version = serverProtocolVersion(d.initializeResult.capabilities);
        assert.ok(version === 1 || version === PROTOCOL_VERSION, String(version));
        assert.equal(d.initializeResult.serverInfo?.name, 'hdcontext');
        for (let i = 0; i < 100 && d.pulls() === 0; i++) {
            await new Promise((r) => setTimeout(r, 50));
        }
        assert.ok(d.pulls() >= 1, 'pulled the settings after initialized');
    });

    it("package.json's defaults are the daemon's defaults", async () => {
        await d.client.open('defaults');
        const { values, sources } = await d.client.settings('defaults');
        const pkg = JSON.parse(fs.readFileSync(path.join(EXTENSION_ROOT, 'package.json'), 'utf8'));
        const props = pkg.contributes.configuration.properties;
        const keys = DAEMON_SETTINGS.map((s) => s.key);
        assert.deepEqual(Object.keys(values).sort(), keys.sort());
        for (const key of keys) {
            assert.equal(sources[key], 'default', key);
            let want = props[`hdcontext.${key}`].default;
            if (key === 'compression.threshold') {
                want = 0.85; // unset: the strategy's default
            } else if (key.startsWith('cache.') && want === null) {
                // unset: the figure of the pricing in use, which depends on the session's model
                assert.ok(values[key] === null || (typeof values[key] === 'number' && values[key] >= 0), `${key}: ${String(values[key])}`);
                continue;
            } else if (want === '') {
                want = null; // an empty string is "unset" for the summarizer strings
            }
            assert.deepEqual(values[key], want, key);
        }
        await d.client.delete('defaults');
    });

    it('open, append a read and a later write, compact: the stale read goes', async () => {
        const opened = await d.client.open('chat', { model: 'test-model' });
        assert.equal(opened.sessionId, 'chat');
        assert.equal(opened.entryCount, 0);
        assert.equal(opened.contextLimit, 200000);
        const appended = await d.client.append('chat', readThenWrite());
        assert.equal(appended.entryCount, 6);
        assert.ok(appended.totalTokens > 2000, `tokens ${appended.totalTokens}`);
        assert.ok(appended.version > opened.version);
        // The notification precedes the reply.
        assert.ok(
            tokens.some((s) => s.sessionId === 'chat' && s.version === appended.version && s.totalTokens === appended.totalTokens),
            'history/tokens after append',
        );

        const result = await d.client.compact('chat', { pendingTokens: 10 });
        assert.ok(result.status.totalTokens < appended.totalTokens / 2, `${result.status.totalTokens} < ${appended.totalTokens} / 2`);
        assert.ok(result.status.savedTokens > 0);
        assert.ok((result.density?.metadata.readWritePairsPruned ?? 0) >= 1, JSON.stringify(result.density));
        assert.equal(result.compression, null);
        assert.equal(result.overLimit, false);
        // Provider-valid: no tool response without its call.
        const calls = new Set(result.history.flatMap((e) => e.blocks.filter((b) => b.type === 'tool_call').map((b) => (b as { id: string }).id)));
        for (const e of result.history) {
            for (const b of e.blocks) {
                if (b.type === 'tool_response') {
                    assert.ok(calls.has(b.callId), b.callId);
                }
            }
        }
        const last = tokens.filter((s) => s.sessionId === 'chat').pop();
        assert.equal(last?.totalTokens, result.status.totalTokens, 'history/tokens after compact');
    });

    it('get: curated, raw, transcript', async () => {
        const curated = await d.client.get('chat');
        const raw = await d.client.get('chat', 'raw');
        const transcript = await d.client.get('chat', 'transcript');
        assert.equal(transcript.entries.length, 6);
        assert.ok(JSON.stringify(transcript.entries).includes('function_119'), 'the transcript keeps the read');
        assert.ok(!JSON.stringify(curated.entries).includes('function_119'), 'the curated view lost the stale read');
        assert.ok(raw.entries.length >= curated.entries.length);
        assert.equal(curated.status.sessionId, 'chat');
    });

    it('IDE settings are pulled, and an edit applies without a restart', async () => {
        settings = daemonSection({
            get: (k) => (k === 'contextLimit' ? 50000 : undefined),
            inspect: (k) => (k === 'contextLimit' ? { globalValue: 50000 } : {}),
        });
        assert.deepEqual(settings, { contextLimit: 50000 });
        const changed = waitFor<Status>((l) => d.client.onTokens(l), (s) => s.sessionId === 'chat' && s.contextLimit === 50000);
        await d.changeSettings();
        const s = await changed;
        assert.equal(s.contextLimit, 50000);
        const r = await d.client.settings('chat');
        assert.equal(r.values.contextLimit, 50000);
        assert.equal(r.sources.contextLimit, 'settings');
        // The user removes the setting: back to the default.
        settings = {};
        const back = waitFor<Status>((l) => d.client.onTokens(l), (x) => x.sessionId === 'chat' && x.contextLimit === 200000);
        await d.changeSettings();
        await back;
    });

    it('a refused setting: window/logMessage Warning naming the key, the previous value stands', async () => {
        settings = { contextLimit: 64000 };
        await d.changeSettings();
        settings = { contextLimit: -5 };
        await d.changeSettings();
        const warning = await waitFor<{ type: number; message: string }>(
            (l) => {
                const timer = setInterval(() => d.logs.forEach(l), 50);
                return { dispose: () => clearInterval(timer) };
            },
            (m) => m.type === 2 && m.message.includes('contextLimit') && m.message.includes('-5'),
        );
        assert.match(warning.message, /expected/);
        assert.equal((await d.client.settings('chat')).values.contextLimit, 64000);
        settings = {};
        await d.changeSettings();
    });

    it('a session override wins, and null removes it', async () => {
        const set = await d.client.setOverride('chat', 'compression.strategy', 'top-down-truncation');
        assert.equal(set.values['compression.strategy'], 'top-down-truncation');
        assert.equal(set.sources['compression.strategy'], 'override');
        const removed = await d.client.setOverride('chat', 'compression.strategy', null);
        assert.equal(removed.sources['compression.strategy'], 'default');
        await rejectsWith(d.client.setOverride('chat', 'compression.strategy', 'nope'), ErrorCodes.InvalidParams, /strategy/);
    });

    it('history/summarize: the editor answers, and one-shot compresses with its text', async () => {
        const sub = d.client.onSummarize(async (params) => {
            assert.equal(params.sessionId, 'sum');
            assert.equal(params.strategy, 'one-shot');
            assert.ok(params.prompt.length > 0);
            assert.ok(params.messages.length > 0);
            return { text: 'SUMMARY: the user asked for a fix; the model fixed src/app.py.' };
        });
        try {
            await d.client.open('sum', { contextLimit: 3000 });
            await d.client.setOverride('sum', 'compression.strategy', 'one-shot');
            await d.client.append('sum', readsOnly(['a.py', 'b.py']));
            const r = await d.client.compact('sum');
            assert.equal(r.compression?.strategy, 'one-shot');
            assert.ok(JSON.stringify(r.history).includes('SUMMARY: the user asked'), 'the summary is in the history');
            assert.ok(r.status.totalTokens < (r.compression?.tokensBefore ?? 0));
        } finally {
            sub.dispose();
        }
    });

    it('history/summarize refused by the editor: the compaction fails with -32002 and nothing changes', async () => {
        const sub = d.client.onSummarize(async () => {
            throw new ResponseError(ErrorCodes.RequestFailed, 'no language model is available in this editor');
        });
        try {
            await d.client.open('nomodel', { contextLimit: 3000 });
            await d.client.setOverride('nomodel', 'compression.strategy', 'one-shot');
            const before = await d.client.append('nomodel', readsOnly(['a.py', 'b.py']));
            const err = await rejectsWith(d.client.compact('nomodel'), ErrorCodes.NoSummarizer, /no language model is available/);
            assert.match(err.message, /client/);
            const after = await d.client.get('nomodel', 'raw');
            assert.equal(after.status.version, before.version);
        } finally {
            sub.dispose();
        }
    });

    it('errors: unknown session -32001, malformed params -32602', async () => {
        await rejectsWith(d.client.append('never-opened', []), ErrorCodes.UnknownSession, /unknown session 'never-opened'/);
        await rejectsWith(
            d.client.append('chat', [{ speaker: 'tool', blocks: [{ type: 'tool_response', toolName: 'x', result: 1 } as never] }]),
            ErrorCodes.InvalidParams,
            /entries\[0\]\.blocks\[0\]\.callId/,
        );
    });

    it('protocol 2 as the chat panel uses it: sync, a delta compact, usage, retrieve', async () => {
        const chat = readThenWrite();
        // The first request of a turn: the read only.
        const first = await d.client.sync('panel', chat.slice(0, 3), { contextLimit: 100000, model: 'gpt-test' });
        assert.equal(first.appended, 3);
        assert.equal(first.forkedAt, null);
        assert.equal(first.contextLimit, 100000);
        const c1 = await d.client.compactDelta('panel');
        assert.equal(c1.history, undefined, 'reply delta: no whole history');
        assert.ok(c1.delta && c1.delta.base === null && c1.delta.keep === 0 && c1.delta.entries.length === 3);
        assert.equal(typeof c1.revision, 'string');
        assert.ok(c1.cache && typeof c1.cache.stablePrefix === 'number' && typeof c1.cache.cold === 'boolean');
        // The whole conversation again, grown: only the new entries are appended.
        const second = await d.client.sync('panel', chat);
        assert.equal(second.appended, 3);
        const c2 = await d.client.compactDelta('panel', { base: c1.revision });
        assert.equal(c2.delta?.base, c1.revision);
        const history = [...c1.delta.entries.slice(0, c2.delta?.keep), ...(c2.delta?.entries ?? [])];
        const calls = history.flatMap((e) => e.blocks.filter((b) => b.type === 'tool_call').map((b) => (b as { id: string }).id));
        const results = history.flatMap((e) => e.blocks.filter((b) => b.type === 'tool_response').map((b) => (b as { callId: string }).callId));
        assert.deepEqual(calls.sort(), results.sort(), 'tool calls and results in pairs');
        // An edited last message: a fork where they part.
        const edited = [...chat.slice(0, 5), { speaker: 'ai' as const, blocks: [{ type: 'text' as const, text: 'Something else.' }] }];
        assert.equal((await d.client.sync('panel', edited)).forkedAt, 5);
        // What the model billed.
        const billed = await d.client.usage({ sessionId: 'panel', inputTokens: 1200, cacheReadTokens: 900, outputTokens: 40 });
        assert.equal(billed.usage?.calls, 1);
        assert.equal(billed.usage?.cacheReadTokens, 900);
        // The read as it was appended, whatever density did to it since.
        const back = await d.client.retrieve('panel', 'call-read-1');
        assert.equal(back.call?.name, 'read_file');
        assert.deepEqual(back.response.result, chat[2].blocks[0].type === 'tool_response' ? chat[2].blocks[0].result : undefined);
        await rejectsWith(d.client.retrieve('panel', 'no-such-call'), ErrorCodes.UnknownCall, /unknown call 'no-such-call'/);
        await d.client.delete('panel');
    });

    it('list, todos, clear, close, delete', async () => {
        const { sessions } = await d.client.list();
        assert.ok(sessions.some((s) => s.sessionId === 'chat'));
        const withTodos = await d.client.todos('chat', [{ id: '1', content: 'fix the bug', status: 'in_progress' }]);
        assert.equal(withTodos.sessionId, 'chat');
        const cleared = await d.client.clear('chat');
        assert.equal(cleared.entryCount, 0);
        assert.equal(cleared.totalTokens, 0);
        assert.equal((await d.client.get('chat', 'transcript')).entries.length, 6, 'clear keeps the transcript');
        assert.equal(await d.client.close('chat'), null);
        assert.equal((await d.client.open('chat')).entryCount, 0, 'a closed session resumes from storage');
        assert.equal(await d.client.delete('chat'), null);
        assert.ok(!(await d.client.list()).sessions.some((s) => s.sessionId === 'chat'));
    });
});

describe("the real daemon: the prompt cache's lifetime and the price table", () => {
    let d: RunningDaemon;
    // The IDE settings: the user asks auto lifetimes and refresh calls (user settings).
    const ide: Record<string, unknown> = { 'cache.ttl': 'auto', 'cache.refresh': true };

    before(async () => {
        d = await startDaemon({
            settings: () => daemonSection({ get: (k) => ide[k], inspect: (k) => (k in ide ? { globalValue: ide[k] } : {}) }),
        });
    });
    after(async () => {
        await d?.stop();
    });

    it("a Status's and a compact's cache fields are PROTOCOL.md's plus the daemon additions, and nothing else", async () => {
        const opened = await d.client.open('fields', { model: 'claude-sonnet-4-5' });
        assert.deepEqual(Object.keys(opened).sort(), [...STATUS_FIELDS, ...STATUS_DAEMON_ADDITIONS].sort());
        await d.client.append('fields', readThenWrite());
        const result = await d.client.compact('fields');
        assert.deepEqual(Object.keys(result.cache ?? {}).sort(), [...CACHE_REPORT_FIELDS].sort());
        assert.equal(result.cache?.breakpointTtls?.length, result.cache?.breakpoints?.length, 'one lifetime per breakpoint');
        await d.client.delete('fields');
    });

    it("a twin's session resolves cache.ttl 5m and cache.refresh false from its overrides while the IDE says auto and true; other sessions keep the IDE's", async () => {
        const at = Date.now();
        // As the chat panel's model does it: sync (which opens), the overrides, then compact.
        await d.client.sync('twin', readThenWrite(), { contextLimit: 100000, model: 'claude-sonnet-4-5' });
        const set = await setTwinOverrides(d.client, 'twin');
        assert.equal(set?.values['cache.ttl'], '5m');
        const twin = await d.client.settings('twin');
        assert.equal(twin.values['cache.ttl'], '5m');
        assert.equal(twin.sources['cache.ttl'], 'override');
        assert.equal(twin.values['cache.refresh'], false);
        assert.equal(twin.sources['cache.refresh'], 'override');
        const first = await d.client.compactDelta('twin', { at });
        assert.ok((first.cache?.breakpointTtls ?? []).length >= 1);
        assert.ok(first.cache?.breakpointTtls?.every((t) => t === '5m'), `never an hour: ${JSON.stringify(first.cache)}`);
        assert.equal(first.cache?.refreshAt, null, 'never a refresh call');
        const refreshed = await d.client.refresh('twin', { at: at + 4 * 60000 });
        assert.ok(refreshed.cache?.breakpointTtls?.every((t) => t === '5m'), `a refresh asks no hour either: ${JSON.stringify(refreshed.cache)}`);

        // A session of another client (an API user, the proxy): the IDE's values.
        await d.client.open('api', { model: 'claude-sonnet-4-5' });
        const api = await d.client.settings('api');
        assert.equal(api.values['cache.ttl'], 'auto');
        assert.equal(api.sources['cache.ttl'], 'settings');
        assert.equal(api.values['cache.refresh'], true);
        assert.equal(api.sources['cache.refresh'], 'settings');
        await d.client.delete('api');
    });

    it('history/refresh: a whole CompactResult with no density and no compression; an `at` before the last call is -32602', async () => {
        await d.client.sync('refresh', readThenWrite(), { model: 'claude-sonnet-4-5' });
        const last = Date.now() + 1000;
        await d.client.compactDelta('refresh', { at: last });
        const refreshed = await d.client.refresh('refresh', { at: last + 4 * 60000 });
        assert.ok(Array.isArray(refreshed.history), 'the history, whole (empty when no refresh pays)');
        assert.equal(refreshed.density, null);
        assert.equal(refreshed.compression, null);
        assert.equal(refreshed.status.sessionId, 'refresh');
        assert.equal(refreshed.cache?.breakpointTtls?.length, refreshed.cache?.breakpoints?.length);
        await rejectsWith(d.client.refresh('refresh', { at: last - 60000 }), ErrorCodes.InvalidParams, /before the session's last call/);
        await rejectsWith(d.client.refresh('never-opened'), ErrorCodes.UnknownSession);
    });

    it('a model the price table lacks: pricedAs fallback, in the tooltip; a call off the expected cache use: mispredicted, in the tooltip', async () => {
        const opened = await d.client.open('mystery', { model: 'mystery-model-9' });
        assert.deepEqual(opened.pricedAs, { model: 'claude-opus-5-5', match: 'fallback' });
        assert.match(statusTooltip(opened), /^Priced as claude-opus-5-5: this session's model is not in the price table/m);
        assert.match(statusReport(opened), /^- Priced as \*\*claude-opus-5-5\*\*/m);
        // A first call finds the cache cold: nothing expected from it. The provider says it read most of it.
        await d.client.append('mystery', readThenWrite());
        await d.client.compact('mystery', { at: Date.now() });
        const billed = await d.client.usage({ sessionId: 'mystery', inputTokens: 4000, cacheReadTokens: 3800, cacheWriteTokens: 100, outputTokens: 10 });
        assert.equal(billed.mispredicted, 1, JSON.stringify(billed));
        assert.equal(billed.predicted?.calls, 1);
        assert.match(statusTooltip(billed), /^Prompt cache not as expected on 1 of 1 model call: /m);
    });

    it("cache.prices: every field package.json's schema offers is one the daemon takes; it prices the session as the user's override", async () => {
        const pkg = JSON.parse(fs.readFileSync(path.join(EXTENSION_ROOT, 'package.json'), 'utf8'));
        const fields: Record<string, { type: string }> = pkg.contributes.configuration.properties['hdcontext.cache.prices'].additionalProperties.properties;
        const row = Object.fromEntries(Object.entries(fields).map(([key, f]) => [key, f.type === 'integer' ? 300 : 1.5]));
        const set = await d.client.setOverride('mystery', 'cache.prices', { 'mystery-model-9': row });
        assert.equal(set.sources['cache.prices'], 'override');
        const s = await d.client.open('mystery');
        assert.deepEqual(s.pricedAs, { model: 'claude-opus-5-5', match: 'override' });
        assert.doesNotMatch(statusTooltip(s), /Priced as/);
        await rejectsWith(d.client.setOverride('mystery', 'cache.prices', { 'mystery-model-9': { ...row, bogus: 1 } }), ErrorCodes.InvalidParams, /cache\.prices/);
        await d.client.delete('mystery');
    });
});

describe('the real daemon: cancellation and restarts', () => {
    it('a summarize the editor does not answer in time is cancelled, and the compaction fails with -32002', async () => {
        const d = await startDaemon({ env: { HDCONTEXT_SUMMARIZE_TIMEOUT: '1' } });
        try {
            let cancelled = false;
            d.client.onSummarize(
                (_params, token) =>
                    new Promise((_resolve, reject) => {
                        token.onCancellationRequested(() => {
                            cancelled = true;
                            reject(new ResponseError(ErrorCodes.RequestCancelled, 'cancelled'));
                        });
                    }),
            );
            await d.client.open('slow', { contextLimit: 3000 });
            await d.client.setOverride('slow', 'compression.strategy', 'middle-out');
            await d.client.append('slow', readsOnly(['a.py', 'b.py', 'c.py']));
            await rejectsWith(d.client.compact('slow'), ErrorCodes.NoSummarizer, /within 1 s/);
            await new Promise((r) => setTimeout(r, 200));
            assert.ok(cancelled, 'the daemon sent $/cancelRequest');
        } finally {
            await d.stop();
        }
    });

    it('a session survives a daemon restart (same storageDir)', async () => {
        const first = await startDaemon();
        await first.client.open('durable');
        const s = await first.client.append('durable', readThenWrite());
        await first.stop();
        const second = await startDaemon({ storageDir: first.storageDir });
        try {
            const again = await second.client.get('durable', 'transcript');
            assert.equal(again.entries.length, 6);
            assert.equal(again.status.totalTokens, s.totalTokens);
        } finally {
            await second.stop();
        }
    });

    it('initializationOptions.settings apply when the client cannot be asked', async () => {
        const d = await startDaemon({ pull: false, initializationOptions: { settings: { contextLimit: 12345 } } });
        try {
            const s = await d.client.open('init');
            assert.equal(s.contextLimit, 12345);
        } finally {
            await d.stop();
        }
    });
});
