// Loads a TypeScript module of src/ (one without a `vscode` import) for node --test, through esbuild.
import * as esbuild from 'esbuild';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const require = createRequire(import.meta.url);

export function load(relativePath) {
  const out = esbuild.buildSync({
    entryPoints: [new URL(`../../src/${relativePath}`, import.meta.url).pathname],
    bundle: true,
    platform: 'node',
    format: 'cjs',
    write: false,
    external: ['vscode', 'vscode-languageclient/node'],
  });
  const file = join(mkdtempSync(join(tmpdir(), 'pimem-unit-')), 'module.cjs');
  writeFileSync(file, out.outputFiles[0].text);
  return require(file);
}
