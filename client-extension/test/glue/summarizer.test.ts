import './register';

import assert from 'node:assert/strict';
import { beforeEach, describe, it } from 'node:test';

import { ResponseError } from 'vscode-jsonrpc';

import { ErrorCodes, type SummarizeParams } from '../../src/protocol';
import { EditorSummarizer } from '../../src/summarizer';
import { readThenWrite } from '../helpers/conversation';
import { CancellationTokenSource, LanguageModelChatMessage, resetState, state, type FakeModel } from './vscodeMock';

const params: SummarizeParams = { sessionId: 'chat', strategy: 'one-shot', prompt: 'Summarize.', messages: readThenWrite('a.py', 'x = 1') };

function host(modelSetting = '') {
    const shown: string[] = [];
    const logged: string[] = [];
    return {
        shown,
        logged,
        modelSetting: () => modelSetting,
        log: (l: string) => logged.push(l),
        showError: (m: string) => shown.push(m),
    };
}

function model(over: Partial<FakeModel> & { chunks?: string[]; fail?: Error; onRequest?: (token: { isCancellationRequested: boolean }) => void } = {}): FakeModel & { received: LanguageModelChatMessage[][] } {
    const received: LanguageModelChatMessage[][] = [];
    return {
        vendor: 'copilot',
        id: 'gpt-test',
        family: 'gpt-test-family',
        name: 'GPT test',
        received,
        ...over,
        async sendRequest(messages: LanguageModelChatMessage[], _options: unknown, token: { isCancellationRequested: boolean }) {
            received.push(messages);
            if (over.fail) {
                throw over.fail;
            }
            const chunks = over.chunks ?? ['The user ', 'asked for a fix.'];
            return {
                text: (async function* () {
                    for (const c of chunks) {
                        over.onRequest?.(token);
                        yield c;
                    }
                })(),
            };
        },
    };
}

async function rejection(p: Promise<unknown>): Promise<ResponseError<void>> {
    try {
        await p;
    } catch (err) {
        assert.ok(err instanceof ResponseError, String(err));
        return err as ResponseError<void>;
    }
    assert.fail('expected a rejection');
}

describe('EditorSummarizer (history/summarize with vscode.lm)', () => {
    beforeEach(resetState);

    it('no model: a ResponseError the daemon turns into -32002, and the user is told why', async () => {
        const h = host();
        const err = await rejection(new EditorSummarizer(h).summarize(params, new CancellationTokenSource().token as never));
        assert.equal(err.code, ErrorCodes.RequestFailed);
        assert.match(err.message, /no language model is available/);
        assert.equal(h.shown.length, 1);
        assert.match(h.shown[0], /session chat, strategy one-shot/);
        assert.match(h.shown[0], /high-density, top-down-truncation/);
    });

    it('the first available model answers, prompt first, streamed text joined', async () => {
        const m = model();
        state.models = [m, model({ id: 'other' })];
        const h = host();
        const r = await new EditorSummarizer(h).summarize(params, new CancellationTokenSource().token as never);
        assert.deepEqual(r, { text: 'The user asked for a fix.' });
        assert.equal(m.received.length, 1);
        const sent = m.received[0];
        assert.equal(sent[0].content, 'Summarize.');
        assert.equal(sent[0].role, 'user');
        assert.equal(sent[sent.length - 1].role, 'user');
        assert.ok(sent.some((x) => x.role === 'assistant'));
        assert.equal(h.shown.length, 0);
    });

    it('the model setting picks by id, then family, then vendor/…', async () => {
        const a = model({ id: 'a', family: 'fa' });
        const b = model({ id: 'b', family: 'fb', vendor: 'acme' });
        state.models = [a, b];
        await new EditorSummarizer(host('fb')).summarize(params, new CancellationTokenSource().token as never);
        assert.equal(b.received.length, 1);
        await new EditorSummarizer(host('acme/b')).summarize(params, new CancellationTokenSource().token as never);
        assert.equal(b.received.length, 2);
        assert.equal(a.received.length, 0);
        const h = host('nonexistent');
        const err = await rejection(new EditorSummarizer(h).summarize(params, new CancellationTokenSource().token as never));
        assert.match(err.message, /no language model matches hdcontext.summarizer.vscodeModel "nonexistent"/);
    });

    it('cancelled before it starts: RequestCancelled, nothing shown', async () => {
        state.models = [model()];
        const source = new CancellationTokenSource();
        source.cancel();
        const h = host();
        const err = await rejection(new EditorSummarizer(h).summarize(params, source.token as never));
        assert.equal(err.code, ErrorCodes.RequestCancelled);
        assert.equal(h.shown.length, 0);
    });

    it('cancelled while the model streams: RequestCancelled', async () => {
        const source = new CancellationTokenSource();
        state.models = [model({ chunks: ['a', 'b', 'c'], onRequest: () => source.cancel() })];
        const err = await rejection(new EditorSummarizer(host()).summarize(params, source.token as never));
        assert.equal(err.code, ErrorCodes.RequestCancelled);
    });

    it('the model fails: the error names the model and is shown', async () => {
        state.models = [model({ fail: Object.assign(new Error('quota exceeded'), { code: 'Blocked' }) })];
        const h = host();
        const err = await rejection(new EditorSummarizer(h).summarize(params, new CancellationTokenSource().token as never));
        assert.equal(err.code, ErrorCodes.RequestFailed);
        assert.match(err.message, /copilot\/gpt-test failed: quota exceeded \(Blocked\)/);
        assert.equal(h.shown.length, 1);
    });

    it('an empty answer is an error, not an empty summary', async () => {
        state.models = [model({ chunks: ['  '] })];
        const err = await rejection(new EditorSummarizer(host()).summarize(params, new CancellationTokenSource().token as never));
        assert.match(err.message, /answered with no text/);
    });
});
