import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { CLOSING_INSTRUCTION, blockText, modelSelectors, summaryMessages } from '../../src/summaryPrompt';
import { readThenWrite } from '../helpers/conversation';

describe('summaryMessages', () => {
    it('prompt first, entries in their roles, a closing user message', () => {
        const msgs = summaryMessages({ sessionId: 's', strategy: 'one-shot', prompt: 'Summarize like this.', messages: readThenWrite('a.py', 'print(1)') });
        assert.equal(msgs[0].role, 'user');
        assert.equal(msgs[0].text, 'Summarize like this.');
        assert.deepEqual(
            msgs.slice(1, -1).map((m) => m.role),
            ['user', 'assistant', 'user', 'assistant', 'user', 'assistant'],
        );
        assert.match(msgs[2].text, /\[tool call read_file \(call-read-1\)\] \{"file_path":"a.py"\}/);
        assert.match(msgs[3].text, /\[tool result read_file \(call-read-1\)\] \{"output":"print\(1\)"\}/);
        assert.deepEqual(msgs[msgs.length - 1], { role: 'user', text: CLOSING_INSTRUCTION });
    });

    it('every block kind has a text', () => {
        assert.equal(blockText({ type: 'thinking', thought: 'hm' }), '[thinking] hm');
        assert.equal(blockText({ type: 'code', code: 'x=1', language: 'py' }), '```py\nx=1\n```');
        assert.equal(blockText({ type: 'media', mimeType: 'image/png', data: 'AAA', encoding: 'base64' }), '[media image/png]');
        assert.equal(
            blockText({ type: 'tool_response', callId: 'c', toolName: 't', result: 'boom', error: 'failed' }),
            '[tool result t (c)] error: failed boom',
        );
    });

    it('skips entries with no text', () => {
        const msgs = summaryMessages({ sessionId: 's', strategy: 'one-shot', prompt: 'p', messages: [{ speaker: 'ai', blocks: [] }] });
        assert.equal(msgs.length, 2);
    });
});

describe('modelSelectors', () => {
    it('empty: any model', () => assert.deepEqual(modelSelectors(''), [{}]));
    it('an id or a family', () => assert.deepEqual(modelSelectors('gpt-4o'), [{ id: 'gpt-4o' }, { family: 'gpt-4o' }]));
    it('vendor/id', () =>
        assert.deepEqual(modelSelectors('copilot/gpt-4o'), [
            { vendor: 'copilot', id: 'gpt-4o' },
            { vendor: 'copilot', family: 'gpt-4o' },
            { id: 'copilot/gpt-4o' },
            { family: 'copilot/gpt-4o' },
        ]));
});
