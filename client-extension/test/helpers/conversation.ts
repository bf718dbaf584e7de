/**
 * A small agent conversation: the model reads a file, later writes the same file (so the read
 * is stale and density prunes it), and the user includes it with @file.
 */

import type { IContent } from '../../src/protocol';

export function bigFile(lines = 120): string {
    const out: string[] = [];
    for (let i = 0; i < lines; i++) {
        out.push(`def function_${i}(value):\n    """Return value plus ${i}, doubled when odd."""\n    return (value + ${i}) * (2 if value % 2 else 1)\n`);
    }
    return out.join('\n');
}

export function readThenWrite(file = 'src/app.py', content = bigFile()): IContent[] {
    return [
        { speaker: 'human', blocks: [{ type: 'text', text: `Please fix the off-by-one in ${file}.` }] },
        {
            speaker: 'ai',
            blocks: [
                { type: 'text', text: 'Let me read the file first.' },
                { type: 'tool_call', id: 'call-read-1', name: 'read_file', parameters: { file_path: file } },
            ],
        },
        {
            speaker: 'tool',
            blocks: [{ type: 'tool_response', callId: 'call-read-1', toolName: 'read_file', result: { output: content } }],
        },
        {
            speaker: 'ai',
            blocks: [
                { type: 'text', text: 'I will rewrite the function.' },
                {
                    type: 'tool_call',
                    id: 'call-write-1',
                    name: 'write_file',
                    parameters: { file_path: file, content: 'def function_0(value):\n    return value\n' },
                },
            ],
        },
        {
            speaker: 'tool',
            blocks: [{ type: 'tool_response', callId: 'call-write-1', toolName: 'write_file', result: { output: 'ok' } }],
        },
        { speaker: 'ai', blocks: [{ type: 'text', text: `Fixed ${file}.` }] },
    ];
}

/** Reads of different files, nothing stale: only compression can shrink it. */
export function readsOnly(files: string[], content = bigFile()): IContent[] {
    const out: IContent[] = [{ speaker: 'human', blocks: [{ type: 'text', text: `Explain ${files.join(', ')}.` }] }];
    files.forEach((file, i) => {
        out.push(
            { speaker: 'ai', blocks: [{ type: 'tool_call', id: `call-r${i}`, name: 'read_file', parameters: { file_path: file } }] },
            { speaker: 'tool', blocks: [{ type: 'tool_response', callId: `call-r${i}`, toolName: 'read_file', result: { output: `# ${file}\n${content}` } }] },
            { speaker: 'ai', blocks: [{ type: 'text', text: `${file} defines many small functions.` }] },
        );
    });
    out.push({ speaker: 'human', blocks: [{ type: 'text', text: 'Thanks. Now summarize what we saw.' }] });
    return out;
}
