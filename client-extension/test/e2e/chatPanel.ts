/**
 * Driving VS Code's chat panel (1.139) in a CodeServerRun, and reading what the chat fixture
 * (chat-fixture/: "Fake Backend 1", `@agent`, file tools) logged: shared by the chat e2e tests.
 * Selectors from shared/recipes/vscode-chat.
 */

import * as fs from 'node:fs';

import type { CodeServerRun } from './codeServer';
import { STEP_MS } from './codeServer';

export const MODEL = 'Fake Backend 1 · hdcontext';
export const INPUT = '.interactive-input-part .monaco-editor';
export const PICKER = '.interactive-input-part a.model-picker-name';

export interface Part {
    type: 'text' | 'call' | 'result' | 'data' | 'other';
    text?: string;
    callId?: string;
    name?: string;
    input?: Record<string, unknown>;
}
export interface Message {
    role: string;
    parts: Part[];
}
export interface LogLine {
    hop: string;
    at: number;
    tokens?: number;
    tools?: string[];
    messages?: Message[] | number;
    [key: string]: unknown;
}

/** What each hop of the fixture logged (one JSON line each). */
export function readLog(logFile: string): LogLine[] {
    return fs.existsSync(logFile)
        ? fs
              .readFileSync(logFile, 'utf8')
              .split('\n')
              .filter(Boolean)
              .map((l) => JSON.parse(l) as LogLine)
        : [];
}

/** Calls and results of a request, by call id. */
export function toolIds(messages: Message[]): { calls: string[]; results: string[] } {
    const parts = messages.flatMap((m) => m.parts);
    return {
        calls: parts.filter((p) => p.type === 'call').map((p) => p.callId as string),
        results: parts.filter((p) => p.type === 'result').map((p) => p.callId as string),
    };
}

/** Every call answered in the next message, every result answering the message before. */
export function pairingProblems(messages: Message[]): string[] {
    const problems: string[] = [];
    messages.forEach((m, i) => {
        const calls = m.parts.filter((p) => p.type === 'call').map((p) => p.callId);
        const next = new Set((messages[i + 1]?.parts ?? []).filter((p) => p.type === 'result').map((p) => p.callId));
        calls.filter((c) => !next.has(c)).forEach((c) => problems.push(`call ${c} unanswered`));
        const prev = new Set((messages[i - 1]?.parts ?? []).filter((p) => p.type === 'call').map((p) => p.callId));
        m.parts.filter((p) => p.type === 'result' && !prev.has(p.callId)).forEach((p) => problems.push(`result ${p.callId} without its call`));
    });
    return problems;
}

/**
 * Closes the notifications that are not hdcontext's (code-server's own, such as GitHub's "You
 * have not yet finished authorizing…"): they sit over the chat input and the model picker.
 */
export async function dismissOtherToasts(run: CodeServerRun): Promise<void> {
    const others = run.page.locator('.notifications-toasts .notification-toast').filter({ hasNotText: 'hdcontext' });
    for (let i = (await others.count()) - 1; i >= 0; i--) {
        const toast = others.nth(i);
        try {
            await toast.hover({ timeout: 2000 });
            await toast.locator('.codicon-notifications-clear').first().click({ timeout: 2000 });
        } catch {
            // gone by itself meanwhile
        }
    }
}

/** The model the chat panel's picker shows now ("Models, <name>"). */
export async function pickedModel(run: CodeServerRun): Promise<string> {
    const label = (await run.page.locator(PICKER).first().getAttribute('aria-label', { timeout: 5000 }).catch(() => null)) ?? '';
    return label.replace(/^Models, /, '');
}

/** Types a request into the chat input (replacing what is there) and sends it. */
export async function send(run: CodeServerRun, text: string): Promise<void> {
    await dismissOtherToasts(run);
    // Near its left end: a notification of hdcontext's in the bottom-right corner may cover the rest.
    await run.page.click(INPUT, { position: { x: 40, y: 10 } });
    await run.page.keyboard.press('Control+A');
    await run.page.keyboard.press('Backspace');
    await run.page.keyboard.type(text);
    if (/\/\w+$/.test(text)) {
        // Enter would accept the slash command's completion instead of sending.
        await run.page.keyboard.type(' ');
    }
    await run.page.keyboard.press('Enter');
}

/** The last response in the panel, once it shows `pattern`. */
export async function reply(run: CodeServerRun, pattern: RegExp, timeout = STEP_MS): Promise<string> {
    const last = run.page.locator('.interactive-item-container.interactive-response').last();
    await last.getByText(pattern).first().waitFor({ timeout });
    return last.innerText();
}

/** Makes the chat view (the secondary side bar) wider, for the screenshots. */
export async function widenChat(run: CodeServerRun): Promise<void> {
    const bar = await run.page.locator('#workbench\\.parts\\.auxiliarybar').boundingBox();
    if (bar) {
        await run.page.mouse.move(bar.x - 1, bar.y + bar.height / 2);
        await run.page.mouse.down();
        await run.page.mouse.move(bar.x - 240, bar.y + bar.height / 2, { steps: 5 });
        await run.page.mouse.up();
    }
}

/**
 * Picks `model` in the chat panel's model picker, once the picker knows a model. It lists the
 * models known when it opens: it is reopened until the model is there. `onListed` runs while the
 * row is on screen.
 */
export async function pickModel(run: CodeServerRun, model = MODEL, onListed?: () => Promise<void>): Promise<void> {
    const page = run.page;
    await page.waitForSelector(INPUT, { timeout: STEP_MS });
    // Until a model is known the picker reads "Models, sign in to use Copilot", and a click on it
    // starts GitHub's sign-in (a notification, then a modal dialog when it fails offline).
    await page.waitForSelector(`${PICKER}:not([aria-label*="sign in"])`, { timeout: STEP_MS });
    // The row may be listed before the filtered list settles: a click that lands while it is
    // drawn again selects nothing (CI showed the picker still on the plain model, the row in
    // view). So a pick is checked on the picker, and made again when it did not take.
    let listed = false;
    for (let i = 0; i < 30; i++) {
        await dismissOtherToasts(run);
        await page.click(PICKER);
        await page.keyboard.type(model.replace(/ · .*$/, ''));
        const row = page.locator(`.chat-model-picker-dropdown .monaco-list-row[aria-label^="${model}"]`).first();
        try {
            await row.waitFor({ timeout: 1000 });
        } catch {
            await page.keyboard.press('Escape');
            await page.waitForTimeout(500);
            continue;
        }
        if (!listed) {
            listed = true;
            await onListed?.();
        }
        await row.click();
        try {
            await page.waitForSelector(`${PICKER}[aria-label="Models, ${model}"]`, { timeout: 3000 });
            return;
        } catch {
            console.log(`pickModel: the click on "${model}" did not take (try ${i + 1}); again`);
            await page.keyboard.press('Escape');
            await page.waitForTimeout(500);
        }
    }
    throw new Error(listed ? `"${model}" was listed but picking it never took` : `"${model}" never appeared in the model picker`);
}
