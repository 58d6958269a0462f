// Stored text that is crafted or huge (issue 20, item 7): the Markdown reader and the other readers of transcript text
// in the client take time linear in the text, and a long turn reaches the conversation webview in pieces. Times are
// compared with a plain text of the same size in the same run (a ratio, the best of a few runs), never absolute.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { load } from './load.mjs';

const { parseMarkdown } = load('markdown.ts');
const c = load('conversationProtocol.ts');
const r = load('render.ts');
const s = load('snippet.ts');
const p = load('panelProtocol.ts');

const N = 64 * 1024;
/** Best time of `runs` calls, in ms. */
function best(f, runs = 5) {
  let min = Infinity;
  for (let k = 0; k < runs; k++) {
    const t = performance.now();
    f();
    min = Math.min(min, performance.now() - t);
  }
  return min;
}
// Ordinary Markdown prose of the same size: paragraphs, a list, inline code and emphasis.
const plain = (n) => 'Some *prose* with `code` and **bold**, then a list:\n\n- one item\n- two items\n\n'.repeat(Math.ceil(n / 80)).slice(0, n);

// Each of these took seconds at 64 KB with the regexes the reader had (quadratic backtracking or rescans).
const adversarial = {
  'a fence line ending in a backtick': (n) => '```' + 'a'.repeat(n) + '`',
  'that line in a list item': (n) => '- x\n  ```' + 'a'.repeat(n) + '`',
  'a heading with a long run of spaces': (n) => '# a' + ' '.repeat(n) + 'x',
  'a list item with a line separator': (n) => '- ' + ' '.repeat(n) + '\u2028',
  'a quote with a line separator': (n) => '>' + ' '.repeat(n) + '\u2028',
  'emphasis over escaped backslashes': (n) => '*' + '\\\\*'.repeat(Math.floor(n / 3)) + 'a*',
  'backtick runs of every length': (n) => Array.from({ length: Math.floor(Math.sqrt(2 * n)) }, (_, k) => '`'.repeat(k + 1)).join(' '),
  'unclosed emphasis openers': (n) => '_a _'.repeat(Math.floor(n / 4)),
  'doubled asterisks': (n) => '*a' + '**'.repeat(Math.floor(n / 2)),
  'a rule-like line': (n) => '- '.repeat(Math.floor(n / 2)) + 'x',
  'nested quotes': (n) => '> '.repeat(Math.floor(n / 2)) + 'x',
};

test('the Markdown reader takes time linear in crafted lines (a ratio to plain prose of the same size)', () => {
  const reference = plain(N);
  parseMarkdown(reference); // warm up
  const base = Math.max(best(() => parseMarkdown(reference)), 0.5);
  for (const [name, make] of Object.entries(adversarial)) {
    const text = make(N);
    const ratio = best(() => parseMarkdown(text)) / base;
    assert.ok(ratio < 40, `${name}: ${ratio.toFixed(1)} times plain prose of the same size`);
  }
});

test('the reader keeps every character of a crafted line', () => {
  assert.deepEqual(parseMarkdown('```' + 'a'.repeat(100) + '`'), [{ kind: 'paragraph', inlines: [{ kind: 'text', text: '```' + 'a'.repeat(100) + '`' }] }]);
  assert.deepEqual(parseMarkdown('```js\n' + 'x'.repeat(N) + '\n```'), [{ kind: 'code', language: 'js', text: 'x'.repeat(N) }]);
  const [item] = parseMarkdown('- a\u2028b');
  assert.equal(item.kind, 'list');
  assert.deepEqual(parseMarkdown('### ###'), [{ kind: 'heading', level: 3, inlines: [] }]);
  assert.deepEqual(parseMarkdown('# title ##'), [{ kind: 'heading', level: 1, inlines: [{ kind: 'text', text: 'title' }] }]);
  const escaped = '*' + '\\\\*'.repeat(50) + 'a*';
  assert.deepEqual(parseMarkdown(escaped), [{ kind: 'paragraph', inlines: [{ kind: 'em', children: [{ kind: 'text', text: '\\*'.repeat(50) + 'a' }] }] }]);
});

/** Heap in use after a full collection, in bytes. */
function heapUsed() {
  setFlagsFromString('--expose-gc');
  runInNewContext('gc')();
  return process.memoryUsage().heapUsed;
}

const turn = (replyText, over = {}) => ({
  turnId: 'codex:t:1', sessionId: 'codex:t', source: 'codex', cwd: '/w', ts: 0, userText: 'why?', replyText,
  toolNames: [], jsonlPath: '/h/r.jsonl', line: 1, resumeCommand: null, truncated: false, files: [], ...over,
});
const session = (turns) => ({ sessionId: 'codex:t', source: 'codex', cwd: '/w', jsonlPath: '/h/r.jsonl', startedAt: 0, turnCount: 1, firstPosition: 0, resumeCommand: null, turns });

