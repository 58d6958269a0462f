import assert from 'node:assert/strict';
import { test } from 'node:test';
import { load } from './load.mjs';

const r = load('render.ts');

const row = (over = {}) => ({
  turnId: 'claude:s:u', sessionId: 'claude:s', source: 'claude', cwd: '/tmp/pimem-demo/webshop',
  ts: Date.UTC(2026, 10, 30, 9, 45), userText: 'Why does the flamingo bug happen?', replyText: 'Because the Flamingo cache…',
  toolNames: [], hits: 3, jsonlPath: '/h/.claude/projects/x.jsonl', line: 4, resumeCommand: 'claude --resume s',
  matched: ['flamingo'], truncated: false, ...over,
});

test('highlightSegments marks case-insensitive matches and gives the text back', () => {
  const segs = r.highlightSegments('The FLAMINGO bug, flamingos', ['flamingo']);
  assert.deepEqual(segs, [
    { text: 'The ', hit: false }, { text: 'FLAMINGO', hit: true }, { text: ' bug, ', hit: false },
    { text: 'flamingo', hit: true }, { text: 's', hit: false },
  ]);
  assert.equal(segs.map((s) => s.text).join(''), 'The FLAMINGO bug, flamingos');
});

test('highlightSegments merges overlapping entities and ignores blank ones', () => {
  assert.deepEqual(r.highlightSegments('zeta_ratelimit!', ['zeta', 'ratelimit', ' ', '']), [
    { text: 'zeta', hit: true }, { text: '_', hit: false }, { text: 'ratelimit', hit: true }, { text: '!', hit: false },
  ]);
  assert.deepEqual(r.highlightSegments('abcd', ['abc', 'bcd']), [{ text: 'abcd', hit: true }]);
  assert.deepEqual(r.highlightSegments('', ['x']), []);
});

test('highlightSegments keeps offsets when lower-casing changes length, and handles CJK and astral text', () => {
  // "İ".toLowerCase() is two code units long
  const segs = r.highlightSegments('İİ flamingo 🦩 缓存失效', ['FLAMINGO', '缓存', '🦩']);
  assert.equal(segs.map((s) => s.text).join(''), 'İİ flamingo 🦩 缓存失效');
  assert.deepEqual(segs.filter((s) => s.hit).map((s) => s.text), ['flamingo', '🦩', '缓存']);
});

test('escapeMarkdown neutralises links, images, HTML, autolinks and code', () => {
  const evil = '<img src=x onerror=alert(1)> [click](command:workbench.action.terminal.new) ![i](http://x/y.png) https://evil.example `code` *em*\n# heading';
  const out = r.escapeMarkdown(evil);
  assert.ok(!out.includes('\n'));
  for (const ch of '<>[]()`*#!:') {
    const unescaped = new RegExp(`(^|[^\\\\])\\${ch}`);
    assert.ok(!unescaped.test(out), `unescaped ${ch} in ${out}`);
  }
  // the visible characters stay (CommonMark renders "\<" as "<"), spaces included
  assert.equal(out.replace(/\\(.)/g, '$1'), evil.replace(/\s+/g, ' '));
  assert.equal(r.escapeMarkdown(' a '), ' a ');
});

test('hoverMarkdown escapes every transcript field and has exactly one link', () => {
  const md = r.hoverMarkdown(['flamingo'], [
    row({ userText: 'A product description containing <img src=x onerror=alert(1)> and [x](command:evil) flamingo' }),
    row({ source: 'codex', cwd: '/tmp/[x](http://e)', replyText: '' }),
  ], { showResultsUri: 'command:pimem.showResults?%5B%5D' });
  assert.match(md, /and \\\[x\\\]\\\(command\\:evil\\\) \*\*flamingo\*\*/);
  assert.match(r.highlightMarkdown('Why does the flamingo bug\nhappen?', ['flamingo'], 100), /^Why does the \*\*flamingo\*\* bug happen\\\?$/);
  assert.match(md, /\\<img src\\=x onerror\\=alert\\\(1\\\)\\>/);
  const links = [...md.matchAll(/(?<!\\)\]\((?!\\)/g)];
  assert.equal(links.length, 1, md);
  assert.ok(md.endsWith('[Open in the Pi Memory panel](command:pimem.showResults?%5B%5D)'));
  assert.match(md, /\*\*Claude Code\*\*/);
  assert.match(md, /\*\*Codex\*\*/);
  assert.match(md, /\*Reply:\* —/);
});

test('searchedTerms: the terms a text recall chose, with the estimates; the entities of an entity recall', () => {
  const fromText = { entities: ['timezone', 'flaky'], terms: [{ term: 'timezone', turns: 3, weight: 17 }, { term: 'flaky', turns: 5105, weight: 3 }] };
  assert.deepEqual(r.searchedTerms(fromText), [{ term: 'timezone', turns: 3, weight: 17 }, { term: 'flaky', turns: 5105, weight: 3 }]);
  assert.deepEqual(r.searchedTerms({ entities: ['flamingo', 'cache'] }), [
    { term: 'flamingo', turns: null, weight: null }, { term: 'cache', turns: null, weight: null },
  ]);
  assert.equal(r.searchedMarkdown(r.searchedTerms(fromText)), 'searched: timezone (about 3 turns), flaky (about 5,105 turns)');
  assert.equal(r.searchedMarkdown(r.searchedTerms({ entities: ['flamingo'] })), 'searched: flamingo');
  assert.equal(r.turnsEstimate(1), 'about 1 turn');
});

