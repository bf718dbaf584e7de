/**
 * "<name> · hdcontext": one language model per model of the vendors in `hdcontext.chat.wrapVendors`,
 * registered with `vscode.lm.registerLanguageModelChatProvider`, so that it shows in the chat
 * panel's model picker and to every extension that selects models.
 *
 * A request to one: the chat's messages become entries (chatConversion.ts), `history/sync` hands
 * them to the daemon under the conversation's session id (and, once, the session overrides that
 * say it can ask the prompt cache no lifetime but the default: chatSessions.TWIN_OVERRIDES),
 * `history/compact` answers the history to send (a delta from the one this window holds), and
 * that goes to the real model with the request's tools (plus `hdcontext_retrieve`), tool mode and
 * model options. Every part of the real model's answer streams back as it comes. When the daemon cannot start or answer, the
 * conversation goes to the real model unchanged, and the user sees why, once: a daemon that cannot
 * start has said so itself (daemon.ts), so only the other reasons are warned of here.
 */

import * as vscode from 'vscode';

import { toEntries, toMessages, toolPairProblems, conversationId } from './chatConversion';
import { PartTable, unchanged } from './chatParts';
import { setTwinOverrides, type ChatSessions } from './chatSessions';
import { DaemonProblem, type Daemon } from './daemon';
import { SETTINGS_SECTION, type Status } from './protocol';
import { RETRIEVE_TOOL } from './retrieveTool';
import { TOKEN_USAGE_MIME, parseUsageBytes, type ReportedUsage } from './usage';

/** The vendor of the wrapping models (package.json `languageModelChatProviders`). */
export const WRAP_VENDOR = 'hdcontext';
export const WRAP_SETTING = 'chat.wrapVendors';
export const DEFAULT_WRAP_VENDORS = ['copilot'];
export const NAME_SUFFIX = ' · hdcontext';
export const WAITS = {
    /** How long a request waits for the daemon (start included) before it goes out unchanged. */
    prepareMs: 60000,
    /** How long, at most, a request waits while the daemon's environment is being installed (first use). */
    setupMs: 5 * 60000,
};
const JUSTIFICATION = 'hdcontext sends your conversation to the model you picked, with stale file reads and duplicate output pruned.';

export interface WrapperHost {
    daemon: Daemon;
    chats: ChatSessions;
    /** A Status from a request's answer (the status bar shows the conversation). */
    onStatus(status: Status): void;
    log(line: string): void;
    /** A warning the user sees (once while it is on screen). */
    warn(message: string): void;
    /** Words that identify the window's workspace, so equal first prompts elsewhere are other conversations. */
    scope(): string;
}

type Target = vscode.LanguageModelChat;

export class WrappingModels implements vscode.LanguageModelChatProvider, vscode.Disposable {
    private readonly changed = new vscode.EventEmitter<void>();
    readonly onDidChangeLanguageModelChatInformation = this.changed.event;
    private readonly disposables: vscode.Disposable[] = [];
    private listed = '';
    /** Each wrapped vendor's models as last listed (`targets`). */
    private readonly lastListed = new Map<string, readonly Target[]>();

    constructor(private readonly host: WrapperHost) {
        this.disposables.push(
            this.changed,
            // Our own models are in vscode.lm too: say "changed" only when the wrapped set did, or
            // VS Code's re-listing would fire this again, forever.
            vscode.lm.onDidChangeChatModels(() => void this.refreshIfChanged()),
            vscode.workspace.onDidChangeConfiguration((e) => {
                if (e.affectsConfiguration(`${SETTINGS_SECTION}.${WRAP_SETTING}`)) {
                    this.changed.fire();
                }
            }),
        );
    }

    dispose(): void {
        this.disposables.forEach((d) => d.dispose());
    }

    async provideLanguageModelChatInformation(): Promise<vscode.LanguageModelChatInformation[]> {
        const targets = await this.targets();
        const listed = signature(targets);
        if (listed !== this.listed) {
            // A "· hdcontext" model that leaves the list takes the chat panel's choice with it
            // (the panel falls back to another model): the log says when the set changed.
            this.host.log(`models to wrap: ${targets.length ? targets.map((m) => `${m.vendor}/${m.id}`).join(', ') : 'none'}`);
        }
        this.listed = listed;
        return targets.map((m) => modelInformation(m));
    }

