// The memory of each line as shown in the editor (src/lineHistoryRender.ts): relative time, the annotation, the
// hover and the quick pick; every stored value escaped and bounded.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { load } from './load.mjs';

const h = load('lineHistoryRender.ts');
const args = load('historyArgs.ts');
const conv = load('conversationProtocol.ts');

const NOW = Date.UTC(2026, 11, 6, 12, 0, 0);
const ago = (ms) => new Date(NOW - ms).toISOString();
const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;

const attribution = (over = {}) => ({
  line: 11, confidence: 'exact', sessionId: 'claude:s1', turnId: 'claude:s1:u1', source: 'claude',
  timestamp: ago(3 * DAY), prompt: 'make the cache TTL configurable', tool: 'Edit', toolCallId: 'toolu_01', editStartLine: 10,
  ...over,
});

test('relativeTime says how long ago, in words people read', () => {
  const cases = [
    [10_000, 'just now'], [-30_000, 'just now'], [60_000, 'a minute ago'], [5 * MIN, '5 minutes ago'],
    [60 * MIN, 'an hour ago'], [3 * HOUR, '3 hours ago'], [26 * HOUR, 'yesterday'], [3 * DAY, '3 days ago'],
    [36 * HOUR + 1, '2 days ago'], [30 * DAY, 'a month ago'], [100 * DAY, '3 months ago'], [400 * DAY, 'a year ago'],
    [3 * 365 * DAY, '3 years ago'],
  ];
  for (const [ms, words] of cases) {
    assert.equal(h.relativeTime(ago(ms), NOW), words, `${ms} ms`);
  }
  assert.equal(h.relativeTime('not a date', NOW), '');
  assert.equal(h.relativeTime('', NOW), '');
});

test('the annotation is "agent · time · prompt" on one bounded plain line', () => {
  assert.equal(h.annotationText(attribution(), NOW), 'Claude Code · 3 days ago · make the cache TTL configurable');
  assert.equal(h.annotationText(attribution({ source: 'codex', prompt: '' }), NOW), 'Codex · 3 days ago');
  assert.equal(h.annotationText(attribution({ source: 'pi', timestamp: 'garbage' }), NOW), 'Pi · make the cache TTL configurable');
  const long = h.annotationText(attribution({ prompt: 'word '.repeat(500) }), NOW);
  assert.ok(long.length <= 'Claude Code · 3 days ago · '.length + h.ANNOTATION_PROMPT_CHARS + 1, long);
  assert.ok(long.endsWith('…'));
  // an unknown source is shown as it is, but bounded and on one line
  assert.equal(h.annotationText(attribution({ source: 'x'.repeat(100) }), NOW).split(' · ')[0].length, 41);
});

test('the annotation keeps a hostile prompt on one line: no control, escape or bidirectional characters', () => {
  const text = h.annotationText(attribution({ prompt: 'fix\u001b[31m red\nsecond line\r\u202eevil\u2066 $(alert) [x](command:rm)' }), NOW);
  const bad = [...text].filter((c) => {
    const cp = c.codePointAt(0);
    return cp < 0x20 || cp === 0x7f || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
  });
  assert.deepEqual(bad, [], text);
  assert.ok(text.includes('fix [31m red second line evil'), text);
  // "$(" and "](" are broken by a zero-width space, so that no icon or link can form where text is rendered
  assert.ok(text.includes('$\u200b(alert)') && text.includes(']\u200b(command:rm)'), text);
});

test('selectedLines: the cursor line, a selection, one ending at the start of a line, reversed, bounded', () => {
  const p = (line, character) => ({ line, character });
  assert.deepEqual(h.selectedLines(p(4, 3), p(4, 3)), { first: 4, last: 4 });
  assert.deepEqual(h.selectedLines(p(2, 1), p(5, 7)), { first: 2, last: 5 });
  assert.deepEqual(h.selectedLines(p(2, 0), p(5, 0)), { first: 2, last: 4 });
  assert.deepEqual(h.selectedLines(p(5, 0), p(2, 0)), { first: 2, last: 4 }, 'a selection made upwards');
  assert.deepEqual(h.selectedLines(p(5, 3), p(2, 0)), { first: 2, last: 5 });
  assert.deepEqual(h.selectedLines(p(0, 0), p(1_000_000, 0)), { first: 0, last: h.MAX_LINES - 1 });
});

test('lineRanges counts from 1 and joins runs', () => {
  assert.equal(h.lineRanges([11]), 'line 12');
  assert.equal(h.lineRanges([2, 3, 4, 8, 10, 9, 3]), 'lines 3–5, 9–11');
});

test('groupByConversation: conversations newest first, their turns newest first, lines in order', () => {
  const lines = [
    attribution({ line: 1, sessionId: 'pi:a', turnId: 'pi:a:1', source: 'pi', timestamp: ago(5 * DAY), tool: 'edit', confidence: 'line' }),
    attribution({ line: 7 }),
    attribution({ line: 5, confidence: 'moved' }),
    attribution({ line: 3, sessionId: 'pi:a', turnId: 'pi:a:2', source: 'pi', timestamp: ago(1 * DAY), tool: 'write' }),
    attribution({ line: 6 }),
  ];
  const groups = h.groupByConversation(lines);
  assert.deepEqual(groups.map((g) => g.sessionId), ['pi:a', 'claude:s1']);
  assert.deepEqual(groups[0].turns.map((t) => t.turnId), ['pi:a:2', 'pi:a:1']);
  assert.deepEqual(groups[1].turns[0].lines, [5, 6, 7]);
  assert.deepEqual(groups[1].turns[0].confidences, ['exact', 'moved']);
  assert.deepEqual(groups[1].turns[0].tools, ['Edit']);
});

