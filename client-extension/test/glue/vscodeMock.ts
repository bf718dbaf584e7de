/**
 * A small fake of the `vscode` module: what the extension's glue uses, recording what it does.
 * `installVscodeMock()` makes `require('vscode')` return it (see register.ts).
 */


import Module from 'node:module';

type Listener<T> = (e: T) => unknown;

export class Disposable {
    constructor(private readonly fn: () => unknown = () => undefined) {}
    static from(...items: { dispose(): unknown }[]): Disposable {
        return new Disposable(() => items.forEach((i) => i.dispose()));
    }
    dispose(): void {
        this.fn();
    }
}

export class EventEmitter<T> {
    private listeners: Listener<T>[] = [];
    readonly event = (listener: Listener<T>): Disposable => {
        this.listeners.push(listener);
        return new Disposable(() => (this.listeners = this.listeners.filter((l) => l !== listener)));
    };
    fire(e: T): void {
        [...this.listeners].forEach((l) => l(e));
    }
    dispose(): void {
        this.listeners = [];
    }
}

export class ThemeColor {
    constructor(readonly id: string) {}
}

export enum StatusBarAlignment {
    Left = 1,
    Right = 2,
}

export enum QuickPickItemKind {
    Separator = -1,
    Default = 0,
}

export enum ProgressLocation {
    SourceControl = 1,
    Window = 10,
    Notification = 15,
}

export class CancellationError extends Error {
    constructor() {
        super('Canceled');
        this.name = 'Canceled';
    }
}

export interface FakeToken {
    readonly isCancellationRequested: boolean;
    onCancellationRequested(listener: Listener<void>): Disposable;
}

export class CancellationTokenSource {
    private readonly emitter = new EventEmitter<void>();
    private cancelled = false;
    readonly token: FakeToken;
    constructor() {
        const isCancelled = () => this.cancelled;
        this.token = {
            get isCancellationRequested() {
                return isCancelled();
            },
            onCancellationRequested: this.emitter.event,
        };
    }
    cancel(): void {
        if (!this.cancelled) {
            this.cancelled = true;
            this.emitter.fire();
        }
    }
    dispose(): void {
        this.emitter.dispose();
    }
}

export class Uri {
    private constructor(
        readonly scheme: string,
        readonly fsPath: string,
    ) {}
    static file(p: string): Uri {
        return new Uri('file', p);
    }
    toString(): string {
        return `${this.scheme}://${this.fsPath}`;
    }
}

export enum LanguageModelChatMessageRole {
    User = 1,
    Assistant = 2,
}

export class LanguageModelTextPart {
    constructor(readonly value: string) {}
}
export class LanguageModelToolCallPart {
    constructor(
        readonly callId: string,
        readonly name: string,
        readonly input: object,
    ) {}
}
export class LanguageModelToolResultPart {
    constructor(
        readonly callId: string,
        readonly content: unknown[],
    ) {}
}
export class LanguageModelDataPart {
    constructor(
        readonly data: Uint8Array,
        readonly mimeType: string,
    ) {}
}
export class LanguageModelPromptTsxPart {
    constructor(readonly value: unknown) {}
}
export class LanguageModelToolResult {
    constructor(readonly content: unknown[]) {}
}
export class ThemeIcon {
    constructor(readonly id: string) {}
}

export class LanguageModelChatMessage {
    constructor(
        readonly role: LanguageModelChatMessageRole | 'user' | 'assistant',
        readonly content: string | unknown[],
        readonly name?: string,
    ) {}
    static User(content: string): LanguageModelChatMessage {
        return new LanguageModelChatMessage('user', content);
    }
    static Assistant(content: string): LanguageModelChatMessage {
        return new LanguageModelChatMessage('assistant', content);
    }
}

export class MarkdownString {
    isTrusted: boolean | { readonly enabledCommands: readonly string[] } | undefined;
    constructor(
        public value = '',
        public supportThemeIcons = false,
    ) {}
    toString(): string {
        return this.value;
    }
}

