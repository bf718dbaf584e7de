import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';

import { CACHE_TTL_SETTINGS, STRATEGIES } from '../../src/protocol';
import { DAEMON_ADDITIONS, DAEMON_SETTINGS, EXTENSION_SETTINGS, daemonSection, isSetByUser, type Inspected } from '../../src/settingsSection';
import { EXTENSION_ROOT, REPO_ROOT } from '../helpers/realDaemon';

interface Property {
    type: string | string[];
    properties?: Record<string, Property>;
    additionalProperties?: boolean | Property;
    propertyNames?: { minLength?: number };
    default: unknown;
    scope?: string;
    enum?: unknown[];
    enumDescriptions?: string[];
    minimum?: number;
    maximum?: number;
    exclusiveMinimum?: number;
    exclusiveMaximum?: number;
    description?: string;
    markdownDescription?: string;
    items?: { type: string };
}

const pkg = JSON.parse(fs.readFileSync(path.join(EXTENSION_ROOT, 'package.json'), 'utf8'));
const props: Record<string, Property> = pkg.contributes.configuration.properties;
const prop = (key: string): Property => {
    const p = props[`hdcontext.${key}`];
    assert.ok(p, `package.json contributes hdcontext.${key}`);
    return p;
};
const PROTOCOL_MD = path.join(REPO_ROOT, '..', 'shared', 'PROTOCOL.md');