test('a whole turn of 50 MB is shown in pieces: a render reads and posts one piece, in time and memory like a 64 KB turn', () => {
  const huge = turn('```\n' + 'x'.repeat(50 * 1024 * 1024) + '`\n');
  const small = turn('```\n' + 'x'.repeat(c.PIECE_CHARS) + '`\n');
  const state = (t, shown) => c.conversationState(session([t]), [t], 0, undefined, 1, shown);
  state(small);
  const base = Math.max(best(() => state(small)), 0.5);
  const ratio = best(() => state(huge), 3) / base;
  assert.ok(ratio < 10, `a 50 MB turn renders ${ratio.toFixed(1)} times slower than a 64 KB one`);

  const before = heapUsed();
  const shown = state(huge);
  const grown = heapUsed() - before;
  assert.ok(grown < 8 * 1024 * 1024, `the state of a 50 MB turn holds ${(grown / 1e6).toFixed(1)} MB`);
  assert.ok(JSON.stringify(shown).length < 3 * c.PIECE_CHARS, 'what is posted to the webview is one piece');
  const [first] = shown.turns;
  assert.equal(first.hidden, huge.replyText.length - first.reply[0].text.length - 4);

  // "Show more" shows the next piece, until the whole turn is shown
  const more = state(huge, new Map([[huge.turnId, c.PIECE_CHARS + c.MORE_CHARS]])).turns[0];
  assert.equal(more.hidden, first.hidden - c.MORE_CHARS);
  assert.equal(state(turn('short'), new Map()).turns[0].hidden, 0);
});

test('the results panel gets a whole turn of 50 MB cut to its first 256 K characters of prompt and reply', () => {
  const huge = 'z'.repeat(50 * 1024 * 1024);
  const texts = p.wholeTurnTexts({ userText: 'why?', replyText: huge });
  assert.deepEqual([texts.userText, texts.replyText.length, texts.hidden], ['why?', p.WHOLE_TURN_CHARS, huge.length - p.WHOLE_TURN_CHARS]);
  assert.deepEqual(p.wholeTurnTexts({ userText: 'a', replyText: 'b' }), { userText: 'a', replyText: 'b', hidden: 0 });
});

test('a piece ends at a line end near its limit, and never inside a surrogate pair', () => {
  const lines = ('y'.repeat(99) + '\n').repeat(1000);
  const piece = r.shownPart(lines, 1050);
  assert.equal(piece.length, 1000);
  assert.ok(piece.endsWith('\n'));
  const emoji = '😀'.repeat(1000);
  assert.equal(r.shownPart(emoji, 1001).length, 1000);
  assert.equal(r.shownPart('abc', 10), 'abc');
});

test('highlights, snippets, the hover and cut labels take linear time on periodic and punctuation-only texts', () => {
  const text = 'a'.repeat(N);
  const other = 'ab '.repeat(N / 3);
  const base = Math.max(best(() => r.highlightSegments(other, ['zz'])), 0.5);
  // every position matches a long needle: marked once per character, found in one pass
  const ratio = best(() => r.highlightSegments(text, ['a'.repeat(2000)])) / base;
  assert.ok(ratio < 20, `highlightSegments: ${ratio.toFixed(1)} times a text with no match`);
  assert.deepEqual(r.highlightSegments('aaaa', ['aa']), [{ text: 'aaaa', hit: true }]);
  const snippet = best(() => s.snippetSegments(text, ['a'.repeat(2000)])) / base;
  assert.ok(snippet < 40, `snippetSegments: ${snippet.toFixed(1)} times`);
  // a hit that is one long run of punctuation (the bold goes around letters and digits only)
  const punct = 'a' + '-'.repeat(N) + 'a';
  const hover = best(() => r.highlightMarkdown(punct, ['-', 'a'], N + 10)) / base;
  assert.ok(hover < 60, `highlightMarkdown: ${hover.toFixed(1)} times`);
  assert.equal(r.highlightMarkdown('x**_price**y', ['_price'], 100), 'x\\*\\*\\_**price**\\*\\*y');
  // cutting a label from a huge text reads only the label's characters
  const huge = 'é'.repeat(32 * 1024 * 1024);
  const cut = best(() => r.truncate(huge, 60), 3);
  assert.ok(cut < Math.max(base, 5), `truncate of 32 MB took ${cut.toFixed(1)} ms`);
  assert.equal(r.truncate(huge, 3), 'ééé…');
  assert.equal(r.truncate('😀😀', 1), '😀…');
});