    async provideLanguageModelChatResponse(
        model: vscode.LanguageModelChatInformation,
        messages: readonly vscode.LanguageModelChatRequestMessage[],
        options: vscode.ProvideLanguageModelChatResponseOptions,
        progress: vscode.Progress<vscode.LanguageModelResponsePart>,
        token: vscode.CancellationToken,
    ): Promise<void> {
        const target = await this.target(model.id);
        let outgoing: vscode.LanguageModelChatMessage[];
        let sessionId: string | undefined;
        try {
            const prepared = await withDeadline(this.prepare(target, messages, options, token), token, () => this.host.daemon.settingUp);
            outgoing = prepared.messages;
            sessionId = prepared.sessionId;
        } catch (err) {
            if (token.isCancellationRequested) {
                throw new vscode.CancellationError();
            }
            const reason = errorText(err);
            this.host.log(`chat request for ${target.vendor}/${target.id}: sent unchanged (${reason})`);
            if (!(err instanceof DaemonProblem)) {
                this.host.warn(`hdcontext: ${reason}. This request went to ${target.name} with the conversation unchanged.`);
            }
            outgoing = unchanged(messages);
        }
        const tools = withRetrieveTool(options.tools);
        const response = await target.sendRequest(
            outgoing,
            { tools, toolMode: options.toolMode, modelOptions: options.modelOptions, justification: JUSTIFICATION },
            token,
        );
        let usage: ReportedUsage | undefined;
        for await (const part of response.stream) {
            if (part instanceof vscode.LanguageModelDataPart && part.mimeType === TOKEN_USAGE_MIME) {
                usage = parseUsageBytes(part.data) ?? usage;
            }
            progress.report(part as vscode.LanguageModelResponsePart);
        }
        if (usage && sessionId) {
            void this.reportUsage(sessionId, usage);
        }
    }

    async provideTokenCount(
        model: vscode.LanguageModelChatInformation,
        text: string | vscode.LanguageModelChatRequestMessage,
        token: vscode.CancellationToken,
    ): Promise<number> {
        const target = await this.target(model.id);
        if (typeof text === 'string') {
            return target.countTokens(text, token);
        }
        // A message counts as it goes to the model (chatSessions.asSent), so that the chat's
        // own summarization, which these counts drive, comes later by what hdcontext saved.
        const table = new PartTable();
        const sent = this.host.chats.asSent(table.fromRequest([text])[0]);
        if (sent === undefined) {
            return target.countTokens(unchanged([text])[0], token);
        }
        return sent.parts.length ? target.countTokens(table.toVscode([sent])[0], token) : 0;
    }

    /** Sync, compact and convert back; throws when any of it fails. */
    private async prepare(
        target: Target,
        messages: readonly vscode.LanguageModelChatRequestMessage[],
        options: vscode.ProvideLanguageModelChatResponseOptions,
        token: vscode.CancellationToken,
    ): Promise<{ messages: vscode.LanguageModelChatMessage[]; sessionId: string }> {
        const table = new PartTable();
        const chat = table.fromRequest(messages);
        const { entries, breakpoints } = toEntries(chat);
        const sessionId = conversationId(entries, this.host.scope());
        const client = await this.host.daemon.ready();
        if (token.isCancellationRequested) {
            throw new vscode.CancellationError();
        }
        const synced = await client.sync(sessionId, entries, { contextLimit: target.maxInputTokens, model: target.id });
        // The breakpoints below can ask no lifetime, and nothing here makes refresh calls: the
        // daemon must price this conversation at the default lifetime (5m), whatever the IDE settings say.
        const { chats } = this.host;
        if (chats.needsTwinOverrides(sessionId, synced.forkedAt === null && synced.appended === entries.length)) {
            await setTwinOverrides(client, sessionId, (line) => this.host.log(line));
            chats.twinOverridesSet(sessionId);
        }
        const result = await client.compactDelta(sessionId, {
            base: chats.base(sessionId),
            pendingTokens: estimateTokens(JSON.stringify(options.tools ?? [])),
        });
        const history = chats.apply(sessionId, result, entries);
        // The chat's message breakpoints go where the daemon says, so that the provider's cache
        // stays alive where held-back prunings start.
        const out = toMessages(history, breakpoints, (ref) => table.has(ref), result.cache?.breakpoints);
        if (out.length === 0) {
            throw new Error('the daemon gave an empty history');
        }
        const problems = toolPairProblems(out);
        if (problems.length && toolPairProblems(chat).length === 0) {
            throw new Error(`the history the daemon gave breaks tool-call pairing (${problems[0]})`);
        }
        this.host.onStatus(result.status);
        this.host.log(
            `chat request for ${target.vendor}/${target.id}, session ${sessionId}: ${messages.length} messages in` +
                (synced.forkedAt !== null ? ` (forked at ${synced.forkedAt})` : '') +
                `, ${out.length} out, ${result.status.totalTokens} tokens (saved ${result.status.savedTokens})`,
        );
        return { messages: table.toVscode(out), sessionId };
    }

    private async reportUsage(sessionId: string, usage: ReportedUsage): Promise<void> {
        try {
            const client = await this.host.daemon.ready();
            this.host.onStatus(await client.usage({ sessionId, ...usage }));
        } catch (err) {
            this.host.log(`history/usage for ${sessionId} failed: ${errorText(err)}`);
        }
    }

