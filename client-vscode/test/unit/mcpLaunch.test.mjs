import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { test } from 'node:test';
import { load } from './load.mjs';

const m = load('mcpLaunch.ts');
const spec = JSON.parse(readFileSync(new URL('../../src/serverLaunch.json', import.meta.url), 'utf8'));
const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));

test('the MCP provider id is the one package.json contributes', () => {
  assert.deepEqual(manifest.contributes.mcpServerDefinitionProviders.map((p) => p.id), [m.MCP_PROVIDER_ID]);
});

test('scriptInterpreter reads the interpreter of a pip console script, and nothing else', () => {
  assert.equal(m.scriptInterpreter('#!/home/me/.venv/bin/python\nimport sys\n'), '/home/me/.venv/bin/python');
  assert.equal(m.scriptInterpreter('#!/usr/bin/python3.12\r\n# -*- coding: utf-8 -*-\r\n'), '/usr/bin/python3.12');
  // pip's form for interpreter paths with spaces or over the kernel's #! limit
  assert.equal(m.scriptInterpreter('#!/bin/sh\n\'\'\'exec\' "/home/me/my env/bin/python3" "$0" "$@"\n\' \'\'\'\n'), '/home/me/my env/bin/python3');
  assert.equal(m.scriptInterpreter('#!/bin/sh\n\'\'\'exec\' /opt/very/long/bin/python "$0" "$@"\n\' \'\'\'\n'), '/opt/very/long/bin/python');
  for (const head of [
    '#!/usr/bin/env python3\n', // which python depends on PATH when it runs
    '#!/bin/sh\nexec /tmp/anything "$@"\n',
    '#!/bin/bash\n',
    '#!python\n',
    '#!/usr/bin/python3 -E\n',
    '#!/usr/bin/node\n',
    '\x7fELF\x02\x01',
    '',
  ]) {
    assert.equal(m.scriptInterpreter(head), undefined, JSON.stringify(head));
  }
});

test('mcpServerLaunch: pimem mcp under the server\'s isolation flags, from the extension folder, with the settings', () => {
  assert.deepEqual(m.mcpServerLaunch('/ext', '/venv/bin/python', { dbPath: undefined, redact: true }), {
    command: '/venv/bin/python',
    args: ['-I', '-u', '-m', 'pimem', 'mcp'],
    cwd: '/ext',
  });
  assert.deepEqual(m.mcpServerLaunch('/ext', '/venv/bin/python', { dbPath: '/data/memory.db', redact: false }).args, [
    ...spec.flags, '-m', 'pimem', 'mcp', '--db', '/data/memory.db', '--no-redact',
  ]);
  assert.match(m.MCP_PROBE, /find_spec/);
  assert.doesNotMatch(m.MCP_PROBE, /import mcp/, 'the probe does not import the SDK');
});

/** A fake file system layout: a workspace, a user's bin, a venv. */
function layout() {
  const base = realpathSync(mkdtempSync(join(tmpdir(), 'pimem-mcp-')));
  const dirs = { base, workspace: join(base, 'repo'), userBin: join(base, 'home', 'bin'), venv: join(base, 'venv', 'bin') };
  for (const d of [dirs.workspace, dirs.userBin, dirs.venv, join(dirs.workspace, 'bin'), join(dirs.workspace, '.venv', 'bin')]) {
    mkdirSync(d, { recursive: true });
  }
  const script = (file, head, mode = 0o755) => {
    writeFileSync(file, `${head}\nimport sys\nfrom pimem.cli import main\nsys.exit(main())\n`);
    chmodSync(file, mode);
    return file;
  };
  return { ...dirs, script };
}

test('findPimem takes the first pimem on PATH that lives, with its interpreter, outside the workspace', () => {
  const l = layout();
  const python = join(l.venv, 'python');
  const good = l.script(join(l.venv, 'pimem'), `#!${python}`);
  const env = (...dirs) => dirs.join(delimiter);
  assert.deepEqual(m.findPimem(env(l.userBin, l.venv), [l.workspace]), { ok: true, executable: good, python, skipped: [] });

  // a pimem in a PATH entry inside the workspace is passed over (a shell would run it; this extension does not)
  l.script(join(l.workspace, 'bin', 'pimem'), `#!${python}`);
  assert.deepEqual(m.findPimem(env(join(l.workspace, 'bin'), l.venv), [l.workspace]), {
    ok: true, executable: good, python, skipped: [`${join(l.workspace, 'bin', 'pimem')} (inside the workspace)`],
  });

  // relative entries name whatever the current directory is
  assert.equal(m.findPimem(env('.', 'bin', '', l.venv), [l.workspace]).executable, good);

  // a user's symlink into the workspace, or a script whose interpreter is the workspace's venv
  symlinkSync(join(l.workspace, 'bin', 'pimem'), join(l.userBin, 'pimem'));
  const venvInside = l.script(join(l.base, 'venv', 'bin', 'other'), `#!${join(l.workspace, '.venv', 'bin', 'python')}`);
  const onlyBad = m.findPimem(env(l.userBin), [l.workspace]);
  assert.equal(onlyBad.ok, false);
  assert.equal(onlyBad.reason, 'no pimem on PATH');
  assert.deepEqual(onlyBad.skipped, [`${join(l.userBin, 'pimem')} (inside the workspace)`]);
  const elsewhere = join(l.base, 'elsewhere');
  mkdirSync(elsewhere);
  symlinkSync(venvInside, join(elsewhere, 'pimem'));
  assert.deepEqual(m.findPimem(env(elsewhere), [l.workspace]).skipped, [
    `${join(elsewhere, 'pimem')} (its interpreter ${join(l.workspace, '.venv', 'bin', 'python')} is inside the workspace)`,
  ]);
});

test('findPimem skips what is not an executable Python console script, and says why', () => {
  const l = layout();
  const a = join(l.base, 'a');
  const b = join(l.base, 'b');
  const c = join(l.base, 'c');
  for (const d of [a, b, c]) {
    mkdirSync(d);
  }
  l.script(join(a, 'pimem'), '#!/usr/bin/env python3');
  l.script(join(b, 'pimem'), `#!${join(l.venv, 'python')}`, 0o644); // not executable: not a candidate at all
  mkdirSync(join(c, 'pimem')); // a directory
  const result = m.findPimem([a, b, c].join(delimiter), []);
  assert.deepEqual(result, { ok: false, reason: 'no pimem on PATH', skipped: [`${join(a, 'pimem')} (not a Python console script)`] });
  assert.deepEqual(m.findPimem('', []), { ok: false, reason: 'no pimem on PATH', skipped: [] });
  assert.equal(m.findPimem(a, [], m.nodeFileSystem, 'win32').ok, false);
});
