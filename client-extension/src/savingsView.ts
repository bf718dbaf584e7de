/**
 * *hdcontext: Show Savings*: the savings page (the one `hdcontext stats --serve` and the proxy
 * serve) in a webview, for the window's sessions (the ones its status bar knows; the whole
 * storage folder when it knows none). The daemon makes the page (`stats/savings` with a nonce);
 * the extension puts its policy in front (savings.ts: only that nonce's script and style run,
 * nothing loads). While the view is open, each `history/tokens` (new usage, a new call) asks
 * for the figures again, and the page takes them by `postMessage` without reloading.
 */

import * as vscode from 'vscode';

import type { Daemon } from './daemon';
import type { Status } from './protocol';
import { FIGURES_MESSAGE, makeNonce, savingsScope, withPolicy } from './savings';

export const VIEW_TYPE = 'hdcontext.savings';
export const TITLE = 'hdcontext: Savings';
/** Calls come in bursts (sync, compact, usage): one update after the last of them. */
export const UPDATE_DELAY_MS = 300;

export interface SavingsHost {
    daemon: Daemon;
    /** The sessions of this window, as the status bar knows them. */
    windowSessions(): string[];
    /** `history/tokens`: after every change of a session, usage included. */
    onTokens: vscode.Event<Status>;
    log(line: string): void;
}

export class SavingsView implements vscode.Disposable {
    private panel: vscode.WebviewPanel | undefined;
    private timer: ReturnType<typeof setTimeout> | undefined;
    private readonly subscription: vscode.Disposable;

    constructor(private readonly host: SavingsHost) {
        this.subscription = host.onTokens(() => this.scheduleUpdate());
    }

    /** Opens the view (or brings it forward) with the figures as they are now. */
    async show(): Promise<void> {
        const client = await this.host.daemon.ready();
        const nonce = makeNonce();
        const result = await client.savings({ sessions: savingsScope(this.host.windowSessions()), nonce });
        if (typeof result.html !== 'string') {
            throw new Error('hdcontext: the daemon sent no savings page');
        }
        const html = withPolicy(result.html, nonce);
        if (this.panel === undefined) {
            const panel = vscode.window.createWebviewPanel(VIEW_TYPE, TITLE, vscode.ViewColumn.Active, {
                enableScripts: true,
                enableCommandUris: false,
                enableForms: false,
                localResourceRoots: [],
                // The figures posted since the page was made are kept while it is hidden.
                retainContextWhenHidden: true,
            });
            panel.onDidDispose(() => {
                if (this.panel === panel) {
                    this.panel = undefined;
                    this.cancelUpdate();
                }
            });
            this.panel = panel;
        } else {
            this.panel.reveal();
        }
        this.panel.webview.html = html;
    }

    get isOpen(): boolean {
        return this.panel !== undefined;
    }

    private scheduleUpdate(): void {
        if (this.panel === undefined) {
            return;
        }
        this.cancelUpdate();
        this.timer = setTimeout(() => {
            this.timer = undefined;
            void this.update();
        }, UPDATE_DELAY_MS);
    }

    private cancelUpdate(): void {
        if (this.timer !== undefined) {
            clearTimeout(this.timer);
            this.timer = undefined;
        }
    }

    /** The figures again, posted to the open page (which draws them in place). */
    private async update(): Promise<void> {
        const panel = this.panel;
        if (panel === undefined) {
            return;
        }
        try {
            const client = await this.host.daemon.ready();
            const { figures } = await client.savings({ sessions: savingsScope(this.host.windowSessions()) });
            if (this.panel === panel) {
                await panel.webview.postMessage({ type: FIGURES_MESSAGE, figures });
            }
        } catch (err) {
            this.host.log(`the savings view could not be updated: ${err instanceof Error ? err.message : String(err)}`);
        }
    }

    dispose(): void {
        this.cancelUpdate();
        this.subscription.dispose();
        this.panel?.dispose();
        this.panel = undefined;
    }
}
