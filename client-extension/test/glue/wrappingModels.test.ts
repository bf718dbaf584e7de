/**
 * The "· hdcontext" models with the fake `vscode` module, a real daemon behind them (or one that
 * cannot start), and a backend model that records what it receives.
 */

import './register';

import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';

import { ChatSessions, TWIN_OVERRIDES } from '../../src/chatSessions';
import { Daemon, DaemonProblem } from '../../src/daemon';
import { EditorSummarizer } from '../../src/summarizer';
import type { IContent, Status } from '../../src/protocol';
import { RETRIEVE_TOOL } from '../../src/retrieveTool';
import { WAITS, WrappingModels, type WrapperHost } from '../../src/wrappingModels';
import { bigFile } from '../helpers/conversation';
import { VENV_PYTHON, pythonWithoutHdcontext, tempDir } from '../helpers/realDaemon';
import { FakeLanguageClient } from './fakeClient';
import {
    CancellationError,
    CancellationTokenSource,
    LanguageModelChatMessage,
    LanguageModelChatMessageRole as Role,
    LanguageModelDataPart,
    LanguageModelTextPart as Text,
    LanguageModelToolCallPart as ToolCall,
    LanguageModelToolResultPart as ToolResult,
    resetState,
    state,
    vscodeMock,
} from './vscodeMock';

interface Sent {
    messages: LanguageModelChatMessage[];
    options: { tools?: Array<{ name: string }>; toolMode?: unknown; justification?: string };
}

/** A backend model: answers two text parts and a usage part, records each request. */
function backend(vendor = 'copilot', id = 'gpt-test', name = 'GPT Test') {
    const sent: Sent[] = [];
    return {
        vendor,
        id,
        family: `${id}-family`,
        name,
        version: '1',
        maxInputTokens: 100000,
        sent,
        countTokens: async (text: unknown) => (typeof text === 'string' ? text.length : 42),
        async sendRequest(messages: LanguageModelChatMessage[], options: Sent['options']) {
            sent.push({ messages, options });
            return {
                stream: (async function* () {
                    yield new Text('Hello ');
                    yield new Text('there.');
                    yield new LanguageModelDataPart(new TextEncoder().encode('{"prompt_tokens":900,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":600}}'), 'token_usage');
                })(),
            };
        },
    };
}

/** A chat agent's request: read a file, then write it (the read is stale). */
function request() {
    return [
        new LanguageModelChatMessage(Role.User, [new Text('Fix src/app.py.')]),
        new LanguageModelChatMessage(Role.Assistant, [new ToolCall('call-read-1', 'read_file', { file_path: 'src/app.py' })]),
        new LanguageModelChatMessage(Role.User, [new ToolResult('call-read-1', [new Text(bigFile(60))])]),
        new LanguageModelChatMessage(Role.Assistant, [new ToolCall('call-write-1', 'write_file', { file_path: 'src/app.py', content: 'x = 1\n' })]),
        new LanguageModelChatMessage(Role.User, [new ToolResult('call-write-1', [new Text('ok')])]),
    ];
}

const info = { id: 'copilot/gpt-test' } as never;
const opts = (tools?: Array<{ name: string; description: string }>) => ({ tools, toolMode: 1, modelOptions: {} }) as never;

