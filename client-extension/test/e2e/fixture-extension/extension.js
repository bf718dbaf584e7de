// Test-only chat extension: uses the hdcontext API (api.d.ts) as a real chat extension would.
// On startup it opens session "e2e-chat" (no contextLimit: the IDE setting applies), appends a
// conversation in which the model reads src/app.py and later writes the same file, and reports
// what it saw in its own status bar item and, when HDCONTEXT_FIXTURE_REPORT is set, in that file.
'use strict';
const vscode = require('vscode');
const fs = require('fs');

const SESSION = 'e2e-chat';

function bigFile() {
    const out = [];
    for (let i = 0; i < 150; i++) {
        out.push(`def function_${i}(value):\n    """Return value plus ${i}, doubled when odd."""\n    return (value + ${i}) * (2 if value % 2 else 1)\n`);
    }
    return out.join('\n');
}

function conversation() {
    return [
        { speaker: 'human', blocks: [{ type: 'text', text: 'Please fix the off-by-one in src/app.py.' }] },
        { speaker: 'ai', blocks: [
            { type: 'text', text: 'Let me read the file first.' },
            { type: 'tool_call', id: 'call-read-1', name: 'read_file', parameters: { file_path: 'src/app.py' } },
        ] },
        { speaker: 'tool', blocks: [{ type: 'tool_response', callId: 'call-read-1', toolName: 'read_file', result: { output: bigFile() } }] },
        { speaker: 'ai', blocks: [
            { type: 'text', text: 'Found it; rewriting the function.' },
            { type: 'tool_call', id: 'call-write-1', name: 'write_file', parameters: { file_path: 'src/app.py', content: 'def function_0(value):\n    return value\n' } },
        ] },
        { speaker: 'tool', blocks: [{ type: 'tool_response', callId: 'call-write-1', toolName: 'write_file', result: { output: 'ok' } }] },
        { speaker: 'ai', blocks: [{ type: 'text', text: 'Fixed src/app.py.' }] },
    ];
}

async function activate(context) {
    const item = vscode.window.createStatusBarItem('hdcontextFixture.state', vscode.StatusBarAlignment.Left, 1000);
    item.text = 'fixture: starting';
    item.show();
    context.subscriptions.push(item);
    const report = { events: [], appended: null, compacted: null, error: null, configChanges: [] };
    const save = () => {
        const file = process.env.HDCONTEXT_FIXTURE_REPORT;
        if (file) {
            fs.writeFileSync(file + '.tmp', JSON.stringify(report, null, 2));
            fs.renameSync(file + '.tmp', file);
        }
    };
    context.subscriptions.push(vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration('hdcontext')) {
            report.configChanges.push(vscode.workspace.getConfiguration('hdcontext').get('contextLimit'));
            save();
        }
    }));
    try {
        const ext = vscode.extensions.getExtension('hdcontext.hdcontext');
        if (!ext) {
            throw new Error('hdcontext.hdcontext is not installed');
        }
        const api = await ext.activate();
        context.subscriptions.push(api.onTokens((s) => {
            report.events.push(s);
            item.text = `fixture: ${report.events.length} events`;
            save();
        }));
        context.subscriptions.push(vscode.commands.registerCommand('hdcontextFixture.compact', async () => {
            report.compacted = await api.compact(SESSION);
            save();
        }));
        await api.open(SESSION, { model: 'e2e-model' });
        report.appended = await api.append(SESSION, conversation());
        item.text = `fixture: appended v${report.appended.version}`;
    } catch (err) {
        report.error = String(err && err.message || err);
        item.text = `fixture: error ${report.error}`;
    }
    save();
}

function deactivate() {}

module.exports = { activate, deactivate };