test('the hover: "written by Claude Code · 3 days ago · *prompt*", escaped, with only the links given', () => {
  const md = h.lineHoverMarkdown([attribution()], NOW, (i) => `command:pimem.lineHistory.open?id${i}`);
  assert.ok(md.includes('written by **Claude Code** · 3 days ago · *make the cache TTL configurable*'), md);
  assert.ok(md.includes('line 12 · Edit · exact match · [Open conversation](command:pimem.lineHistory.open?id0)'), md);
  const hostile = h.lineHoverMarkdown(
    [attribution({ prompt: '<img src=x onerror=alert(1)> [run](command:workbench.action.terminal.new) `x` *y* ![i](http://e/x.png)\n# h', tool: '[t](command:evil)', source: '**bold**' })],
    NOW,
    () => 'command:pimem.lineHistory.open?ok',
  );
  // every link in the Markdown is the one given; nothing from the transcript forms a tag, link, image or code
  const links = [...hostile.matchAll(/(?<!\\)\]\(([^)]*)\)/g)].map((m) => m[1]);
  assert.deepEqual(links, ['command:pimem.lineHistory.open?ok']);
  assert.doesNotMatch(hostile, /(?<!\\)[<`]/);
  assert.ok(hostile.includes('\\<img src\\=x onerror\\=alert\\(1\\)\\>'), hostile);
  assert.ok(!hostile.includes('\n# h'), 'no block starts inside a prompt');
});

test('the hover lists at most HOVER_TURNS turns, newest first, and says how many more', () => {
  const lines = Array.from({ length: 8 }, (_, i) =>
    attribution({ line: i, sessionId: `claude:s${i}`, turnId: `claude:s${i}:u`, timestamp: ago((i + 1) * HOUR), prompt: `prompt ${i}` }));
  const opened = [];
  const md = h.lineHoverMarkdown(lines, NOW, (i) => {
    opened.push(i);
    return `command:x?${i}`;
  });
  assert.deepEqual(opened, [0, 1, 2, 3, 4]);
  assert.deepEqual(h.hoverTurns(lines).map((t) => t.turnId), ['claude:s0:u', 'claude:s1:u', 'claude:s2:u', 'claude:s3:u', 'claude:s4:u']);
  assert.ok(md.includes('and 3 more turns'), md);
  assert.ok(md.indexOf('prompt 0') < md.indexOf('prompt 4'));
});

test('the quick pick: a separator per conversation, then its turns as plain one-line rows', () => {
  const rows = h.pickRows([
    attribution({ line: 2 }),
    attribution({ line: 9, sessionId: 'codex:c', turnId: 'codex:c:1', source: 'codex', timestamp: ago(10 * MIN), tool: 'apply_patch', prompt: 'round to cents $(flame)\nplease' }),
  ], NOW);
  assert.deepEqual(rows.map((r) => [r.kind, r.label]), [
    ['separator', 'Codex conversation'],
    ['turn', 'round to cents $\u200b(flame) please'],
    ['separator', 'Claude Code conversation'],
    ['turn', 'make the cache TTL configurable'],
  ]);
  assert.equal(rows[1].description, 'Codex · 10 minutes ago');
  assert.equal(rows[1].detail, 'line 10 · apply_patch · exact match');
  assert.equal(rows[1].turn.turnId, 'codex:c:1');
  assert.equal(h.pickRows([attribution({ prompt: '' })], NOW)[1].label, '(no prompt)');
});

test('openConversation arguments keep the edit to highlight only with a turn, and drop malformed marks', () => {
  assert.deepEqual(args.parseOpenConversationArgs([{ sessionId: 's', turnId: 't', file: '/w/a.py', tool: 'Edit' }]),
    { sessionId: 's', turnId: 't', file: '/w/a.py', tool: 'Edit' });
  assert.deepEqual(args.parseOpenConversationArgs({ sessionId: 's', file: '/w/a.py' }), { sessionId: 's' });
  assert.deepEqual(args.parseOpenConversationArgs({ sessionId: 's', turnId: 't', file: 42, tool: 'x'.repeat(201) }), { sessionId: 's', turnId: 't' });
});

test('the conversation marks the edit (file and tool) in the hit turn only', () => {
  const turn = (turnId, files, toolNames) => ({
    turnId, sessionId: 's', source: 'claude', cwd: '/w', ts: NOW, userText: 'u', replyText: 'r', toolNames, jsonlPath: '/j', line: 1,
    resumeCommand: null, truncated: false, files,
  });
  const session = { sessionId: 's', source: 'claude', cwd: '/w', jsonlPath: '/j', startedAt: NOW, turnCount: 2, firstPosition: 0, resumeCommand: null, turns: [] };
  const files = [{ path: '/w/a.py', action: 'edit' }, { path: '/w/b.py', action: 'edit' }, { path: '/w/a.py', action: 'read' }];
  const turns = [turn('t1', files, ['Read', 'Edit']), turn('t2', files, ['Edit'])];
  const state = conv.conversationState(session, turns, 0, 't1', 1, new Map(), { file: '/w/a.py', tool: 'Edit' });
  assert.deepEqual(state.turns[0].files.map((f) => f.edited === true), [true, false, false]);
  assert.equal(state.turns[0].editTool, 'Edit');
  assert.deepEqual(state.turns[1].files.map((f) => f.edited === true), [false, false, false]);
  assert.equal(state.turns[1].editTool, undefined);
  // opened without an edit: nothing marked
  const plain = conv.conversationState(session, turns, 0, 't1', 1);
  assert.deepEqual(plain.turns[0].files.map((f) => f.edited === true), [false, false, false]);
});
