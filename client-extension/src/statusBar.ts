/**
 * The status bar item: the active session's tokens against its limit, fed by `history/tokens`.
 * Warning and error backgrounds as the total nears the threshold and the limit; a click opens
 * the quick pick of sessions and actions (`hdcontext.showSessions`).
 */

import * as vscode from 'vscode';

import type { Status } from './protocol';
import { TOOLTIP_TRUSTED_COMMANDS, tooltipMarkdown } from './savings';
import { SessionTracker, statusLevel, statusText, statusTooltip, type Level } from './status';

export const SHOW_SESSIONS_COMMAND = 'hdcontext.showSessions';
export const ICON = '$(layers)';

const BACKGROUND: Record<Level, string | undefined> = {
    normal: undefined,
    warning: 'statusBarItem.warningBackground',
    error: 'statusBarItem.errorBackground',
};

export class StatusBar implements vscode.Disposable {
    readonly item: vscode.StatusBarItem;
    readonly sessions = new SessionTracker();
    private problem: string | undefined;

    constructor() {
        this.item = vscode.window.createStatusBarItem('hdcontext.tokens', vscode.StatusBarAlignment.Right, 100);
        this.item.name = 'hdcontext tokens';
        this.item.command = SHOW_SESSIONS_COMMAND;
        this.idle();
        this.item.show();
    }

    /** Nothing has used the daemon yet, so it is not running. */
    idle(): void {
        this.problem = undefined;
        this.item.text = `${ICON} hdcontext`;
        this.item.tooltip = 'hdcontext: the daemon starts when a chat first uses it. Click for sessions and actions (this starts it).';
        this.item.backgroundColor = undefined;
    }

    /** The daemon is starting. */
    starting(): void {
        this.problem = undefined;
        this.item.text = `$(sync~spin) hdcontext`;
        this.item.tooltip = 'hdcontext: starting the daemon…';
        this.item.backgroundColor = undefined;
    }

    /** The daemon is up: show the active session, or that there is none yet. */
    running(): void {
        this.problem = undefined;
        this.render();
    }

    /** The daemon could not start or stopped for good. */
    failed(message: string): void {
        this.problem = message;
        this.item.text = `$(error) hdcontext`;
        this.item.tooltip = `${message}\nClick for actions.`;
        this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.errorBackground');
    }

    /** A `history/tokens` Status (or a request's Status): the session becomes the active one. */
    update(status: Status, makeActive = true): void {
        this.sessions.update(status, makeActive);
        if (this.problem === undefined) {
            this.render();
        }
    }

    /** Shows another known session. */
    select(sessionId: string): void {
        if (this.sessions.activate(sessionId) && this.problem === undefined) {
            this.render();
        }
    }

    forget(sessionId: string): void {
        this.sessions.remove(sessionId);
        if (this.problem === undefined) {
            this.render();
        }
    }

    get active(): Status | undefined {
        return this.sessions.active;
    }

    private render(): void {
        const s = this.sessions.active;
        if (s === undefined) {
            this.item.text = `${ICON} hdcontext`;
            this.item.tooltip = withSavingsLink('hdcontext: no chat session yet. Click for sessions and actions.');
            this.item.backgroundColor = undefined;
            return;
        }
        const level = statusLevel(s);
        this.item.text = `${ICON} ${statusText(s)}`;
        this.item.tooltip = withSavingsLink(statusTooltip(s, { sessionCount: this.sessions.size }));
        const color = BACKGROUND[level];
        this.item.backgroundColor = color === undefined ? undefined : new vscode.ThemeColor(color);
        this.item.accessibilityInformation = {
            label: `hdcontext: session ${s.sessionId}, ${statusText(s).replace('·', ',')}`,
        };
    }

    dispose(): void {
        this.item.dispose();
    }
}

/**
 * A tooltip's text with the link to the savings view under it: Markdown trusted for that one
 * command only (a link anywhere else in it, which escaping prevents, would not run anything).
 */
function withSavingsLink(plain: string): vscode.MarkdownString {
    const md = new vscode.MarkdownString(tooltipMarkdown(plain), true);
    md.isTrusted = { enabledCommands: [...TOOLTIP_TRUSTED_COMMANDS] };
    return md;
}
