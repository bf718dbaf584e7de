// Imported first by every glue test: `require('vscode')` returns the fake from here on.
import { installVscodeMock } from './vscodeMock';

installVscodeMock();
