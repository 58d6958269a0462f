// "Continue in Pi" (issue 20, item 6): Pi runs as the terminal's own process with the session file as its argument;
// no client code types stored data (a cwd, a path, a command line) into the user's shell.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { load } from './load.mjs';

const a = load('historyArgs.ts');
const r = load('resumeArgs.ts');

// A Codex session's cwd and the Pi file named after it: what cmd.exe splits at `&`, PowerShell ends a quoted
// string at `’`, and a POSIX shell expands `$(…)` in.
const folder = "/w/a & calc.exe ’; $(touch pwned) `id` 'x'";
const piPath = `/h/.pi/agent/sessions/--w-a-&-calc.exe-’--/s'"; rm -rf ~.jsonl`;
const report = (over) => ({ folder, dryRun: false, migrated: [], skipped: [], issues: [], ...over });

test('Continue in Pi: the terminal runs pi itself, the session file one argument and the folder its cwd, as they are', () => {
  for (const rep of [
    report({ migrated: [{ codexSessionId: 'codex:x', codexPath: '/c', piPath, messages: 3, resumeCommand: 'pi --session …' }] }),
    report({ migrated: [{ codexSessionId: 'codex:x', codexPath: '/c', piPath, messages: 3 }] }), // an older server
    report({ skipped: [{ codexSessionId: 'codex:x', piPath, reason: 'already migrated' }] }),
  ]) {
    const { resume } = a.migratedResume(rep);
    assert.deepEqual(resume, { program: 'pi', args: ['--session', piPath], cwd: folder });
    const plan = r.planResume(resume, '/usr/local/bin/pi', (p) => p === folder);
    assert.deepEqual(plan, {
      kind: 'terminal',
      options: { name: plan.options.name, shellPath: '/usr/local/bin/pi', shellArgs: ['--session', piPath], cwd: folder },
    });
    assert.match(plan.options.name, /^Pi: /);
  }
});

test('Continue in Pi: a folder gone starts pi in the default folder; no pi on PATH, a batch file or a bad path: no terminal', () => {
  const resume = r.piResume(piPath, folder);
  const plan = r.planResume(resume, '/usr/bin/pi', () => false);
  assert.equal(plan.kind, 'terminal');
  assert.equal('cwd' in plan.options, false);
  assert.deepEqual(r.planResume(resume, undefined, () => true), { kind: 'notOnPath' });
  // a .cmd is read by cmd.exe: the path's `&` and quotes would not reach pi intact
  assert.deepEqual(r.planResume(resume, 'C:\\npm\\pi.cmd', () => true), { kind: 'batchFile' });
  for (const bad of ['relative/s.jsonl', '/h/a\nrm -rf ~', '/h/a\u001b]0;x\u0007', '']) {
    assert.equal(r.piResume(bad, folder), undefined, JSON.stringify(bad));
    assert.equal(a.migratedResume(report({ skipped: [{ codexSessionId: 'codex:x', piPath: bad, reason: 'already migrated' }] })).resume, undefined);
  }
  // a folder that is no usable path is left out, the session still resumes
  assert.deepEqual(r.piResume('/p/s.jsonl', 'x\ny'), { program: 'pi', args: ['--session', '/p/s.jsonl'], cwd: undefined });
  // the server refused the path: nothing to run, nothing to copy
  const refused = a.migratedResume(report({ migrated: [{ codexSessionId: 'codex:x', codexPath: '/c', piPath: '/p/s.jsonl', messages: 3, resumeCommand: null }] }));
  assert.deepEqual([refused.resume, refused.command], [undefined, undefined]);
});

test('no client code types text into a terminal (Terminal.sendText): every terminal runs its program with arguments', () => {
  const src = new URL('../../src/', import.meta.url).pathname;
  const files = readdirSync(src, { recursive: true }).filter((f) => String(f).endsWith('.ts'));
  assert.ok(files.length > 20, 'the client sources were found');
  // code only: comments may explain why there is none
  const code = (f) => readFileSync(join(src, String(f)), 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
  const typed = files.filter((f) => /\bsendText\b/.test(code(f)));
  assert.deepEqual(typed, []);
  // and the terminals there are made from options that name their program
  const terminals = files.filter((f) => /createTerminal\(/.test(code(f)));
  assert.deepEqual(terminals, ['rowActions.ts']);
  assert.match(readFileSync(join(src, 'rowActions.ts'), 'utf8'), /createTerminal\(plan\.options\)/);
});
