/**
 * The commands: compact now, show a session's history (curated / raw / transcript, as JSON in
 * an editor), open the transcript, set a per-session override, clear a session, the quick pick
 * of sessions and actions behind the status bar item, the log, restarting the daemon, and
 * making its environment anew.
 */

import * as fs from 'node:fs';

import * as vscode from 'vscode';

import { REINSTALL_COMMAND, type Daemon } from './daemon';
import type { DaemonClient } from './daemonClient';
import { CACHE_TTL_SETTINGS, HISTORY_VIEWS, STRATEGIES, type CompactResult, type HistoryView, type SettingsResult, type Status } from './protocol';
import { SHOW_SAVINGS_COMMAND } from './savings';
import type { SavingsView } from './savingsView';
import { formatCount, statusText } from './status';
import type { StatusBar } from './statusBar';

export const Commands = {
    compactNow: 'hdcontext.compactNow',
    showHistory: 'hdcontext.showHistory',
    openTranscript: 'hdcontext.openTranscript',
    setOverride: 'hdcontext.setOverride',
    clearSession: 'hdcontext.clearSession',
    showSessions: 'hdcontext.showSessions',
    showLog: 'hdcontext.showLog',
    restartDaemon: 'hdcontext.restartDaemon',
    reinstallDaemon: REINSTALL_COMMAND,
    showSavings: SHOW_SAVINGS_COMMAND,
} as const;

export interface CommandHost {
    daemon: Daemon;
    statusBar: StatusBar;
    output: vscode.OutputChannel;
    /** The JSONL transcript exports the daemon reported (CompactResult.compression.transcriptPath). */
    transcripts: Map<string, string>;
    /** Records what a compaction did (the transcript path) and shows its Status. */
    noteCompaction(result: CompactResult): void;
    /** The savings webview (*hdcontext: Show Savings*). */
    savings?: SavingsView;
}

const VIEW_DESCRIPTIONS: Record<HistoryView, string> = {
    curated: 'what the model receives',
    raw: 'the working history, density edits applied',
    transcript: 'everything ever appended, never pruned',
};

export function registerCommands(context: vscode.ExtensionContext, host: CommandHost): void {
    const c = new CommandRunner(host);
    const register = (id: string, run: (arg?: unknown) => Promise<unknown>) =>
        context.subscriptions.push(vscode.commands.registerCommand(id, (arg?: unknown) => c.guard(() => run(arg))));
    register(Commands.compactNow, (arg) => c.compactNow(sessionArg(arg)));
    register(Commands.showHistory, (arg) => c.showHistory(sessionArg(arg), viewArg(arg)));
    register(Commands.openTranscript, (arg) => c.openTranscript(sessionArg(arg)));
    register(Commands.setOverride, (arg) => c.setOverride(sessionArg(arg)));
    register(Commands.clearSession, (arg) => c.clearSession(sessionArg(arg)));
    register(Commands.showSessions, () => c.showSessions());
    register(Commands.showLog, async () => host.output.show(true));
    register(Commands.restartDaemon, () => c.restart());
    register(Commands.reinstallDaemon, () => c.reinstall());
    const savings = host.savings;
    if (savings) {
        register(Commands.showSavings, () => savings.show());
    }
}

/** A command's session: a string, or `{sessionId}` (e.g. from another extension). */
function sessionArg(arg: unknown): string | undefined {
    if (typeof arg === 'string' && arg) {
        return arg;
    }
    if (typeof arg === 'object' && arg !== null && typeof (arg as { sessionId?: unknown }).sessionId === 'string') {
        return (arg as { sessionId: string }).sessionId;
    }
    return undefined;
}

function viewArg(arg: unknown): HistoryView | undefined {
    const view = typeof arg === 'object' && arg !== null ? (arg as { view?: unknown }).view : undefined;
    return typeof view === 'string' && (HISTORY_VIEWS as readonly string[]).includes(view) ? (view as HistoryView) : undefined;
}

interface SessionItem extends vscode.QuickPickItem {
    sessionId: string;
}

export class CommandRunner {
    constructor(private readonly host: CommandHost) {}

    /** Runs a command; a failure becomes an error message, never an unhandled rejection. */
    async guard(run: () => Promise<unknown>): Promise<unknown> {
        try {
            return await run();
        } catch (err) {
            const message = err instanceof Error ? err.message : String(err);
            this.host.daemon.log(`command failed: ${message}`);
            // The daemon's start failure was already shown once.
            if (message !== this.host.daemon.failure) {
                void vscode.window.showErrorMessage(message.startsWith('hdcontext') ? message : `hdcontext: ${message}`);
            }
            return undefined;
        }
    }

    private client(): Promise<DaemonClient> {
        return this.host.daemon.ready();
    }

