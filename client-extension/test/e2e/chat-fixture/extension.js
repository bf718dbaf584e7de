// Test-only (the chat e2e test): what hdcontext's "· hdcontext" models sit between.
//  - "Fake Backend 1" (vendor fakebackend) stands in for a real model (Copilot's): it answers from
//    a script, streams its answer in parts, reports usage as Copilot's models do (a `token_usage`
//    data part, with the input tokens a simulated prompt cache would have served), stops when
//    cancelled, and logs every request it receives.
//  - read_file / write_file: language model tools on the workspace.
//  - @agent stands in for a chat agent (Copilot's agent mode): it sends the whole conversation
//    to the model picked in the chat panel on every call, runs the tools the model calls, and
//    keeps each turn's messages in the turn's result metadata for the next turn.
// Every hop appends one JSON line to the file in the setting hdcontextE2E.logFile.
'use strict';
const vscode = require('vscode');
const fs = require('fs');
const path = require('path');

const { LanguageModelTextPart: Text, LanguageModelToolCallPart: ToolCall, LanguageModelToolResultPart: ToolResult, LanguageModelDataPart: Data } = vscode;
const Role = vscode.LanguageModelChatMessageRole;
const CACHE_TTL_MS = 300000;
const REWRITTEN = 'def function_0(value):\n    return value\n';

function log(record) {
    const file = vscode.workspace.getConfiguration('hdcontextE2E').get('logFile');
    if (file) {
        fs.appendFileSync(file, JSON.stringify({ at: Date.now(), ...record }) + '\n');
    }
}

/** A part as plain JSON: what the logs show, what tokens are counted on. */
function partJson(p) {
    if (p instanceof Text) return { type: 'text', text: p.value };
    if (p instanceof ToolCall) return { type: 'call', callId: p.callId, name: p.name, input: p.input };
    if (p instanceof ToolResult) return { type: 'result', callId: p.callId, text: partsText(p.content) };
    if (p instanceof Data) return { type: 'data', mimeType: p.mimeType, bytes: p.data.length };
    return { type: 'other' };
}
const partsText = (parts) => parts.map((p) => (p instanceof Text ? p.value : '')).join('');
const messageJson = (m) => ({ role: m.role === Role.Assistant ? 'assistant' : m.role === Role.User ? 'user' : String(m.role), parts: m.content.map(partJson) });
/** The same rough count on both sides of the wrapper: 4 characters of the messages' JSON a token. */
const tokens = (messages) => Math.ceil(JSON.stringify(messages.map(messageJson)).length / 4);
const textOf = (m) => m.content.map((p) => (p instanceof Text ? p.value : '')).join('');

function callName(messages, callId) {
    for (const m of messages) for (const p of m.content) if (p instanceof ToolCall && p.callId === callId) return p.name;
    return undefined;
}
function nextId(messages, kind) {
    let n = 0;
    for (const m of messages) for (const p of m.content) if (p instanceof ToolCall && p.callId.startsWith(`call-${kind}-`)) n++;
    return `call-${kind}-${n + 1}`;
}

// A prompt cache as providers keep one: the longest run of leading messages equal to the previous
// request's, if that was less than CACHE_TTL_MS ago, is read from the cache.
let cache = { messages: [], at: 0 };
function cachedTokens(messages) {
    const now = messages.map((m) => JSON.stringify(messageJson(m)));
    let same = 0;
    if (Date.now() - cache.at < CACHE_TTL_MS) {
        while (same < now.length && same < cache.messages.length && now[same] === cache.messages[same]) same++;
    }
    cache = { messages: now, at: Date.now() };
    return tokens(messages.slice(0, same));
}

const backend = {
    provideLanguageModelChatInformation: () => [
        { id: 'fake-1', name: 'Fake Backend 1', family: 'fake', version: '1', maxInputTokens: 100000, maxOutputTokens: 4096, capabilities: { toolCalling: true } },
    ],
    async provideLanguageModelChatResponse(model, messages, options, progress, token) {
        const offered = (options.tools || []).map((t) => t.name);
        const input = tokens(messages);
        log({ hop: 'backend', model: model.id, tokens: input, tools: offered, messages: messages.map(messageJson) });
        const cached = cachedTokens(messages);
        const last = messages[messages.length - 1];
        const results = last.content.filter((p) => p instanceof ToolResult);
        const out = [];
        if (results.length) {
            for (const r of results) {
                const name = callName(messages, r.callId);
                const text = partsText(r.content);
                out.push(new Text(name === 'read_file' ? `Read it: ${text.split('\n').length} lines. ` : name === 'write_file' ? 'Wrote it. ' : `${name} returned ${text.length} characters. `));
            }
        } else {
            const prompt = textOf(last).trim();
            let m;
            if ((m = /^read (\S+)/.exec(prompt))) {
                out.push(new Text('Reading it. '), new ToolCall(nextId(messages, 'read'), 'read_file', { file_path: m[1] }));
            } else if ((m = /^write (\S+)/.exec(prompt))) {
                out.push(new Text('Rewriting it. '), new ToolCall(nextId(messages, 'write'), 'write_file', { file_path: m[1], content: REWRITTEN }));
            } else if ((m = /^retrieve (\S+)/.exec(prompt))) {
                out.push(offered.includes('hdcontext_retrieve')
                    ? new ToolCall(nextId(messages, 'retrieve'), 'hdcontext_retrieve', { callId: m[1] })
                    : new Text('hdcontext_retrieve is not offered. '));
            } else if (/^slow\b/.test(prompt)) {
                for (let i = 0; i < 300; i++) {
                    if (token.isCancellationRequested) {
                        log({ hop: 'backend-cancelled', after: i });
                        return;
                    }
                    progress.report(new Text(i === 0 ? 'Thinking slowly' : '.'));
                    await new Promise((r) => setTimeout(r, 100));
                }
                log({ hop: 'backend-finished' });
                out.push(new Text(' done.'));
            } else {
                out.push(new Text(`BACKEND received ${messages.length} messages.`));
            }
        }
        // Streamed in parts, as models do.
        for (const part of out) {
            progress.report(part);
        }
        const completion = Math.ceil(JSON.stringify(out.map(partJson)).length / 4);
        const usage = { prompt_tokens: input, completion_tokens: completion, total_tokens: input + completion, prompt_tokens_details: { cached_tokens: cached } };
        progress.report(new Data(new TextEncoder().encode(JSON.stringify(usage)), 'token_usage'));
    },
    provideTokenCount: async (_model, text) => (typeof text === 'string' ? Math.ceil(text.length / 4) : tokens([text])),
};

