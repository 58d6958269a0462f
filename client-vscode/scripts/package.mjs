// Builds the platform-specific packages of the extension: for each target, bundled/ is filled for it
// (scripts/bundle-server.mjs) and `vsce package --target <target>` writes dist/pimem-<target>.vsix. The
// package of this machine's target is also copied to dist/pimem.vsix (what the e2e suite installs).
// Run `npm run build` first (dist/extension.js, dist/webview.js are the same for every target).
//
//   node scripts/package.mjs                 this machine's target
//   node scripts/package.mjs --all           every target in TARGETS
//   node scripts/package.mjs --target darwin-arm64 [--target …]
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TARGETS, bundle, hostTarget } from './bundle-server.mjs';

const client = join(dirname(fileURLToPath(import.meta.url)), '..');
const vsce = join(client, 'node_modules', '.bin', process.platform === 'win32' ? 'vsce.cmd' : 'vsce');

export function vsixPath(target) {
  return join(client, 'dist', `pimem-${target}.vsix`);
}

export function packageTarget(target) {
  if (!existsSync(join(client, 'dist', 'extension.js'))) {
    throw new Error('dist/extension.js is missing: run `npm run build` first');
  }
  bundle(target);
  execFileSync(vsce, ['package', '--no-dependencies', '--target', target, '-o', vsixPath(target)], { cwd: client, stdio: 'inherit' });
  return vsixPath(target);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const named = args.flatMap((arg, i) => (arg === '--target' ? [args[i + 1]] : []));
  const host = hostTarget();
  const targets = args.includes('--all') ? Object.keys(TARGETS) : named.length > 0 ? named : [host];
  // the host's last, so that bundled/ is left as this machine runs it (a development checkout's launcher uses it)
  targets.sort((a, b) => Number(a === host) - Number(b === host));
  for (const target of targets) {
    const vsix = packageTarget(target);
    if (target === host) {
      copyFileSync(vsix, join(client, 'dist', 'pimem.vsix'));
      console.log(`copied ${vsix} to dist/pimem.vsix`);
    }
  }
}