    /**
     * The models of the vendors to wrap, never our own. A vendor whose listing fails keeps its
     * last one: dropping its models for a moment would make the chat panel drop the user's
     * "· hdcontext" choice for another model, and the next requests would bypass hdcontext.
     */
    private async targets(): Promise<Target[]> {
        const configured = vscode.workspace.getConfiguration(SETTINGS_SECTION).get<string[]>(WRAP_SETTING, DEFAULT_WRAP_VENDORS) ?? [];
        const vendors = [...new Set(configured.filter((v) => typeof v === 'string' && v && v !== WRAP_VENDOR))];
        // By vendor: an unfiltered selectChatModels() inside a provider's own listing never returns.
        const lists = await Promise.all(
            vendors.map(async (vendor) => {
                try {
                    const models = await vscode.lm.selectChatModels({ vendor });
                    this.lastListed.set(vendor, models);
                    return models;
                } catch (err) {
                    this.host.log(`listing the models of ${vendor} failed (${errorText(err)}): its last list is kept`);
                    return this.lastListed.get(vendor) ?? [];
                }
            }),
        );
        return lists.flat();
    }

    private async target(wrappedId: string): Promise<Target> {
        const { vendor, id } = splitId(wrappedId);
        const [target] = await vscode.lm.selectChatModels({ vendor, id });
        if (!target) {
            throw new Error(`hdcontext: the model ${id} of ${vendor} is not available any more`);
        }
        return target;
    }

    private async refreshIfChanged(): Promise<void> {
        try {
            if (signature(await this.targets()) !== this.listed) {
                this.changed.fire();
            }
        } catch {
            // the next listing will tell
        }
    }
}

/** The wrapping model's information: the real model's, renamed. */
export function modelInformation(m: Target): vscode.LanguageModelChatInformation {
    // What VS Code knows of the real model beyond the stable API, when it tells.
    const extra = m as Target & { maxOutputTokens?: number; capabilities?: { supportsToolCalling?: boolean; supportsImageToText?: boolean } };
    return {
        id: `${m.vendor}/${m.id}`,
        name: `${m.name}${NAME_SUFFIX}`,
        family: m.family,
        version: m.version,
        maxInputTokens: m.maxInputTokens,
        maxOutputTokens: typeof extra.maxOutputTokens === 'number' ? extra.maxOutputTokens : 8192,
        tooltip: `${m.name} (${m.vendor}), with the conversation kept dense by hdcontext: stale file reads and duplicate output are pruned before each request.`,
        detail: 'hdcontext',
        capabilities: {
            toolCalling: extra.capabilities?.supportsToolCalling ?? true,
            imageInput: extra.capabilities?.supportsImageToText ?? false,
        },
    };
}

export function splitId(wrappedId: string): { vendor: string; id: string } {
    const slash = wrappedId.indexOf('/');
    return slash < 0 ? { vendor: '', id: wrappedId } : { vendor: wrappedId.slice(0, slash), id: wrappedId.slice(slash + 1) };
}

/** The request's tools, plus hdcontext_retrieve when the client offers tools at all (it runs them). */
function withRetrieveTool(tools: readonly vscode.LanguageModelChatTool[] | undefined): vscode.LanguageModelChatTool[] | undefined {
    if (!tools || tools.length === 0 || tools.some((t) => t.name === RETRIEVE_TOOL)) {
        return tools ? [...tools] : undefined;
    }
    const info = vscode.lm.tools.find((t) => t.name === RETRIEVE_TOOL);
    return info ? [...tools, { name: info.name, description: info.description, inputSchema: info.inputSchema }] : [...tools];
}

function signature(models: readonly Target[]): string {
    return models
        .map((m) => `${m.vendor}/${m.id}/${m.name}/${m.maxInputTokens}`)
        .sort()
        .join('\n');
}

/** A rough count (4 characters a token), for what is about to be added to a request. */
function estimateTokens(text: string): number {
    return Math.ceil(text.length / 4);
}

/**
 * WAITS.prepareMs for the daemon to answer; while `settingUp()` (its environment is being
 * installed, with a notification on screen) the wait goes on, up to WAITS.setupMs in all.
 */
function withDeadline<T>(work: Promise<T>, token: vscode.CancellationToken, settingUp: () => boolean): Promise<T> {
    return new Promise<T>((resolve, reject) => {
        const started = Date.now();
        let timer: NodeJS.Timeout;
        const arm = (ms: number) => {
            timer = setTimeout(() => {
                const waited = Date.now() - started;
                if (settingUp() && waited < WAITS.setupMs) {
                    arm(Math.min(WAITS.prepareMs, WAITS.setupMs - waited));
                } else if (settingUp()) {
                    reject(new Error(`it is still setting up its daemon after ${seconds(waited)} (see the notification)`));
                } else {
                    reject(new Error(`the daemon did not answer within ${seconds(waited)}`));
                }
            }, ms);
        };
        arm(WAITS.prepareMs);
        const cancel = token.onCancellationRequested(() => reject(new vscode.CancellationError()));
        work.then(resolve, reject).finally(() => {
            clearTimeout(timer);
            cancel.dispose();
        });
    });
}

function seconds(ms: number): string {
    return `${(ms / 1000).toFixed(ms < 10000 ? 1 : 0)} s`;
}

function errorText(err: unknown): string {
    const message = err instanceof Error ? err.message : String(err);
    return message.replace(/^hdcontext: /, '').replace(/\.$/, '');
}