export enum ViewColumn {
    Active = -1,
    Beside = -2,
    One = 1,
}

/** A webview panel: the html it was given, the messages posted to it. */
export class FakeWebviewPanel {
    readonly htmls: string[] = [];
    readonly posted: unknown[] = [];
    disposed = false;
    revealed = 0;
    private readonly disposeListeners: Array<() => unknown> = [];
    readonly webview: { cspSource: string; html: string; postMessage(message: unknown): Promise<boolean> };
    constructor(
        readonly viewType: string,
        readonly title: string,
        readonly column: unknown,
        readonly options: Record<string, unknown>,
    ) {
        const htmls = this.htmls;
        const posted = this.posted;
        this.webview = {
            cspSource: 'vscode-webview://fake',
            set html(value: string) {
                htmls.push(value);
            },
            get html(): string {
                return htmls[htmls.length - 1] ?? '';
            },
            postMessage(message: unknown) {
                posted.push(message);
                return Promise.resolve(true);
            },
        };
    }
    reveal(): void {
        this.revealed++;
    }
    onDidDispose(listener: () => unknown): Disposable {
        this.disposeListeners.push(listener);
        return new Disposable();
    }
    dispose(): void {
        if (!this.disposed) {
            this.disposed = true;
            this.disposeListeners.forEach((l) => l());
        }
    }
}

export class FakeStatusBarItem {
    text = '';
    tooltip: unknown = undefined;
    command: unknown = undefined;
    name: string | undefined;
    backgroundColor: ThemeColor | undefined;
    accessibilityInformation: unknown;
    visible = false;
    disposed = false;
    constructor(
        readonly id: string,
        readonly alignment: StatusBarAlignment,
        readonly priority: number,
    ) {}
    show(): void {
        this.visible = true;
    }
    hide(): void {
        this.visible = false;
    }
    dispose(): void {
        this.disposed = true;
    }
}

export interface FakeModel {
    vendor: string;
    id: string;
    family: string;
    name: string;
    sendRequest(messages: LanguageModelChatMessage[], options: unknown, token: any): Promise<{ text: AsyncIterable<string> }>;
}

/** What the glue did, and what the fake editor answers. */
export const state = {
    statusItems: [] as FakeStatusBarItem[],
    panels: [] as FakeWebviewPanel[],
    errors: [] as string[],
    warnings: [] as string[],
    infos: [] as string[],
    output: [] as string[],
    config: {} as Record<string, unknown>,
    /** Keys the user "set" (inspect's globalValue). */
    userSet: new Set<string>(),
    commands: new Map<string, (...args: any[]) => unknown>(),
    executed: [] as Array<{ command: string; args: unknown[] }>,
    models: [] as FakeModel[],
    selectorsAsked: [] as unknown[],
    /** Vendors whose selectChatModels rejects (a provider failing to list). */
    failingVendors: new Set<string>(),
    /** What the extension registered with vscode.lm and vscode.chat. */
    chatProviders: new Map<string, unknown>(),
    tools: new Map<string, unknown>(),
    participants: new Map<string, { handler: unknown; iconPath?: unknown }>(),
    extensions: new Map<string, any>(),
    trusted: true,
    /** Answers the next quick picks / input boxes / messages in order (undefined = dismissed). */
    quickPickAnswers: [] as Array<(items: any[]) => any>,
    inputAnswers: [] as Array<string | undefined>,
    messageAnswers: [] as Array<string | undefined>,
    openedDocuments: [] as Array<{ language?: string; content?: string; uri?: Uri }>,
    configListeners: [] as Array<Listener<{ affectsConfiguration(s: string): boolean }>>,
    clipboard: '',
    /** Each withProgress: its options and the messages it reported. */
    progress: [] as Array<{ options: { title?: string; location?: number; cancellable?: boolean }; messages: string[] }>,
    /** When set, the next withProgress is cancelled (its Cancel button) after its first report. */
    cancelProgress: false,
};