    /** The given session, else the active one when `preferActive`, else one the user picks. */
    async pickSession(given: string | undefined, placeHolder: string, preferActive: boolean): Promise<string | undefined> {
        if (given) {
            return given;
        }
        const active = this.host.statusBar.active;
        if (preferActive && active) {
            return active.sessionId;
        }
        const { sessions } = await (await this.client()).list();
        if (sessions.length === 0) {
            void vscode.window.showInformationMessage('hdcontext: no sessions yet. A chat extension opens them through the hdcontext API.');
            return undefined;
        }
        const items: SessionItem[] = orderSessions(sessions, active?.sessionId).map((s) => sessionItem(s, active?.sessionId));
        const picked = await vscode.window.showQuickPick(items, { placeHolder, matchOnDescription: true });
        return picked?.sessionId;
    }

    async compactNow(sessionId?: string): Promise<CompactResult | undefined> {
        const id = await this.pickSession(sessionId, 'Compact which session?', true);
        if (!id) {
            return undefined;
        }
        const client = await this.client();
        const result = await vscode.window.withProgress(
            { location: vscode.ProgressLocation.Window, title: `hdcontext: compacting ${id}` },
            () => client.compact(id),
        );
        this.host.noteCompaction(result);
        const before = result.compression?.tokensBefore ?? result.density?.tokensBefore;
        const summary =
            before !== undefined
                ? `${formatCount(before)} → ${formatCount(result.status.totalTokens)} tokens`
                : `nothing to compact (${formatCount(result.status.totalTokens)} tokens)`;
        const over = result.overLimit ? ' Still over the context limit.' : '';
        const show = result.overLimit ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
        void show(`hdcontext: session ${id}: ${summary}.${over}`);
        return result;
    }

    async showHistory(sessionId?: string, view?: HistoryView): Promise<vscode.TextEditor | undefined> {
        const id = await this.pickSession(sessionId, 'Show the history of which session?', false);
        if (!id) {
            return undefined;
        }
        const chosen =
            view ??
            (
                await vscode.window.showQuickPick(
                    HISTORY_VIEWS.map((v) => ({ label: v, description: VIEW_DESCRIPTIONS[v], view: v })),
                    { placeHolder: `Which view of ${id}?` },
                )
            )?.view;
        if (!chosen) {
            return undefined;
        }
        return this.openEntries(id, chosen);
    }

    /** The entries as a JSON array (usable as HISTORY.json for `hdcontext compact`). */
    private async openEntries(sessionId: string, view: HistoryView): Promise<vscode.TextEditor> {
        const { entries } = await (await this.client()).get(sessionId, view);
        const doc = await vscode.workspace.openTextDocument({ language: 'json', content: JSON.stringify(entries, null, 2) + '\n' });
        return vscode.window.showTextDocument(doc, { preview: false });
    }