describe('WrappingModels', () => {
    let daemon: Daemon;
    let host: WrapperHost & { warnings: string[]; statuses: unknown[] };

    beforeEach(() => {
        resetState();
        FakeLanguageClient.instances = [];
        state.config['hdcontext.server.pythonPath'] = VENV_PYTHON;
        vscodeMock.lm.tools = [{ name: RETRIEVE_TOOL, description: 'Retrieve', inputSchema: { type: 'object' } }];
        daemon = new Daemon(
            {
                output: vscodeMock.window.createOutputChannel('hdcontext') as never,
                storageDir: tempDir('wrap-storage'),
                summarizer: new EditorSummarizer({ modelSetting: () => '', log: () => undefined, showError: () => undefined }),
                onTokens: () => undefined,
                onStarting: () => undefined,
                onRunning: () => undefined,
                onFailed: () => undefined,
            },
            (s, c) => new FakeLanguageClient(s, c) as never,
        );
        const warnings: string[] = [];
        const statuses: unknown[] = [];
        host = { daemon, chats: new ChatSessions(), onStatus: (s) => statuses.push(s), log: () => undefined, warn: (m) => warnings.push(m), scope: () => 'file:///ws', warnings, statuses };
    });
    afterEach(async () => {
        await daemon.stop();
    });

    it('one "· hdcontext" model per model of the vendors to wrap, asked for by vendor only', async () => {
        state.models = [backend('copilot', 'gpt-test', 'GPT Test'), backend('copilot', 'claude', 'Claude'), backend('other', 'x', 'X')] as never;
        state.config['hdcontext.chat.wrapVendors'] = ['copilot', 'hdcontext'];
        const models = new WrappingModels(host);
        const listed = await models.provideLanguageModelChatInformation();
        assert.deepEqual(
            listed.map((m) => [m.id, m.name, m.maxInputTokens]),
            [
                ['copilot/gpt-test', 'GPT Test · hdcontext', 100000],
                ['copilot/claude', 'Claude · hdcontext', 100000],
            ],
        );
        // Never an unfiltered selector (it never returns inside a provider), never our own vendor.
        assert.deepEqual(state.selectorsAsked, [{ vendor: 'copilot' }]);
        assert.equal(FakeLanguageClient.instances.length, 0, 'listing models starts no daemon');
        models.dispose();
    });

    it("a vendor whose listing fails keeps its models (the chat panel keeps the user's choice); the log says when the set changes", async () => {
        state.models = [backend('copilot', 'gpt-test', 'GPT Test')] as never;
        state.config['hdcontext.chat.wrapVendors'] = ['copilot'];
        const logged: string[] = [];
        const models = new WrappingModels({ ...host, log: (l) => logged.push(l) });
        const ids = async () => (await models.provideLanguageModelChatInformation()).map((m) => m.id);
        assert.deepEqual(await ids(), ['copilot/gpt-test']);
        state.failingVendors.add('copilot');
        assert.deepEqual(await ids(), ['copilot/gpt-test'], 'kept through a failed listing');
        state.failingVendors.clear();
        state.models = [];
        assert.deepEqual(await ids(), [], 'a model the vendor no longer lists goes');
        assert.deepEqual(
            logged.filter((l) => l.startsWith('models to wrap') || l.startsWith('listing')),
            ['models to wrap: copilot/gpt-test', 'listing the models of copilot failed (copilot cannot list its models now): its last list is kept', 'models to wrap: none'],
        );
        models.dispose();
    });

    it('provideTokenCount asks the real model', async () => {
        state.models = [backend()] as never;
        const models = new WrappingModels(host);
        assert.equal(await models.provideTokenCount(info, 'twelve chars', new CancellationTokenSource().token as never), 12);
        models.dispose();
    });

    it('provideTokenCount counts a message as it went to the model: a pruned read counts nothing', async () => {
        // A backend that counts what it would read: the characters of every part.
        const chars = (part: unknown): number =>
            part instanceof Text
                ? part.value.length
                : part instanceof ToolCall
                  ? part.name.length + JSON.stringify(part.input).length
                  : part instanceof ToolResult
                    ? part.content.reduce((n: number, c) => n + chars(c), 0)
                    : 0;
        const model = {
            ...backend(),
            countTokens: async (text: unknown) =>
                typeof text === 'string' ? text.length : ((text as LanguageModelChatMessage).content as unknown[]).reduce((n: number, p) => n + chars(p), 0),
        };
        state.models = [model] as never;
        const models = new WrappingModels(host);
        const messages = request();
        const token = new CancellationTokenSource().token as never;
        const count = (m: LanguageModelChatMessage) => models.provideTokenCount(info, m as never, token);
        const before = await Promise.all(messages.map(count));
        assert.ok(before[2] > 2000, 'the read result counts whole before anything was sent');
        await models.provideLanguageModelChatResponse(info, messages as never, opts(), { report: () => undefined }, token);
        const sent = model.sent[0].messages.flatMap((m) => m.content as unknown[]);
        assert.ok(!sent.some((p) => p instanceof ToolResult && p.callId === 'call-read-1'), 'the daemon pruned the stale read');
        const after = await Promise.all(messages.map(count));
        assert.deepEqual(after, [before[0], 0, 0, before[3], before[4]]);
        // A message the daemon never saw counts as it is.
        const next = new LanguageModelChatMessage(Role.User, [new Text('And now?')]);
        assert.equal(await count(next), 'And now?'.length);
        models.dispose();
    });

    it('a daemon that cannot start: the conversation goes to the model unchanged, the answer streams back, the user is told once', async () => {
        state.config['hdcontext.server.pythonPath'] = pythonWithoutHdcontext();
        const model = backend();
        state.models = [model] as never;
        const models = new WrappingModels(host);
        const parts: unknown[] = [];
        const messages = request();
        await models.provideLanguageModelChatResponse(info, messages as never, opts(), { report: (p) => parts.push(p) }, new CancellationTokenSource().token as never);
        assert.equal(model.sent.length, 1, 'sent once');
        assert.deepEqual(
            model.sent[0].messages.map((m) => [m.role, m.content]),
            messages.map((m) => [m.role, m.content]),
        );
        assert.deepEqual(
            parts.slice(0, 2).map((p) => (p as Text).value),
            ['Hello ', 'there.'],
        );
        // Told once, by the daemon's own error, which says what happens to requests meanwhile;
        // no second message from here, and none at the next request.
        await models.provideLanguageModelChatResponse(info, messages as never, opts(), { report: () => undefined }, new CancellationTokenSource().token as never);
        assert.equal(model.sent.length, 2);
        await new Promise((r) => setTimeout(r, 20));
        assert.equal(host.warnings.length, 0, host.warnings.join('\n'));
        assert.equal(state.errors.length, 1, state.errors.join('\n'));
        assert.match(state.errors[0], /^hdcontext: cannot start the daemon: .*cannot import hdcontext.*Until then, chat requests through the "· hdcontext" models go to the model unchanged\.$/);
        models.dispose();
    });

    it('while the daemon is being set up (first use) a request waits for it past the usual wait; otherwise it goes unchanged after it, with a warning', async () => {
        const saved = { ...WAITS };
        WAITS.prepareMs = 150;
        WAITS.setupMs = 3000;
        try {
            const model = backend();
            state.models = [model] as never;
            // A daemon whose setup ends after 600 ms, four usual waits, and then cannot start.
            let settingUp = true;
            const stub = {
                get settingUp() {
                    return settingUp;
                },
                ready: () =>
                    new Promise((_resolve, reject) =>
                        setTimeout(() => {
                            settingUp = false;
                            reject(new DaemonProblem('hdcontext: cannot set up its daemon: test'));
                        }, 600),
                    ),
            };
            const models = new WrappingModels({ ...host, daemon: stub as never });
            const started = Date.now();
            await models.provideLanguageModelChatResponse(info, request() as never, opts(), { report: () => undefined }, new CancellationTokenSource().token as never);
            assert.ok(Date.now() - started >= 550, 'it waited for the setup');
            assert.equal(model.sent.length, 1);
            assert.deepEqual(host.warnings, [], 'the setup failure is the daemon\'s to tell');

            // A daemon that answers nothing, with no setup under way: the usual wait, then a warning.
            const silent = { settingUp: false, ready: () => new Promise(() => undefined) };
            const other = new WrappingModels({ ...host, daemon: silent as never });
            const t0 = Date.now();
            await other.provideLanguageModelChatResponse(info, request() as never, opts(), { report: () => undefined }, new CancellationTokenSource().token as never);
            assert.ok(Date.now() - t0 < 1000);
            assert.equal(model.sent.length, 2);
            assert.match(host.warnings[0] ?? '', /the daemon did not answer within 0\.\d s\. This request went to GPT Test with the conversation unchanged\./);
            models.dispose();
            other.dispose();
        } finally {
            Object.assign(WAITS, saved);
        }
    });

    it("hdcontext_retrieve is offered with the chat's tools, and only when it has some", async () => {
        state.config['hdcontext.server.pythonPath'] = pythonWithoutHdcontext();
        const model = backend();
        state.models = [model] as never;
        const models = new WrappingModels(host);
        const token = new CancellationTokenSource().token as never;
        await models.provideLanguageModelChatResponse(info, request() as never, opts([{ name: 'read_file', description: 'r' }]), { report: () => undefined }, token);
        await models.provideLanguageModelChatResponse(info, request() as never, opts(), { report: () => undefined }, token);
        assert.deepEqual(
            model.sent[0].options.tools?.map((t) => t.name),
            ['read_file', RETRIEVE_TOOL],
        );
        assert.equal(model.sent[1].options.tools, undefined);
        assert.equal(model.sent[0].options.toolMode, 1);
        assert.match(String(model.sent[0].options.justification), /hdcontext/);
        models.dispose();
    });

    it('cancelled before the daemon answered: nothing goes to the model', async () => {
        const model = backend();
        state.models = [model] as never;
        const models = new WrappingModels(host);
        const source = new CancellationTokenSource();
        const pending = models.provideLanguageModelChatResponse(info, request() as never, opts(), { report: () => undefined }, source.token as never);
        source.cancel();
        await assert.rejects(pending, (err) => err instanceof CancellationError);
        assert.equal(model.sent.length, 0);
        assert.equal(host.warnings.length, 0);
        models.dispose();
    });

    it('the twin tells the daemon, before its first compact of a conversation, that it can ask no cache lifetime and makes no refresh call; once', async () => {
        const model = backend();
        state.models = [model] as never;
        // A daemon that keeps every entry, and records what it is asked.
        const asked: string[] = [];
        let held: IContent[] = [];
        const status = { sessionId: 's', version: 1, entryCount: 0, totalTokens: 10, contextLimit: 100000, threshold: 0.85, percent: 0, strategy: 'high-density', savedTokens: 0 };
        const client = {
            sync: async (_id: string, entries: IContent[]) => {
                const appended = entries.length - held.length;
                held = entries;
                asked.push(`sync +${appended}`);
                return { ...status, appended, forkedAt: null };
            },
            setOverride: async (_id: string, key: string, value: unknown) => {
                asked.push(`setOverride ${key}=${JSON.stringify(value)}`);
                return { values: { [key]: value }, sources: { [key]: 'override' } };
            },
            compactDelta: async () => {
                asked.push('compact');
                return { revision: `r${asked.length}`, delta: { base: null, keep: 0, entries: held }, cache: { breakpoints: [held.length - 1] }, status, density: null, compression: null, overLimit: false };
            },
            usage: async () => status,
        };
        const stub = { settingUp: false, ready: async () => client };
        const models = new WrappingModels({ ...host, daemon: stub as never });
        const token = new CancellationTokenSource().token as never;
        const messages = request();
        await models.provideLanguageModelChatResponse(info, messages.slice(0, 3) as never, opts(), { report: () => undefined }, token);
        await models.provideLanguageModelChatResponse(info, messages as never, opts(), { report: () => undefined }, token);
        assert.equal(host.warnings.length, 0, host.warnings.join('\n'));
        assert.equal(model.sent.length, 2);
        assert.deepEqual(asked, ['sync +3', 'setOverride cache.ttl="5m"', 'setOverride cache.refresh=false', 'compact', 'sync +2', 'compact']);
        assert.deepEqual(
            asked.filter((a) => a.startsWith('setOverride')),
            TWIN_OVERRIDES.map(([key, value]) => `setOverride ${key}=${JSON.stringify(value)}`),
        );
        models.dispose();
    });

    it('through the real daemon: with the IDE setting cache.ttl auto, the twin\'s session resolves it to 5m from its override, and cache.refresh to false', async () => {
        for (const [key, value] of [
            ['hdcontext.cache.ttl', 'auto'],
            ['hdcontext.cache.refresh', true],
        ] as const) {
            state.config[key] = value;
            state.userSet.add(key);
        }
        const model = backend();
        state.models = [model] as never;
        const models = new WrappingModels(host);
        await models.provideLanguageModelChatResponse(info, request() as never, opts(), { report: () => undefined }, new CancellationTokenSource().token as never);
        assert.equal(host.warnings.length, 0, host.warnings.join('\n'));
        const sessionId = host.chats.active;
        assert.ok(sessionId, 'the conversation went through the daemon');
        const client = await daemon.ready();
        const twin = await client.settings(sessionId);
        assert.deepEqual([twin.values['cache.ttl'], twin.sources['cache.ttl']], ['5m', 'override']);
        assert.deepEqual([twin.values['cache.refresh'], twin.sources['cache.refresh']], [false, 'override']);
        // The IDE setting reached the daemon: another client's session has it.
        await client.open('api-session');
        const other = await client.settings('api-session');
        assert.deepEqual([other.values['cache.ttl'], other.sources['cache.ttl']], ['auto', 'settings']);
        assert.deepEqual([other.values['cache.refresh'], other.sources['cache.refresh']], [true, 'settings']);
        models.dispose();
    });

    it("through the real daemon: the chat's message breakpoints go where the daemon says, the system prompt keeps its own", async () => {
        const model = backend();
        state.models = [model] as never;
        const models = new WrappingModels(host);
        const mark = () => new LanguageModelDataPart(new TextEncoder().encode('ephemeral'), 'cache_control');
        const system = new LanguageModelChatMessage(3 as Role, [new Text('You are an agent.'), mark()]);
        const chat = request();
        // Copilot's own: on the last two messages.
        chat[3] = new LanguageModelChatMessage(Role.Assistant, [...(chat[3].content as never[]), mark()]);
        chat[4] = new LanguageModelChatMessage(Role.User, [...(chat[4].content as never[]), mark()]);
        await models.provideLanguageModelChatResponse(info, [system, ...chat] as never, opts(), { report: () => undefined }, new CancellationTokenSource().token as never);
        const sent = model.sent[0].messages;
        const marks = sent.map((m) => (m.content as unknown[]).filter((p) => p instanceof LanguageModelDataPart && p.mimeType === 'cache_control').length);
        // The system prompt's stays; the daemon names the last message (a first request: nothing
        // cached to anchor to), so the one on the message before it is gone.
        assert.equal(marks[0], 1, `system: ${marks}`);
        assert.equal(marks[marks.length - 1], 1, `last: ${marks}`);
        assert.equal(marks.reduce((a, b) => a + b, 0), 2, `${marks}`);
        models.dispose();
    });

    it('through the real daemon: the stale read is pruned, tool calls stay paired, usage is reported', async (t) => {
        const model = backend();
        state.models = [model] as never;
        const client = await daemon.ready();
        try {
            await client.sync('probe', []);
        } catch (err) {
            if ((err as { code?: number }).code === -32601) {
                await daemon.stop(); // node:test runs no afterEach hook for a test that skips itself
                t.skip('this daemon has no history/sync yet (the daemon side of protocol 2)');
                return;
            }
            throw err;
        }
        const logged: string[] = [];
        const models = new WrappingModels({ ...host, log: (l) => logged.push(l) });
        const system = new LanguageModelChatMessage(3 as Role, [new Text('You are an agent.')]);
        const turn = [system, ...request()];
        // The first request of the turn, then the whole conversation again with the write's
        // result and the user's next words in one message, as Copilot sends them.
        await models.provideLanguageModelChatResponse(info, turn.slice(0, 4) as never, opts([{ name: 'read_file', description: 'r' }]), { report: () => undefined }, new CancellationTokenSource().token as never);
        const last = new LanguageModelChatMessage(Role.User, [new ToolResult('call-write-1', [new Text('ok')]), new Text('Now explain it.')]);
        await models.provideLanguageModelChatResponse(info, [...turn.slice(0, 5), last] as never, opts([{ name: 'read_file', description: 'r' }]), { report: () => undefined }, new CancellationTokenSource().token as never);
        assert.ok(!logged.some((l) => l.includes('forked')), `a grown conversation is no fork: ${logged.join('\n')}`);
        const sent = model.sent[1].messages;
        assert.equal(sent[0].role, 3, 'the system message stays one');
        const tail = sent[sent.length - 1].content as unknown[];
        assert.deepEqual(
            tail.map((p) => (p instanceof ToolResult ? `result ${p.callId}` : (p as Text).value)),
            ['result call-write-1', 'Now explain it.'],
            'results and text of one user message stay one message',
        );
        const calls = sent.flatMap((m) => (m.content as unknown[]).filter((p): p is ToolCall => p instanceof ToolCall).map((p) => p.callId));
        const results = sent.flatMap((m) => (m.content as unknown[]).filter((p): p is ToolResult => p instanceof ToolResult).map((p) => p.callId));
        assert.ok(calls.includes('call-write-1') && results.includes('call-write-1'));
        assert.equal(calls.includes('call-read-1'), results.includes('call-read-1'), 'the read goes or stays with its result');
        assert.equal(host.warnings.length, 0, host.warnings.join('\n'));
        // The backend's token_usage part, passed on with history/usage.
        for (let i = 0; i < 100 && !host.statuses.some((st) => ((st as Status).usage?.calls ?? 0) >= 2); i++) {
            await new Promise((r) => setTimeout(r, 20));
        }
        const reported = host.statuses.filter((st) => (st as Status).usage !== undefined).pop() as Status;
        assert.equal(reported.usage?.calls, 2);
        assert.equal(reported.usage?.inputTokens, 1800);
        assert.equal(reported.usage?.cacheReadTokens, 1200);
        models.dispose();
    });
});