describe('package.json contributions', () => {
    it('contributes exactly the daemon keys plus the extension keys', () => {
        const want = [...DAEMON_SETTINGS, ...EXTENSION_SETTINGS].map((s) => `hdcontext.${s.key}`).sort();
        assert.deepEqual(Object.keys(props).sort(), want);
    });

    it('every setting has a type, a default, a description and the scope settingsSection.ts assumes', () => {
        for (const { key, scope } of [...DAEMON_SETTINGS, ...EXTENSION_SETTINGS]) {
            const p = prop(key);
            assert.ok(p.type, key);
            assert.ok('default' in p, `${key} default`);
            assert.ok((p.markdownDescription ?? p.description ?? '').length > 20, `${key} description`);
            assert.equal(p.scope, scope, `${key} scope`);
            if (p.enum) {
                assert.equal(p.enumDescriptions?.length, p.enum.length, `${key} enumDescriptions`);
            }
        }
    });

    it('types, defaults and ranges follow PROTOCOL.md', () => {
        assert.deepEqual(prop('compression.strategy').enum, [...STRATEGIES]);
        assert.equal(prop('compression.strategy').default, 'high-density');
        const threshold = prop('compression.threshold');
        assert.deepEqual(threshold.type, ['number', 'null']);
        assert.equal(threshold.default, null);
        assert.equal(threshold.exclusiveMinimum, 0);
        assert.equal(threshold.maximum, 1);
        for (const [key, dflt] of [
            ['compression.preserveThreshold', 0.3],
            ['compression.topPreserveThreshold', 0.2],
        ] as const) {
            assert.equal(prop(key).default, dflt);
            assert.equal(prop(key).exclusiveMinimum, 0);
            assert.equal(prop(key).exclusiveMaximum, 1);
        }
        assert.equal(prop('compression.density.readWritePruning').default, true);
        assert.equal(prop('compression.density.fileDedupe').default, true);
        assert.equal(prop('compression.density.recencyPruning').default, false);
        assert.equal(prop('compression.density.recencyRetention').type, 'integer');
        assert.equal(prop('compression.density.recencyRetention').minimum, 1);
        assert.equal(prop('contextLimit').type, 'integer');
        assert.equal(prop('contextLimit').default, 200000);
        assert.equal(prop('tools.read').items?.type, 'string');
        assert.ok((prop('tools.read').default as string[]).includes('read_file'));
        assert.ok((prop('tools.write').default as string[]).includes('Edit'));
        assert.equal(prop('watch.enabled').default, true);
        assert.deepEqual(prop('summarizer.provider').enum, ['client', 'openai']);
        assert.deepEqual(prop('compression.density.schedule').enum, ['cache-aware', 'every-turn']);
        assert.equal(prop('compression.density.schedule').default, 'cache-aware');
        assert.equal(prop('compression.density.keepLatestView').default, true);
        assert.deepEqual(prop('compression.density.masking').enum, ['off', 'cold', 'always']);
        assert.equal(prop('compression.density.masking').default, 'cold');
        assert.equal(prop('compression.density.maskRetention').type, 'integer');
        assert.equal(prop('compression.density.maskRetention').default, 3);
        assert.equal(prop('compression.density.maskRetention').minimum, 0);
        assert.deepEqual(prop('cache.pricing').enum, ['auto', 'anthropic', 'openai', 'gemini', 'none']);
        assert.equal(prop('cache.pricing').default, 'auto');
        // Unset (null) means "from cache.pricing".
        assert.deepEqual(prop('cache.ttlSeconds').type, ['integer', 'null']);
        assert.equal(prop('cache.ttlSeconds').default, null);
        assert.equal(prop('cache.ttlSeconds').minimum, 1);
        for (const key of ['cache.readCost', 'cache.writeCost']) {
            assert.deepEqual(prop(key).type, ['number', 'null']);
            assert.equal(prop(key).default, null);
            assert.equal(prop(key).minimum, 0);
        }
        // The prompt cache's lifetime.
        assert.deepEqual(prop('cache.ttl').enum, [...CACHE_TTL_SETTINGS]);
        assert.deepEqual(CACHE_TTL_SETTINGS, ['5m', '1h', 'auto']);
        assert.equal(prop('cache.ttl').default, '5m');
        const [fiveMinutes, anHour] = prop('cache.ttl').enumDescriptions ?? [];
        assert.match(fiveMinutes, /1\.25 times/, 'what a five-minute write costs');
        assert.match(anHour, /2 times an uncached input token instead of 1\.25/, 'what an hour costs');
        assert.equal(prop('cache.refresh').type, 'boolean');
        assert.equal(prop('cache.refresh').default, false);
        assert.match(prop('cache.refresh').markdownDescription ?? '', /spends your money on model calls you did not make/);
        // Daemon additions (DAEMON_ADDITIONS).
        assert.equal(prop('cache.refreshIdleSeconds').type, 'integer');
        assert.equal(prop('cache.refreshIdleSeconds').default, 3600);
        assert.equal(prop('cache.refreshIdleSeconds').minimum, 1);
        const prices = prop('cache.prices');
        assert.equal(prices.type, 'object');
        assert.deepEqual(prices.default, {});
        assert.equal(prices.propertyNames?.minLength, 1, 'a model id is never empty');
        const row = prices.additionalProperties as Property;
        assert.equal(row.type, 'object');
        assert.equal(row.additionalProperties, false, 'a key the daemon does not know is refused in the editor too');
        assert.deepEqual(Object.keys(row.properties ?? {}), ['input', 'output', 'cacheRead', 'cacheWrite5m', 'cacheWrite1h', 'ttlSeconds', 'minPrefix']);
        for (const [key, field] of Object.entries(row.properties ?? {})) {
            const integer = key === 'ttlSeconds' || key === 'minPrefix';
            assert.equal(field.type, integer ? 'integer' : 'number', key);
            assert.equal(field.minimum, integer ? 1 : 0, key);
            assert.ok((field.markdownDescription ?? '').length > 20, `${key} description`);
        }
    });

    it('every key of PROTOCOL.md settings table is contributed', { skip: !fs.existsSync(PROTOCOL_MD) && 'shared/PROTOCOL.md not found' }, () => {
        const text = fs.readFileSync(PROTOCOL_MD, 'utf8');
        const table = text.slice(text.indexOf('## Settings'), text.indexOf('## Requests'));
        const keys = new Set<string>();
        for (const row of table.split('\n').filter((l) => l.startsWith('| `'))) {
            const cell = row.split('|')[1];
            for (const m of cell.matchAll(/`([\w.]+)`/g)) {
                keys.add(m[1]);
            }
        }
        assert.ok(keys.size >= 16, `parsed ${keys.size} keys`);
        for (const key of keys) {
            prop(key);
        }
        // Both ways: the daemon's keys are the table's plus the daemon additions not yet in the
        // contract, named in one list (the real-daemon test holds DAEMON_SETTINGS to the daemon).
        for (const key of DAEMON_ADDITIONS) {
            assert.ok(!keys.has(key), `PROTOCOL.md now lists ${key}: take it out of DAEMON_ADDITIONS`);
        }
        assert.deepEqual(
            DAEMON_SETTINGS.map((s) => s.key).sort(),
            [...keys, ...DAEMON_ADDITIONS].sort(),
            'the daemon keys are PROTOCOL.md\'s table plus DAEMON_ADDITIONS',
        );
    });

    it('declares engines, activation, main, types, commands', () => {
        assert.equal(pkg.engines.vscode, '^1.106.0');
        // Activated by its contributions (commands, chat models, participant, tool) or the API; never at startup.
        assert.deepEqual(pkg.activationEvents, []);
        assert.equal(pkg.main, './out/extension.js');
        assert.equal(pkg.types, './api.d.ts');
        const commands = pkg.contributes.commands.map((c: { command: string }) => c.command).sort();
        for (const c of ['compactNow', 'showHistory', 'openTranscript', 'setOverride', 'clearSession', 'showSessions']) {
            assert.ok(commands.includes(`hdcontext.${c}`), c);
        }
    });
});