    /** The JSONL export the last LLM compaction named, else the transcript view as JSON. */
    async openTranscript(sessionId?: string): Promise<vscode.TextEditor | undefined> {
        const id = await this.pickSession(sessionId, 'Open the transcript of which session?', false);
        if (!id) {
            return undefined;
        }
        const exported = this.host.transcripts.get(id);
        if (exported && fs.existsSync(exported)) {
            const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(exported));
            return vscode.window.showTextDocument(doc, { preview: false });
        }
        return this.openEntries(id, 'transcript');
    }

    async setOverride(sessionId?: string): Promise<SettingsResult | undefined> {
        const id = await this.pickSession(sessionId, 'Override a setting of which session?', false);
        if (!id) {
            return undefined;
        }
        const client = await this.client();
        const current = await client.settings(id);
        const keys = Object.keys(current.values).sort();
        const picked = await vscode.window.showQuickPick(
            keys.map((key) => ({
                label: key,
                description: `${JSON.stringify(current.values[key])} (${current.sources[key] ?? '?'})`,
                key,
            })),
            { placeHolder: `Session ${id}: which setting? (an override wins over the IDE settings for this session only)` },
        );
        if (!picked) {
            return undefined;
        }
        const value = await this.askValue(picked.key, current);
        if (value === undefined) {
            return undefined;
        }
        const result = await client.setOverride(id, picked.key, value.value);
        void vscode.window.showInformationMessage(
            `hdcontext: session ${id}: ${picked.key} = ${JSON.stringify(result.values[picked.key])} (${result.sources[picked.key] ?? '?'}).`,
        );
        return result;
    }

    /** The new value (`null` removes the override), or undefined when the user gave up. */
    private async askValue(key: string, current: SettingsResult): Promise<{ value: unknown } | undefined> {
        const remove = '$(close) Remove the override';
        const now = current.values[key];
        let choices: string[] | undefined;
        if (key === 'compression.strategy') {
            choices = [...STRATEGIES];
        } else if (key === 'summarizer.provider') {
            choices = ['client', 'openai'];
        } else if (key === 'cache.ttl') {
            choices = [...CACHE_TTL_SETTINGS];
        } else if (typeof now === 'boolean') {
            choices = ['true', 'false'];
        }
        if (choices) {
            const items = [...choices, ...(current.sources[key] === 'override' ? [remove] : [])];
            const picked = await vscode.window.showQuickPick(items, { placeHolder: `${key} (now ${JSON.stringify(now)})` });
            if (picked === undefined) {
                return undefined;
            }
            if (picked === remove) {
                return { value: null };
            }
            return { value: typeof now === 'boolean' ? picked === 'true' : picked };
        }
        const text = await vscode.window.showInputBox({
            title: `Override ${key}`,
            prompt: 'A JSON value (a bare word counts as a string). Empty: remove the override.',
            value: now === undefined || now === null ? '' : JSON.stringify(now),
        });
        if (text === undefined) {
            return undefined;
        }
        return { value: parseValue(text) };
    }

    async clearSession(sessionId?: string): Promise<Status | undefined> {
        const id = await this.pickSession(sessionId, 'Clear which session?', false);
        if (!id) {
            return undefined;
        }
        const yes = 'Clear';
        const answer = await vscode.window.showWarningMessage(
            `Clear session ${id}? Its working history becomes empty; the transcript keeps every entry.`,
            { modal: true },
            yes,
        );
        if (answer !== yes) {
            return undefined;
        }
        const status = await (await this.client()).clear(id);
        this.host.statusBar.update(status);
        return status;
    }

    /** The status bar's click: the sessions, then the actions on the active one. */
    async showSessions(): Promise<void> {
        const failure = this.host.daemon.failure;
        type Item = vscode.QuickPickItem & { run?: () => Promise<unknown> };
        const actions: Item[] = [];
        const sessionItems: Item[] = [];
        if (failure) {
            actions.push(
                { label: '$(debug-restart) Restart Daemon', detail: failure, run: () => this.restart() },
                { label: '$(cloud-download) Reinstall Daemon', description: 'make its environment anew', run: () => this.reinstall() },
                {
                    label: '$(settings-gear) Set hdcontext.server.pythonPath',
                    run: async () => vscode.commands.executeCommand('workbench.action.openSettings', 'hdcontext.server.pythonPath'),
                },
            );
            const hint = this.host.daemon.installHint;
            if (hint) {
                actions.push({ label: '$(copy) Copy Install Command', description: hint, run: async () => vscode.env.clipboard.writeText(hint) });
            }
        } else {
            const active = this.host.statusBar.active;
            let sessions: Status[] = [];
            try {
                sessions = (await (await this.client()).list()).sessions;
            } catch (err) {
                this.host.daemon.log(`history/list failed: ${err instanceof Error ? err.message : String(err)}`);
            }
            for (const s of orderSessions(sessions, active?.sessionId)) {
                const item = sessionItem(s, active?.sessionId);
                sessionItems.push({
                    ...item,
                    run: async () => {
                        const known = this.host.statusBar.sessions.get(s.sessionId);
                        this.host.statusBar.update(known && known.version >= s.version ? known : s);
                        return this.showSessions();
                    },
                });
            }
            if (active) {
                const id = active.sessionId;
                actions.push(
                    { label: '$(fold) Compact Now', description: id, run: () => this.compactNow(id) },
                    { label: '$(json) Show History…', description: id, run: () => this.showHistory(id) },
                    { label: '$(book) Open Transcript', description: id, run: () => this.openTranscript(id) },
                    { label: '$(settings) Set a Session Override…', description: id, run: () => this.setOverride(id) },
                    { label: '$(clear-all) Clear Session…', description: id, run: () => this.clearSession(id) },
                );
            }
            actions.push({ label: '$(restart) Restart Daemon', run: () => this.restart() });
        }
        actions.push(
            { label: '$(output) Show Daemon Log', run: async () => this.host.output.show(true) },
            {
                label: '$(gear) Open hdcontext Settings',
                run: async () => vscode.commands.executeCommand('workbench.action.openSettings', '@ext:hdcontext.hdcontext'),
            },
        );
        const items: Item[] = [
            ...(sessionItems.length ? [{ label: 'Sessions', kind: vscode.QuickPickItemKind.Separator } as Item, ...sessionItems] : []),
            { label: 'Actions', kind: vscode.QuickPickItemKind.Separator } as Item,
            ...actions,
        ];
        const picked = await vscode.window.showQuickPick(items, { placeHolder: 'hdcontext: sessions and actions', matchOnDescription: true });
        if (picked?.run) {
            await picked.run();
        }
    }

    async restart(): Promise<void> {
        this.host.statusBar.sessions.clear();
        await this.host.daemon.restart();
    }

    async reinstall(): Promise<void> {
        this.host.statusBar.sessions.clear();
        await this.host.daemon.reinstall();
    }
}

function orderSessions(sessions: Status[], activeId: string | undefined): Status[] {
    return [...sessions].sort((a, b) =>
        a.sessionId === activeId ? -1 : b.sessionId === activeId ? 1 : a.sessionId.localeCompare(b.sessionId),
    );
}

function sessionItem(s: Status, activeId: string | undefined): SessionItem {
    return {
        label: `${s.sessionId === activeId ? '$(check) ' : ''}${s.sessionId}`,
        description: statusText(s),
        detail: `${s.strategy} · ${s.entryCount} entries · saved ${formatCount(s.savedTokens)} tokens`,
        sessionId: s.sessionId,
    };
}

/** Input box text → JSON value: empty → null (remove), JSON when it parses, else the text. */
export function parseValue(text: string): unknown {
    const t = text.trim();
    if (t === '') {
        return null;
    }
    try {
        return JSON.parse(t) as unknown;
    } catch {
        return t;
    }
}