export function resetState(): void {
    state.statusItems = [];
    state.panels = [];
    state.errors = [];
    state.warnings = [];
    state.infos = [];
    state.output = [];
    state.config = {};
    state.userSet = new Set();
    state.commands = new Map();
    state.executed = [];
    state.models = [];
    state.selectorsAsked = [];
    state.failingVendors = new Set();
    state.chatProviders = new Map();
    state.tools = new Map();
    state.participants = new Map();
    state.extensions = new Map();
    state.trusted = true;
    state.quickPickAnswers = [];
    state.inputAnswers = [];
    state.messageAnswers = [];
    state.openedDocuments = [];
    state.configListeners = [];
    state.clipboard = '';
    state.progress = [];
    state.cancelProgress = false;
}

function message(list: 'errors' | 'warnings' | 'infos') {
    return (text: string, ...rest: unknown[]): Promise<string | undefined> => {
        state[list].push(text);
        void rest;
        return Promise.resolve(state.messageAnswers.shift());
    };
}

function configuration(section?: string) {
    const full = (key: string) => (section ? `${section}.${key}` : key);
    return {
        get<T>(key: string, dflt?: T): T | undefined {
            const k = full(key);
            return (k in state.config ? state.config[k] : dflt) as T | undefined;
        },
        has(key: string): boolean {
            return full(key) in state.config;
        },
        inspect(key: string) {
            const k = full(key);
            return state.userSet.has(k) ? { key: k, globalValue: state.config[k] } : { key: k };
        },
        update(): Promise<void> {
            return Promise.resolve();
        },
    };
}

