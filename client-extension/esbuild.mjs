// Bundles the extension and its runtime dependencies (vscode-languageclient, vscode-jsonrpc)
// into out/extension.js, so the .vsix needs no node_modules (vsce --no-dependencies).
import * as esbuild from 'esbuild';

await esbuild.build({
    entryPoints: ['src/extension.ts'],
    bundle: true,
    outfile: 'out/extension.js',
    external: ['vscode'],
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    sourcemap: true,
    sourcesContent: false,
    minify: process.argv.includes('--minify'),
    logLevel: 'warning',
});
