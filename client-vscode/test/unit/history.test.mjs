import assert from 'node:assert/strict';
import { test } from 'node:test';
import { load } from './load.mjs';

const h = load('history.ts');

const at = (y, m, d, hh = 12, mm = 0) => new Date(y, m - 1, d, hh, mm).getTime();
const NOW = at(2026, 12, 2, 9, 0);
const session = (over) => ({
  sessionId: 'claude:s', source: 'claude', cwd: '/w/shop', jsonlPath: '/h/s.jsonl', startedAt: at(2026, 12, 2, 8),
  lastTs: at(2026, 12, 2, 8, 30), turnCount: 3, firstPrompt: 'Fix the cart', truncated: false, resumeCommand: null, ...over,
});

test('groupSessions by day: newest day first, Today and Yesterday named, the server order kept inside a day', () => {
  const sessions = [
    session({ sessionId: 'a', lastTs: at(2026, 12, 2, 8, 30) }),
    session({ sessionId: 'b', lastTs: at(2026, 12, 2, 7, 0), source: 'pi' }),
    session({ sessionId: 'c', lastTs: at(2026, 12, 1, 23, 0) }),
    session({ sessionId: 'd', lastTs: at(2026, 11, 20, 10, 0), source: 'codex' }),
  ];
  const groups = h.groupSessions(sessions, 'day', NOW);
  assert.deepEqual(groups.map((g) => g.label), ['Today', 'Yesterday', '2026-11-20']);
  assert.deepEqual(groups.map((g) => g.sessions.map((s) => s.sessionId)), [['a', 'b'], ['c'], ['d']]);
});

test('groupSessions by agent: Claude Code, Codex, Pi, each newest first', () => {
  const sessions = [
    session({ sessionId: 'p1', source: 'pi' }), session({ sessionId: 'c1', source: 'claude' }),
    session({ sessionId: 'x1', source: 'codex' }), session({ sessionId: 'p2', source: 'pi' }),
  ];
  const groups = h.groupSessions(sessions, 'agent', NOW);
  assert.deepEqual(groups.map((g) => g.label), ['Claude Code', 'Codex', 'Pi']);
  assert.deepEqual(groups[2].sessions.map((s) => s.sessionId), ['p1', 'p2']);
});

test('labels: the first prompt on one line, cut, and safe from icon and link syntax', () => {
  assert.equal(h.promptLabel('Fix\n\nthe   cart'), 'Fix the cart');
  assert.equal(h.promptLabel(''), '(no prompt)');
  const long = h.promptLabel('word '.repeat(100));
  assert.ok([...long].length <= 91 && long.endsWith('…'), long);
  const hostile = h.promptLabel('$(bug) [x](command:evil) \u202egnp.exe');
  assert.ok(!hostile.includes('$(') && !hostile.includes(']('), hostile);
  assert.ok(!hostile.includes('\u202e'));
});

test('sessionDescription says the agent when grouped by day, the date when grouped by agent', () => {
  const s = session({ turnCount: 1 });
  assert.equal(h.sessionDescription(s, 'day'), 'Claude Code · 08:30 · 1 turn');
  assert.equal(h.sessionDescription(s, 'agent'), '2026-12-02 08:30 · 1 turn');
});

test('fileLensTitle counts the conversations that edited the file, else those that read it', () => {
  assert.equal(h.fileLensTitle({ total: 4, edited: 3 }), '3 past conversations edited this file');
  assert.equal(h.fileLensTitle({ total: 1, edited: 1 }), '1 past conversation edited this file');
  assert.equal(h.fileLensTitle({ total: 2, edited: 0 }), '2 past conversations read this file');
  assert.equal(h.fileLensTitle({ total: 0, edited: 0 }), undefined);
});

test('file-history rows: what the session did to the file, in words', () => {
  const fs = { sessionId: 'pi:x', source: 'pi', cwd: '/w/shop', jsonlPath: '/h/x.jsonl', actions: ['read', 'edit'], turns: 2,
    lastTs: at(2026, 12, 1, 10, 5), turnId: 'pi:x:1', prompt: 'Make the cart total round', truncated: false, resumeCommand: null };
  assert.equal(h.fileSessionDescription(fs), 'Pi · read, edited · 2026-12-01 10:05 · 2 turns');
  assert.equal(h.fileHistoryMessage('cart.py', { total: 4, edited: 3, sessions: [fs] }),
    'cart.py: 4 past conversations touched it, 3 edited it (newest 1 shown).');
  assert.equal(h.turnDescription({ ts: at(2026, 12, 1, 10, 5), toolNames: ['Edit', 'Bash'] }), '10:05 · Edit, Bash');
});