export const vscodeMock = {
    Disposable,
    EventEmitter,
    ThemeColor,
    StatusBarAlignment,
    QuickPickItemKind,
    ProgressLocation,
    CancellationError,
    CancellationTokenSource,
    Uri,
    ThemeIcon,
    MarkdownString,
    ViewColumn,
    LanguageModelChatMessage,
    LanguageModelChatMessageRole,
    LanguageModelTextPart,
    LanguageModelToolCallPart,
    LanguageModelToolResultPart,
    LanguageModelDataPart,
    LanguageModelPromptTsxPart,
    LanguageModelToolResult,
    window: {
        createWebviewPanel(viewType: string, title: string, column: unknown, options: Record<string, unknown>) {
            const panel = new FakeWebviewPanel(viewType, title, column, options);
            state.panels.push(panel);
            return panel;
        },
        createStatusBarItem(id: string, alignment: StatusBarAlignment, priority: number) {
            const item = new FakeStatusBarItem(id, alignment, priority);
            state.statusItems.push(item);
            return item;
        },
        createOutputChannel(name: string) {
            return {
                name,
                append: (s: string) => state.output.push(s),
                appendLine: (s: string) => state.output.push(s),
                show: () => undefined,
                hide: () => undefined,
                clear: () => undefined,
                replace: () => undefined,
                dispose: () => undefined,
            };
        },
        showErrorMessage: message('errors'),
        showWarningMessage: message('warnings'),
        showInformationMessage: message('infos'),
        showQuickPick(items: any[] | Promise<any[]>) {
            return Promise.resolve(items).then((list) => {
                const answer = state.quickPickAnswers.shift();
                return answer ? answer(list) : undefined;
            });
        },
        showInputBox() {
            return Promise.resolve(state.inputAnswers.shift());
        },
        showTextDocument(doc: unknown) {
            return Promise.resolve({ document: doc });
        },
        withProgress<T>(options: { title?: string }, task: (progress: unknown, token: unknown) => Promise<T>): Promise<T> {
            const record = { options, messages: [] as string[] };
            state.progress.push(record);
            const source = new CancellationTokenSource();
            const cancel = state.cancelProgress;
            state.cancelProgress = false;
            const report = (p: { message?: string }) => {
                record.messages.push(p.message ?? '');
                if (cancel) {
                    setTimeout(() => source.cancel(), 200);
                }
            };
            return task({ report }, source.token);
        },
    },
    workspace: {
        getConfiguration: configuration,
        get isTrusted() {
            return state.trusted;
        },
        workspaceFolders: undefined as unknown,
        onDidChangeConfiguration(listener: Listener<{ affectsConfiguration(s: string): boolean }>) {
            state.configListeners.push(listener);
            return new Disposable(() => (state.configListeners = state.configListeners.filter((l) => l !== listener)));
        },
        openTextDocument(arg: { language?: string; content?: string } | Uri) {
            const doc = arg instanceof Uri ? { uri: arg } : arg;
            state.openedDocuments.push(doc);
            return Promise.resolve(doc);
        },
    },
    commands: {
        registerCommand(id: string, fn: (...args: any[]) => unknown) {
            state.commands.set(id, fn);
            return new Disposable(() => state.commands.delete(id));
        },
        executeCommand(command: string, ...args: unknown[]) {
            state.executed.push({ command, args });
            const fn = state.commands.get(command);
            return Promise.resolve(fn ? fn(...args) : undefined);
        },
    },
    extensions: {
        getExtension(id: string) {
            return state.extensions.get(id);
        },
    },
    env: {
        clipboard: {
            writeText(text: string) {
                state.clipboard = text;
                return Promise.resolve();
            },
        },
    },
    chat: {
        createChatParticipant(id: string, handler: unknown) {
            const participant = { handler, iconPath: undefined as unknown, dispose: () => state.participants.delete(id) };
            state.participants.set(id, participant);
            return participant;
        },
    },
    lm: {
        tools: [] as Array<{ name: string; description: string; inputSchema?: object }>,
        onDidChangeChatModels: new EventEmitter<void>().event,
        registerLanguageModelChatProvider(vendor: string, provider: unknown) {
            state.chatProviders.set(vendor, provider);
            return new Disposable(() => state.chatProviders.delete(vendor));
        },
        registerTool(name: string, tool: unknown) {
            state.tools.set(name, tool);
            return new Disposable(() => state.tools.delete(name));
        },
        selectChatModels(selector: { vendor?: string; id?: string; family?: string } = {}) {
            state.selectorsAsked.push(selector);
            if (selector.vendor !== undefined && state.failingVendors.has(selector.vendor)) {
                return Promise.reject(new Error(`${selector.vendor} cannot list its models now`));
            }
            return Promise.resolve(
                state.models.filter(
                    (m) =>
                        (selector.vendor === undefined || m.vendor === selector.vendor) &&
                        (selector.id === undefined || m.id === selector.id) &&
                        (selector.family === undefined || m.family === selector.family),
                ),
            );
        },
    },
};

/** Fires onDidChangeConfiguration for the given full keys. */
export function changeConfiguration(keys: string[]): void {
    const event = { affectsConfiguration: (s: string) => keys.some((k) => k === s || k.startsWith(s + '.')) };
    state.configListeners.forEach((l) => l(event));
}

/**
 * vscode-languageclient extends vscode's classes when it loads, so the glue tests replace it too:
 * the enums the extension uses (same values as the real ones) and a LanguageClient that must not
 * be constructed (the tests pass a factory).
 */
export const languageClientMock = {
    ErrorAction: { Continue: 1, Shutdown: 2 },
    CloseAction: { DoNotRestart: 1, Restart: 2 },
    TransportKind: { stdio: 0, ipc: 1, pipe: 2, socket: 3 },
    LanguageClient: class {
        constructor() {
            throw new Error('the glue tests pass a client factory');
        }
    },
};

let installed = false;
export function installVscodeMock(): void {
    if (installed) {
        return;
    }
    installed = true;
    const anyModule = Module as unknown as { _load: (request: string, parent: unknown, isMain: boolean) => unknown };
    const original = anyModule._load;
    anyModule._load = function (request: string, parent: unknown, isMain: boolean) {
        if (request === 'vscode') {
            return vscodeMock;
        }
        if (request === 'vscode-languageclient/node') {
            return languageClientMock;
        }
        return original.call(this, request, parent, isMain);
    };
}
