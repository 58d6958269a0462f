import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { load } from './load.mjs';

const l = load('launch.ts');
const spec = JSON.parse(readFileSync(new URL('../../src/serverLaunch.json', import.meta.url), 'utf8'));
const trusted = { trusted: true, folders: ['/work/repo', '/work/other'] };
const untrusted = { trusted: false, folders: ['/work/repo'] };

test('the server runs isolated from the extension folder, as serverLaunch.json says', () => {
  assert.deepEqual(l.serverLaunch('/ext', '/usr/bin/python3'), {
    command: '/usr/bin/python3',
    args: ['-I', '-u', '/ext/launcher/launch.py', 'serve'],
    cwd: '/ext',
  });
  assert.deepEqual(l.serverLaunch('/ext', 'py').args, [...spec.flags, join('/ext', spec.script), ...spec.args]);
  // the interpreter check: same flags, same working directory
  assert.deepEqual(l.checkLaunch('/ext', 'python3', 'print(1)'), { command: 'python3', args: ['-I', '-u', '-c', 'print(1)'], cwd: '/ext' });
  // the launcher the JSON names ships with the extension
  assert.ok(readFileSync(new URL(`../../${spec.script}`, import.meta.url), 'utf8').includes('sys.flags.isolated'));
});

test('pimem.python: names and absolute paths as they are, relative paths only in a trusted workspace', () => {
  assert.deepEqual(l.configuredInterpreter('python3.12', untrusted), { ok: true, path: 'python3.12' });
  assert.deepEqual(l.configuredInterpreter('/opt/py/bin/python', untrusted), { ok: true, path: '/opt/py/bin/python' });
  assert.deepEqual(l.configuredInterpreter('.venv/bin/python', trusted), { ok: true, path: '/work/repo/.venv/bin/python' });
  const refused = l.configuredInterpreter('.venv/bin/python', untrusted);
  assert.equal(refused.ok, false);
  assert.match(refused.problem, /relative path/);
  assert.equal(l.configuredInterpreter('./python', { trusted: true, folders: [] }).ok, false);
});

test('pimem.dbPath: absolute as it is, relative against the first folder of a trusted workspace only', () => {
  assert.deepEqual(l.configuredDbPath('/data/memory.db', untrusted), { ok: true, path: '/data/memory.db' });
  assert.deepEqual(l.configuredDbPath('.pimem/memory.db', trusted), { ok: true, path: '/work/repo/.pimem/memory.db' });
  assert.equal(l.configuredDbPath('memory.db', untrusted).ok, false);
});

test('isInsideAny compares paths as given and with symlinks resolved', () => {
  const base = realpathSync(mkdtempSync(join(tmpdir(), 'pimem-unit-inside-')));
  const repo = join(base, 'repo');
  const outside = join(base, 'outside');
  mkdirSync(join(repo, '.venv', 'bin'), { recursive: true });
  mkdirSync(join(outside, 'bin'), { recursive: true });
  writeFileSync(join(outside, 'bin', 'python3'), '');
  writeFileSync(join(repo, 'python-real'), '');
  // a venv's python links out of the workspace: still the workspace's interpreter
  symlinkSync(join(outside, 'bin', 'python3'), join(repo, '.venv', 'bin', 'python'));
  // a link outside the workspace that points into it
  symlinkSync(join(repo, 'python-real'), join(outside, 'bin', 'python-link'));
  // the workspace opened through a symlinked path
  symlinkSync(repo, join(base, 'repo-link'));
  const real = (p) => realpathSync.native(p);
  assert.equal(l.isInsideAny(join(repo, '.venv', 'bin', 'python'), [repo], real), true);
  assert.equal(l.isInsideAny(join(outside, 'bin', 'python-link'), [repo], real), true);
  assert.equal(l.isInsideAny(join(repo, '.venv', 'bin', 'python'), [join(base, 'repo-link')], real), true);
  assert.equal(l.isInsideAny(join(repo, 'missing', 'python'), [repo], real), true);
  assert.equal(l.isInsideAny(join(outside, 'bin', 'python3'), [repo], real), false);
  assert.equal(l.isInsideAny('/usr/bin/python3', [repo], real), false);
  // a sibling whose name starts like the folder is not inside it, a file named "..x" inside it is
  assert.equal(l.isInsideAny(`${repo}-other/python`, [repo], real), false);
  assert.equal(l.isInsideAny(join(repo, '..x'), [repo], real), true);
  assert.equal(l.isInsideAny(join(repo, '..', 'outside', 'bin', 'python3'), [repo], real), false);
  assert.equal(l.isInsideAny(join(repo, 'python-real'), [], real), false);
});
