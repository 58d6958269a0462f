// Bundles the extension (Node, CommonJS) and the webview scripts (browser, IIFE: results panel, sidebar search) into dist/.
import * as esbuild from 'esbuild';

const production = !process.argv.includes('--dev');
const common = { bundle: true, minify: production, sourcemap: production ? false : 'inline', logLevel: 'warning' };

await Promise.all([
  esbuild.build({
    ...common,
    entryPoints: ['src/extension.ts'],
    outfile: 'dist/extension.js',
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    external: ['vscode'],
  }),
  esbuild.build({
    ...common,
    entryPoints: ['src/webview/main.ts'],
    outfile: 'dist/webview.js',
    platform: 'browser',
    format: 'iife',
    target: 'es2022',
  }),
  esbuild.build({
    ...common,
    entryPoints: ['src/webview/conversation.ts'],
    outfile: 'dist/conversation.js',
    platform: 'browser',
    format: 'iife',
    target: 'es2022',
  }),
  esbuild.build({
    ...common,
    entryPoints: ['src/webview/search.ts'],
    outfile: 'dist/search.js',
    platform: 'browser',
    format: 'iife',
    target: 'es2022',
  }),
]);
console.log('built dist/extension.js, dist/webview.js, dist/conversation.js and dist/search.js');
