// Stored text that is crafted or huge (issue 20, item 7): the Markdown reader and the other readers of transcript text
// in the client take time linear in the text. Times are compared with a plain text of the same size in the same run (a ratio, the best of a few runs), never absolute.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { performance } from 'node:perf_hooks';
import { load } from './load.mjs';

const { parseMarkdown } = load('markdown.ts');
const r = load('render.ts');
const s = load('snippet.ts');

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
