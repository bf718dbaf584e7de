/**
 * The `hdcontext` settings section as the daemon is given it. No `vscode` import.
 *
 * VS Code answers `workspace/configuration` with every contributed key, defaults included, so the
 * daemon would report each value's source as "settings" even when the user never set it. This
 * extension answers instead with the keys the user did set (user, workspace or folder settings),
 * as dotted keys (PROTOCOL.md accepts both forms): the daemon's own defaults then apply, and
 * `history/settings` says "default" for them. The extension's own keys (chat.wrapVendors,
 * server.pythonPath, summarizer.vscodeModel, trace.server) are not sent.
 */

export type SettingScope = 'window' | 'machine';

/** The daemon's keys (PROTOCOL.md's table), with the scope package.json gives them. */
export const DAEMON_SETTINGS: ReadonlyArray<{ key: string; scope: SettingScope }> = [
    { key: 'compression.strategy', scope: 'window' },
    { key: 'compression.threshold', scope: 'window' },
    { key: 'compression.preserveThreshold', scope: 'window' },
    { key: 'compression.topPreserveThreshold', scope: 'window' },
    { key: 'compression.density.readWritePruning', scope: 'window' },
    { key: 'compression.density.fileDedupe', scope: 'window' },
    { key: 'compression.density.recencyPruning', scope: 'window' },
    { key: 'compression.density.recencyRetention', scope: 'window' },
    { key: 'compression.density.schedule', scope: 'window' },
    { key: 'compression.density.keepLatestView', scope: 'window' },
    { key: 'compression.density.masking', scope: 'window' },
    { key: 'compression.density.maskRetention', scope: 'window' },
    { key: 'contextLimit', scope: 'window' },
    { key: 'tools.read', scope: 'window' },
    { key: 'tools.write', scope: 'window' },
    { key: 'tools.shell', scope: 'window' },
    { key: 'watch.enabled', scope: 'window' },
    { key: 'cache.pricing', scope: 'window' },
    { key: 'cache.ttlSeconds', scope: 'window' },
    { key: 'cache.readCost', scope: 'window' },
    { key: 'cache.writeCost', scope: 'window' },
    { key: 'cache.maxBreakpoints', scope: 'window' },
    { key: 'cache.ttl', scope: 'window' },
    // It spends the user's money on calls they did not make: their own settings only, never a
    // workspace's.
    { key: 'cache.refresh', scope: 'machine' },
    { key: 'cache.refreshIdleSeconds', scope: 'window' },
    { key: 'cache.prices', scope: 'window' },
    // Where the conversation may be sent: user settings only, never a workspace's.
    { key: 'summarizer.provider', scope: 'machine' },
    { key: 'summarizer.baseUrl', scope: 'machine' },
    { key: 'summarizer.model', scope: 'machine' },
    { key: 'summarizer.apiKeyEnv', scope: 'machine' },
];

/**
 * Daemon additions not yet in the contract: keys of DAEMON_SETTINGS that the daemon accepts and
 * PROTOCOL.md's table does not list. The tests hold DAEMON_SETTINGS to that table plus these, both
 * ways, so that a change of either side is noticed (a key PROTOCOL.md comes to list leaves this list).
 */
export const DAEMON_ADDITIONS: readonly string[] = [
    // Since the daemon's shell-command parsing.
    'tools.shell',
    // Since its price table and the prompt cache's lifetime.
    'cache.refreshIdleSeconds',
    'cache.prices',
];

/** The extension's own keys (not sent to the daemon). */
export const EXTENSION_SETTINGS: ReadonlyArray<{ key: string; scope: SettingScope }> = [
    { key: 'chat.wrapVendors', scope: 'window' },
    { key: 'proxy.enabled', scope: 'machine' },
    { key: 'proxy.port', scope: 'machine' },
    { key: 'proxy.anthropicUpstream', scope: 'machine' },
    { key: 'proxy.openaiUpstream', scope: 'machine' },
    { key: 'proxy.contextLimit', scope: 'machine' },
    { key: 'server.pythonPath', scope: 'machine' },
    { key: 'summarizer.vscodeModel', scope: 'window' },
    { key: 'trace.server', scope: 'window' },
];

/** Keys whose empty string means "unset". */
const EMPTY_IS_UNSET = new Set(['summarizer.baseUrl', 'summarizer.model', 'summarizer.apiKeyEnv']);

/** What `WorkspaceConfiguration.inspect` returns, as far as this module needs it. */
export interface Inspected {
    globalValue?: unknown;
    workspaceValue?: unknown;
    workspaceFolderValue?: unknown;
}

export interface ConfigurationReader {
    /** The effective value (VS Code's resolution, which honours each key's scope). */
    get(key: string): unknown;
    inspect(key: string): Inspected | undefined;
}

/** Whether the user set this key somewhere its scope allows. */
export function isSetByUser(inspected: Inspected | undefined, scope: SettingScope): boolean {
    if (inspected === undefined) {
        return false;
    }
    if (scope === 'machine') {
        return inspected.globalValue !== undefined;
    }
    return (
        inspected.globalValue !== undefined ||
        inspected.workspaceValue !== undefined ||
        inspected.workspaceFolderValue !== undefined
    );
}

/** The section to send: dotted keys the user set, with their effective values. */
export function daemonSection(config: ConfigurationReader): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const { key, scope } of DAEMON_SETTINGS) {
        if (!isSetByUser(config.inspect(key), scope)) {
            continue;
        }
        const value = config.get(key);
        if (value === undefined || value === null) {
            continue;
        }
        if (EMPTY_IS_UNSET.has(key) && value === '') {
            continue;
        }
        out[key] = value;
    }
    return out;
}