const root = () => vscode.workspace.workspaceFolders[0].uri.fsPath;
const readFile = {
    async invoke(options) {
        const text = fs.readFileSync(path.join(root(), options.input.file_path), 'utf8');
        log({ hop: 'tool', name: 'read_file', file: options.input.file_path, chars: text.length });
        return new vscode.LanguageModelToolResult([new Text(text)]);
    },
};
const writeFile = {
    async invoke(options) {
        fs.writeFileSync(path.join(root(), options.input.file_path), options.input.content);
        log({ hop: 'tool', name: 'write_file', file: options.input.file_path });
        return new vscode.LanguageModelToolResult([new Text('ok')]);
    },
};

// The agent's memory between turns: each turn's messages, as JSON in its result metadata.
function serialize(m) {
    return {
        role: m.role === Role.Assistant ? 'assistant' : 'user',
        parts: m.content.map((p) =>
            p instanceof Text ? { t: 'text', v: p.value }
            : p instanceof ToolCall ? { t: 'call', id: p.callId, name: p.name, input: p.input }
            : { t: 'result', id: p.callId, v: partsText(p.content) }),
    };
}
function revive(s) {
    const parts = s.parts.map((p) => (p.t === 'text' ? new Text(p.v) : p.t === 'call' ? new ToolCall(p.id, p.name, p.input) : new ToolResult(p.id, [new Text(p.v)])));
    return new vscode.LanguageModelChatMessage(s.role === 'assistant' ? Role.Assistant : Role.User, parts);
}

async function agent(request, context, stream, token) {
    const model = request.model;
    log({ hop: 'agent', model: `${model.vendor}/${model.id}`, name: model.name, prompt: request.prompt });
    const messages = [];
    for (const turn of context.history) {
        if (turn instanceof vscode.ChatRequestTurn) {
            messages.push(vscode.LanguageModelChatMessage.User(turn.prompt));
        } else if (turn instanceof vscode.ChatResponseTurn) {
            for (const s of (turn.result.metadata && turn.result.metadata.rounds) || []) messages.push(revive(s));
        }
    }
    messages.push(vscode.LanguageModelChatMessage.User(request.prompt));
    const tools = vscode.lm.tools
        .filter((t) => t.name === 'read_file' || t.name === 'write_file')
        .map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema }));
    const rounds = [];
    for (let round = 0; round < 5 && !token.isCancellationRequested; round++) {
        log({ hop: 'agent-send', round, messages: messages.length, tokens: tokens(messages) });
        const response = await model.sendRequest(messages, { tools }, token);
        const parts = [];
        for await (const part of response.stream) {
            if (part instanceof Text) {
                stream.markdown(part.value);
                parts.push(part);
            } else if (part instanceof ToolCall) {
                parts.push(part);
            } else if (part instanceof Data && part.mimeType === 'token_usage') {
                log({ hop: 'agent-usage', usage: JSON.parse(new TextDecoder().decode(part.data)) });
            }
        }
        const assistant = new vscode.LanguageModelChatMessage(Role.Assistant, parts);
        messages.push(assistant);
        rounds.push(serialize(assistant));
        const calls = parts.filter((p) => p instanceof ToolCall);
        if (!calls.length) break;
        const results = [];
        for (const call of calls) {
            const result = await vscode.lm.invokeTool(call.name, { input: call.input, toolInvocationToken: request.toolInvocationToken }, token);
            log({ hop: 'agent-tool', name: call.name, callId: call.callId, text: partsText(result.content) });
            results.push(new ToolResult(call.callId, result.content));
        }
        const user = new vscode.LanguageModelChatMessage(Role.User, results);
        messages.push(user);
        rounds.push(serialize(user));
    }
    log({ hop: 'agent-done', prompt: request.prompt, cancelled: token.isCancellationRequested });
    return { metadata: { rounds } };
}

function activate(context) {
    context.subscriptions.push(
        vscode.lm.registerLanguageModelChatProvider('fakebackend', backend),
        vscode.lm.registerTool('read_file', readFile),
        vscode.lm.registerTool('write_file', writeFile),
        vscode.chat.createChatParticipant('hdcontext-test.agent', agent),
    );
    // Offline, nothing asks the providers for their models until a request is sent, so the model
    // picker would stay empty: asking every vendor once makes them (and the "· hdcontext" twins)
    // appear. Not awaited: that can block activation (shared/recipes/vscode-chat, pitfall 1).
    vscode.lm.selectChatModels();
}

module.exports = { activate };
