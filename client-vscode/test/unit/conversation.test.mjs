import assert from 'node:assert/strict';
import { test } from 'node:test';
import { load } from './load.mjs';

const c = load('conversationProtocol.ts');
const a = load('historyArgs.ts');

const turn = (n, over = {}) => ({
  turnId: `codex:t:${n}`, sessionId: 'codex:t', source: 'codex', cwd: '/w/shop', ts: Date.UTC(2026, 11, 1, 10, n),
  userText: `prompt ${n}`, replyText: 'Use:\n\n```sh\nmake test\n```', toolNames: ['apply_patch'], jsonlPath: '/h/r.jsonl',
  line: 10 + n, resumeCommand: 'codex resume t', truncated: false, files: [{ path: '/w/shop/src/cart.py', action: 'edit' }], ...over,
});
const session = (turns, over = {}) => ({
  sessionId: 'codex:t', source: 'codex', cwd: '/w/shop', jsonlPath: '/h/r.jsonl', startedAt: Date.UTC(2026, 11, 1, 10, 0),
  turnCount: 10, firstPosition: 3, resumeCommand: 'codex resume t', turns, ...over,
});

test('conversationState renders each turn as Markdown blocks, marks the hit and says which part is shown', () => {
  const turns = [turn(3), turn(4), turn(5)];
  const state = c.conversationState(session(turns), turns, 3, 'codex:t:4', 7);
  assert.equal(state.agent, 'Codex');
  assert.equal(state.folder, 'shop');
  assert.equal(state.from, 4);
  assert.equal(state.to, 6);
  assert.equal(state.moreBefore, true);
  assert.equal(state.moreAfter, true);
  assert.equal(state.canContinueInPi, true);
  assert.deepEqual(state.turns.map((t) => t.hit), [false, true, false]);
  assert.deepEqual(state.turns.map((t) => t.position), [4, 5, 6]);
  assert.deepEqual(state.turns[1].reply[1], { kind: 'code', language: 'sh', text: 'make test' });
  assert.deepEqual(state.turns[1].files, [{ path: '/w/shop/src/cart.py', action: 'edit' }]);
});

test('conversationState: a whole session has nothing more; only Codex offers Continue in Pi', () => {
  const turns = [turn(0)];
  const state = c.conversationState(session(turns, { source: 'claude', turnCount: 1, firstPosition: 0, resumeCommand: null }), turns, 0, undefined, 1);
  assert.equal(state.moreBefore, false);
  assert.equal(state.moreAfter, false);
  assert.equal(state.canContinueInPi, false);
  assert.equal(state.canCopyResume, false);
  assert.deepEqual(state.turns.map((t) => t.hit), [false]);
});

test('parseConversationMessage accepts only the known messages with valid fields', () => {
  assert.deepEqual(c.parseConversationMessage({ type: 'openRaw', index: 2 }), { type: 'openRaw', index: 2 });
  assert.deepEqual(c.parseConversationMessage({ type: 'more', direction: 'later', extra: 1 }), { type: 'more', direction: 'later' });
  assert.deepEqual(c.parseConversationMessage({ type: 'moreText', index: 0 }), { type: 'moreText', index: 0 });
  for (const bad of [null, 'ready', { type: 'openRaw', index: -1 }, { type: 'openRaw', index: 1.5 }, { type: 'whole' }, { type: 'moreText' },
    { type: 'moreText', index: '1' }, { type: 'more', direction: 'up' }, { type: 'run', command: 'rm' }]) {
    assert.equal(c.parseConversationMessage(bad), undefined, JSON.stringify(bad));
  }
});

test('parseOpenConversationArgs takes {sessionId, turnId?} (also as the first of an argument list)', () => {
  assert.deepEqual(a.parseOpenConversationArgs({ sessionId: 's', turnId: 't' }), { sessionId: 's', turnId: 't' });
  assert.deepEqual(a.parseOpenConversationArgs([{ sessionId: 's' }]), { sessionId: 's' });
  for (const bad of [undefined, 's', {}, { sessionId: '' }, { sessionId: 1 }, { sessionId: 's', turnId: 5 }, { sessionId: 'x'.repeat(1025) }]) {
    assert.equal(a.parseOpenConversationArgs(bad), undefined, JSON.stringify(bad));
  }
});

test('Continue in Pi: only a codex:<uuid> id; a tree row or {sessionId} gives it', () => {
  const id = 'codex:01a22bd8-8c34-7e91-9282-79d4f5ad872f';
  assert.equal(a.isCodexSessionId(id), true);
  for (const bad of ['codex:not-a-uuid', `${id} --yolo`, 'pi:01a22bd8-8c34-7e91-9282-79d4f5ad872f', 5]) {
    assert.equal(a.isCodexSessionId(bad), false, String(bad));
  }
  assert.equal(a.sessionIdArgument({ sessionId: id }), id);
  assert.equal(a.sessionIdArgument([{ kind: 'session', session: { sessionId: id } }]), id);
  assert.equal(a.sessionIdArgument(id), id);
});

test('piResumeCommand quotes the path for a POSIX shell and refuses a relative path or control characters', () => {
  assert.equal(a.piResumeCommand('/h/.pi/agent/sessions/--w--/s.jsonl'), 'pi --session /h/.pi/agent/sessions/--w--/s.jsonl');
  assert.equal(a.piResumeCommand("/h/it's here/s.jsonl"), `pi --session '/h/it'"'"'s here/s.jsonl'`);
  assert.equal(a.piResumeCommand('/h/$(rm -rf ~)/s.jsonl'), "pi --session '/h/$(rm -rf ~)/s.jsonl'");
  assert.equal(a.piResumeCommand('-rf/s.jsonl'), undefined);
  assert.equal(a.piResumeCommand('/h/a\nrm -rf ~'), undefined);
  assert.equal(a.piResumeCommand('/h/a\u001b]0;x\u0007'), undefined);
});

test('migratedResume: the server command of a written session; for one migrated before, the quoted Pi file', () => {
  const report = (over) => ({ folder: '/w', dryRun: false, migrated: [], skipped: [], issues: [], ...over });
  const resume = { program: 'pi', args: ['--session', '/p/s.jsonl'], cwd: '/w' };
  assert.deepEqual(a.migratedResume(report({ migrated: [{ codexSessionId: 'x', codexPath: '/c', piPath: '/p/s.jsonl', messages: 4, resumeCommand: 'pi --session /p/s.jsonl' }] })),
    { command: 'pi --session /p/s.jsonl', resume, fresh: true });
  // the server refused the path: no command made here either
  assert.deepEqual(a.migratedResume(report({ migrated: [{ codexSessionId: 'x', codexPath: '/c', piPath: '/p/s.jsonl', messages: 4, resumeCommand: null }] })),
    { command: undefined, resume: undefined, fresh: true });
  assert.deepEqual(a.migratedResume(report({ skipped: [{ codexSessionId: 'x', piPath: '/p/s.jsonl', reason: 'already migrated' }] })),
    { command: 'pi --session /p/s.jsonl', resume, fresh: false, reason: 'already migrated' });
  assert.deepEqual(a.migratedResume(report({ skipped: [{ codexSessionId: 'x', piPath: '/p/s.jsonl', reason: 'no user or assistant text to migrate' }] })),
    { command: undefined, resume: undefined, fresh: false, reason: 'no user or assistant text to migrate' });
  assert.equal(a.migratedResume(report({})), undefined);
});