describe('daemonSection', () => {
    function reader(values: Record<string, { effective: unknown; inspected?: Inspected }>) {
        return {
            get: (key: string) => values[key]?.effective,
            inspect: (key: string) => values[key]?.inspected ?? {},
        };
    }

    it('sends only what the user set, as dotted keys', () => {
        const section = daemonSection(
            reader({
                'compression.strategy': { effective: 'high-density' }, // default only
                contextLimit: { effective: 1000, inspected: { globalValue: 1000 } },
                'compression.threshold': { effective: 0.5, inspected: { workspaceValue: 0.5 } },
                'tools.read': { effective: ['Read'], inspected: { workspaceFolderValue: ['Read'] } },
            }),
        );
        assert.deepEqual(section, { contextLimit: 1000, 'compression.threshold': 0.5, 'tools.read': ['Read'] });
    });

    it('machine-scoped keys come from user settings only', () => {
        const section = daemonSection(
            reader({
                'summarizer.provider': { effective: 'client', inspected: { workspaceValue: 'openai' } },
                'summarizer.baseUrl': { effective: '', inspected: { workspaceValue: 'http://evil.invalid' } },
                'summarizer.model': { effective: 'm', inspected: { globalValue: 'm' } },
                // Refresh calls spend the user's money: a workspace cannot turn them on.
                'cache.refresh': { effective: true, inspected: { workspaceValue: true } },
            }),
        );
        assert.deepEqual(section, { 'summarizer.model': 'm' });
        const own = daemonSection(reader({ 'cache.refresh': { effective: true, inspected: { globalValue: true } } }));
        assert.deepEqual(own, { 'cache.refresh': true });
    });

    it('an empty string or null is unset', () => {
        const section = daemonSection(
            reader({
                'summarizer.apiKeyEnv': { effective: '', inspected: { globalValue: '' } },
                'compression.threshold': { effective: null, inspected: { globalValue: null } },
            }),
        );
        assert.deepEqual(section, {});
    });

    it('isSetByUser', () => {
        assert.equal(isSetByUser(undefined, 'window'), false);
        assert.equal(isSetByUser({ workspaceFolderValue: 1 }, 'window'), true);
        assert.equal(isSetByUser({ workspaceFolderValue: 1 }, 'machine'), false);
        assert.equal(isSetByUser({ globalValue: false }, 'machine'), true);
    });
});
