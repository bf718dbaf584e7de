import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { DEFAULT_PROXY_PORT, daemonEnvironment, proxyOptions } from '../../src/proxySettings';

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

describe('daemonEnvironment (the editor’s http.proxy → the daemon’s HTTPS_PROXY…)', () => {
    const base = { PATH: '/bin', https_proxy: 'http://from-shell:1', NO_PROXY: 'shell.example' };

    it('leaves the variables as they are when the editor names no proxy', () => {
        assert.deepEqual(daemonEnvironment(base, reader({})), { ...base, PYTHONUNBUFFERED: '1' });
        assert.deepEqual(daemonEnvironment(base, reader({ proxy: '  ', noProxy: ['x.example'] })), {
            ...base,
            PYTHONUNBUFFERED: '1',
        });
        assert.deepEqual(daemonEnvironment(base, reader({ proxy: 'http://corp:3128', proxySupport: 'off' })), {
            ...base,
            PYTHONUNBUFFERED: '1',
        });
    });

    it('puts the editor’s proxy and its exceptions in every variable, over the shell’s', () => {
        const env = daemonEnvironment(base, reader({ proxy: ' http://corp:3128 ', noProxy: ['a.example', '', 7, ' .b.example '] }));
        for (const name of ['https_proxy', 'HTTPS_PROXY', 'http_proxy', 'HTTP_PROXY']) {
            assert.equal(env[name], 'http://corp:3128', name);
        }
        assert.equal(env.no_proxy, 'a.example,.b.example');
        assert.equal(env.NO_PROXY, 'a.example,.b.example');
        assert.equal(env.PATH, '/bin');
        assert.equal(env.PYTHONUNBUFFERED, '1');
        assert.equal(base.https_proxy, 'http://from-shell:1', 'the base is not changed');
    });

    it('keeps the shell’s exceptions when the editor lists none', () => {
        const env = daemonEnvironment(base, reader({ proxy: 'http://corp:3128', noProxy: [] }));
        assert.equal(env.NO_PROXY, 'shell.example');
    });
});