test('hoverMarkdown says what was searched and what each turn matched, escaped, still with one link', () => {
  const searched = [{ term: 'zeta_ratelimit', turns: 12, weight: 9 }, { term: '[x](command:evil)', turns: 1, weight: 20 }];
  const md = r.hoverMarkdown(['zeta_ratelimit', '[x](command:evil)'], [
    row({ userText: 'What does zeta_ratelimit do?', matched: ['zeta_ratelimit', '[x](command:evil)'] }),
    row({ matched: [] }),
  ], { showResultsUri: 'command:pimem.showResults?%5B%5D', searched });
  assert.match(md, /^\*\*Pi Memory\*\* — past turns about zeta\\_ratelimit, \\\[x\\\]\\\(command\\:evil\\\) {2}\nsearched: zeta\\_ratelimit \(about 12 turns\), \\\[x\\\]\\\(command\\:evil\\\) \(about 1 turn\)\n/);
  assert.match(md, /score 3 · matched: zeta\\_ratelimit, \\\[x\\\]\\\(command\\:evil\\\) {2}\n\*You:\*/);
  assert.equal((md.match(/matched:/g) ?? []).length, 1, 'a row without matched terms says nothing');
  assert.equal([...md.matchAll(/(?<!\\)\]\((?!\\)/g)].length, 1, md);
  // without `searched`, the entities are what was searched
  assert.match(r.hoverMarkdown(['flamingo'], [row()], { showResultsUri: 'command:x' }), /\nsearched: flamingo\n/);
});

test('truncate, oneLine, folderName, sourceLabel, formatDate', () => {
  assert.equal(r.truncate('abcdef', 3), 'abc…');
  assert.equal(r.truncate('abc', 3), 'abc');
  assert.equal(r.truncate('🦩🦩🦩', 2), '🦩🦩…');
  assert.equal(r.oneLine(' a\n\n b\tc '), 'a b c');
  assert.equal(r.folderName('/tmp/pimem-demo/中文项目/'), '中文项目');
  assert.equal(r.folderName('C:\\work\\x'), 'x');
  assert.equal(r.sourceLabel('pi'), 'Pi');
  assert.equal(r.sourceLabel('other'), 'other');
  assert.equal(r.sourceLabel('toString'), 'toString');
  assert.match(r.formatDate(Date.UTC(2026, 10, 30, 9, 45)), /^2026-11-30 \d\d:\d\d$/);
  assert.equal(r.formatDate(Number.NaN), '');
});

// How VS Code finds links in a notification message (vs/base/common/linkedText.ts) and icons in status bar and
// quick pick text (vs/base/common/iconLabels.ts): neither has an escape syntax.
const NOTIFICATION_LINK = /\[([^\]]+)\]\(((?:https?:\/\/|command:|file:)[^)\s]+)(?: (["'])(.+?)(\3))?\)/gi;
const ICON = /\$\([a-z0-9-]+(?:~[a-z0-9-]*)?\)/gi;

test('plainText leaves no link or icon that VS Code would render, and looks the same', () => {
  const evil = [
    'Copied: claude --resume [run](command:workbench.action.terminal.sendSequence?%7B%22text%22%3A%22rm%22%7D)',
    '[x](https://evil.example "title") [f](file:///etc/passwd) [C](COMMAND:pimem.restart)',
    '$(warning) $(sync~spin) [[nested](command:a)](command:b)',
  ].join(' ');
  assert.ok(evil.match(NOTIFICATION_LINK).length >= 4 && evil.match(ICON).length === 2, 'the sample has links and icons');
  const out = r.plainText(evil, 10_000);
  assert.equal(out.match(NOTIFICATION_LINK), null, out);
  assert.equal(out.match(ICON), null, out);
  assert.equal(out.replaceAll('\u200b', ''), evil, 'only zero-width spaces were added');
  assert.equal(r.plainText('/home/me/.pi/agent/memory.db'), '/home/me/.pi/agent/memory.db');
  assert.equal(r.plainText('costs $(5) [a] (b)'), 'costs $\u200b(5) [a] (b)');
});

test('plainText makes one line without control or direction-override characters, cut to a length', () => {
  assert.equal(r.plainText('a\nb\r\n\tc\u0007d\u001b[2Je\u2028f'), 'a b c d [2Je f');
  assert.equal(r.plainText('abc\u202edcba.exe'), 'abcdcba.exe');
  assert.equal(r.plainText('x'.repeat(400)).length, 301); // 300 code points and "…"
  assert.equal(r.plainText('🦩🦩🦩', 2), '🦩🦩…');
  // a cut right after "]" cannot leave a link behind either
  assert.equal(r.plainText('[a](command:x)', 3).match(NOTIFICATION_LINK), null);
});

test('highlightTerms: a row highlights the terms it matched, not every searched one', () => {
  assert.deepEqual(r.highlightTerms(row({ matched: ['timezone'] }), ['timezone', 'flaky']), ['timezone']);
  assert.deepEqual(r.highlightTerms(row({ matched: [] }), ['timezone', 'flaky']), ['timezone', 'flaky']);
  assert.deepEqual(r.highlightTerms({}, ['flamingo']), ['flamingo']);
  // in the hover: "flaky" is in the text but this turn was not found by it, so it stays plain
  const md = r.hoverMarkdown(['timezone', 'flaky'], [
    row({ userText: 'the flaky timezone test', replyText: 'pin the timezone', matched: ['timezone'] }),
  ], { showResultsUri: 'command:x' });
  assert.match(md, /\*You:\* the flaky \*\*timezone\*\* test {2}\n\*Reply:\* pin the \*\*timezone\*\*/);
});
