import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { DEFAULT_PROXY_PORT, proxyOptions } from '../../src/proxySettings';

const reader = (values: Record<string, unknown>) => (key: string) => values[key];

describe('proxyOptions (hdcontext.proxy.* → initializationOptions.proxy)', () => {
    it('is off unless hdcontext.proxy.enabled is true', () => {
        assert.equal(proxyOptions(reader({})), undefined);
        assert.equal(proxyOptions(reader({ 'proxy.enabled': false, 'proxy.port': 9000 })), undefined);
        assert.equal(proxyOptions(reader({ 'proxy.enabled': 'yes' })), undefined);
    });

    it('takes the port and the upstreams, leaving out what is empty or wrong', () => {
        assert.deepEqual(proxyOptions(reader({ 'proxy.enabled': true })), { port: DEFAULT_PROXY_PORT });
        assert.deepEqual(
            proxyOptions(
                reader({
                    'proxy.enabled': true,
                    'proxy.port': 9100,
                    'proxy.anthropicUpstream': ' https://gw.example/anthropic ',
                    'proxy.openaiUpstream': '',
                    'proxy.contextLimit': 1000000,
                }),
            ),
            { port: 9100, anthropicUpstream: 'https://gw.example/anthropic', contextLimit: 1000000 },
        );
        assert.deepEqual(proxyOptions(reader({ 'proxy.enabled': true, 'proxy.port': 70000, 'proxy.contextLimit': 1.5 })), {
            port: DEFAULT_PROXY_PORT,
        });
    });
});
