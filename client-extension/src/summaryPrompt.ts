/**
 * A `history/summarize` request as chat messages for an editor language model. No `vscode`
 * import: the vscode-bound summarizer turns these into `LanguageModelChatMessage`s.
 *
 * The public `vscode.lm` API has user and assistant messages only (no system role), so the
 * daemon's prompt goes first as a user message, then each entry in its role as plain text
 * (tool calls and results spelled out, as the daemon's own OpenAI path does), then a closing user
 * message asking for the summary, so that the conversation ends on the user's turn.
 */

import type { Block, IContent, SummarizeParams } from './protocol';

export interface PlainMessage {
    role: 'user' | 'assistant';
    text: string;
}

export const CLOSING_INSTRUCTION =
    'Now write the summary of the conversation above, exactly as the first message describes. Answer with the summary only.';

function json(value: unknown): string {
    if (typeof value === 'string') {
        return value;
    }
    try {
        return JSON.stringify(value) ?? String(value);
    } catch {
        return String(value);
    }
}

export function blockText(block: Block): string {
    switch (block.type) {
        case 'text':
            return block.text;
        case 'thinking':
            return `[thinking] ${block.thought}`;
        case 'code':
            return '```' + (block.language ?? '') + '\n' + block.code + '\n```';
        case 'tool_call':
            return `[tool call ${block.name} (${block.id})] ${json(block.parameters)}`;
        case 'tool_response': {
            const head = `[tool result ${block.toolName} (${block.callId})]`;
            const error = block.error ? ` error: ${block.error}` : '';
            return `${head}${error} ${json(block.result)}`;
        }
        case 'media':
            return `[media ${block.mimeType}]`;
        default:
            return json(block);
    }
}

export function entryText(entry: IContent): string {
    return entry.blocks
        .map(blockText)
        .filter((t) => t.length > 0)
        .join('\n\n');
}

export function summaryMessages(params: SummarizeParams): PlainMessage[] {
    const out: PlainMessage[] = [{ role: 'user', text: params.prompt }];
    for (const entry of params.messages) {
        const text = entryText(entry);
        if (!text) {
            continue;
        }
        out.push({ role: entry.speaker === 'ai' ? 'assistant' : 'user', text });
    }
    out.push({ role: 'user', text: CLOSING_INSTRUCTION });
    return out;
}

/**
 * How the `hdcontext.summarizer.vscodeModel` setting selects models, in the order tried:
 * `vendor/x` → {vendor, id: x} then {vendor, family: x}; `x` → {id: x} then {family: x};
 * empty → any model.
 */
export function modelSelectors(setting: string | undefined): Array<{ vendor?: string; id?: string; family?: string }> {
    const wanted = (setting ?? '').trim();
    if (!wanted) {
        return [{}];
    }
    const slash = wanted.indexOf('/');
    if (slash > 0 && slash < wanted.length - 1) {
        const vendor = wanted.slice(0, slash);
        const rest = wanted.slice(slash + 1);
        return [
            { vendor, id: rest },
            { vendor, family: rest },
            { id: wanted },
            { family: wanted },
        ];
    }
    return [{ id: wanted }, { family: wanted }];
}
