/**
 * The hdcontext extension: the "· hdcontext" models of the chat panel (wrappingModels.ts), the
 * `hdcontext_retrieve` tool and the `@hdcontext` participant; the active session's tokens in the
 * status bar; `history/summarize` answered with `vscode.lm`; the commands; and the API
 * (`api.d.ts`) that chat extensions use to hand their conversation over.
 *
 * Activation starts no process: the daemon starts on first use (an API call, a command, a chat
 * request, a click on the status bar) and stops in `deactivate()`.
 */

import * as fs from 'node:fs';
import * as path from 'node:path';

import * as vscode from 'vscode';

import type { HdcontextApi } from '../api';
import { ChatSessions } from './chatSessions';
import { registerCommands } from './commands';
import { Daemon, type ClientFactory } from './daemon';
import { createParticipant } from './participant';
import { PROTOCOL_VERSION, SETTINGS_SECTION, type CompactResult, type Status } from './protocol';
import { PROXY_SETTINGS, proxyOptions } from './proxySettings';
import { RETRIEVE_TOOL, RetrieveTool } from './retrieveTool';
import { SavingsView } from './savingsView';
import { StatusBar } from './statusBar';
import { EditorSummarizer, MODEL_SETTING } from './summarizer';
import { WRAP_VENDOR, WrappingModels } from './wrappingModels';

export const OUTPUT_CHANNEL = 'hdcontext';

let current: { daemon: Daemon } | undefined;

/** Tests pass a fake language client factory; VS Code calls it with the context only. */
export async function activate(context: vscode.ExtensionContext, factory?: ClientFactory): Promise<HdcontextApi> {
    const output = vscode.window.createOutputChannel(OUTPUT_CHANNEL);
    const statusBar = new StatusBar();
    const tokens = new vscode.EventEmitter<Status>();
    const transcripts = new Map<string, string>();
    context.subscriptions.push(output, statusBar, tokens);

    const errorsOnScreen = new Set<string>();
    const summarizer = new EditorSummarizer({
        modelSetting: () => vscode.workspace.getConfiguration(SETTINGS_SECTION).get<string>(MODEL_SETTING, '') ?? '',
        log: (line) => daemon.log(line),
        showError: (message) => {
            if (errorsOnScreen.has(message)) {
                return;
            }
            errorsOnScreen.add(message);
            void Promise.resolve(vscode.window.showErrorMessage(message)).finally(() => errorsOnScreen.delete(message));
        },
    });

    const storageDir = context.globalStorageUri.fsPath;
    try {
        fs.mkdirSync(storageDir, { recursive: true });
    } catch {
        // the daemon reports it if it cannot create its storage either
    }

    const onTokens = (status: Status): void => {
        statusBar.update(status);
        tokens.fire(status);
    };
    const daemon = new Daemon(
        {
            output,
            storageDir,
            summarizer,
            onTokens,
            onStarting: () => statusBar.starting(),
            onRunning: () => statusBar.running(),
            onFailed: (message) => statusBar.failed(message),
            bundleDir: path.join(context.extensionPath ?? '', 'bundled'),
            extensionVersion: String((context.extension?.packageJSON as { version?: unknown } | undefined)?.version ?? '0.0.0'),
        },
        factory,
    );
    // Not in context.subscriptions: deactivate() stops it, and waits for it.
    current = { daemon };

    const noteCompaction = (result: CompactResult): void => {
        const path = result.compression?.transcriptPath;
        if (path) {
            transcripts.set(result.status.sessionId, path);
        }
        statusBar.update(result.status);
    };
    const savings = new SavingsView({
        daemon,
        windowSessions: () => statusBar.sessions.all().map((s) => s.sessionId),
        onTokens: tokens.event,
        log: (line) => daemon.log(line),
    });
    context.subscriptions.push(savings);
    registerCommands(context, { daemon, statusBar, output, transcripts, noteCompaction, savings });

    const chats = new ChatSessions();
    const warningsOnScreen = new Set<string>();
    const models = new WrappingModels({
        daemon,
        chats,
        onStatus: (status) => statusBar.update(status),
        log: (line) => daemon.log(line),
        warn: (message) => {
            if (warningsOnScreen.has(message)) {
                return;
            }
            warningsOnScreen.add(message);
            void Promise.resolve(vscode.window.showWarningMessage(message)).finally(() => warningsOnScreen.delete(message));
        },
        scope: () => (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.toString()).join('\n') || 'no folder',
    });
    context.subscriptions.push(
        models,
        vscode.lm.registerLanguageModelChatProvider(WRAP_VENDOR, models),
        vscode.lm.registerTool(RETRIEVE_TOOL, new RetrieveTool(daemon, chats)),
        createParticipant({ daemon, chats, noteCompaction, log: (line) => daemon.log(line) }),
    );

    context.subscriptions.push(
        vscode.workspace.onDidChangeConfiguration((e) => {
            // A daemon nobody has used yet starts with the new interpreter anyway.
            if (e.affectsConfiguration(`${SETTINGS_SECTION}.server.pythonPath`) && daemon.started) {
                daemon.log('hdcontext.server.pythonPath changed: restarting the daemon');
                statusBar.sessions.clear();
                void daemon.restart().catch(() => undefined);
            } else if (e.affectsConfiguration(`${SETTINGS_SECTION}.${PROXY_SETTINGS}`)) {
                // The proxy is the daemon's: it listens (or stops) with the daemon's next start.
                if (daemon.started) {
                    daemon.log('hdcontext.proxy changed: restarting the daemon');
                    void daemon.restart().catch(() => undefined);
                } else if (proxyWanted()) {
                    void daemon.ready().catch(() => undefined);
                }
            }
        }),
    );
    // An agent pointed at the proxy is a use nobody in the window makes: start for it.
    if (proxyWanted()) {
        void daemon.ready().catch(() => undefined);
    }

    function proxyWanted(): boolean {
        const config = vscode.workspace.getConfiguration(SETTINGS_SECTION);
        return proxyOptions((key) => config.get(key)) !== undefined;
    }

    const api: HdcontextApi = {
        protocolVersion: PROTOCOL_VERSION,
        open: async (sessionId, options) => {
            const status = await (await daemon.ready()).open(sessionId, options ?? {});
            statusBar.update(status);
            return status;
        },
        append: async (sessionId, entries) => (await daemon.ready()).append(sessionId, entries),
        compact: async (sessionId, options) => {
            const result = await (await daemon.ready()).compact(sessionId, options ?? {});
            noteCompaction(result);
            return result;
        },
        getHistory: async (sessionId, view) => (await daemon.ready()).get(sessionId, view),
        onTokens: tokens.event,
    };
    return api;
}

/** The one place the daemon stops (VS Code waits for the promise). */
export async function deactivate(): Promise<void> {
    const daemon = current?.daemon;
    current = undefined;
    await daemon?.stop();
}
