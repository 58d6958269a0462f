import assert from 'node:assert/strict';
import { test } from 'node:test';
import { load } from './load.mjs';

const { parseMarkdown, parseInline, inlineText } = load('markdown.ts');

test('a fenced code block keeps its language and every character, Markdown inside included', () => {
  const text = 'Here is a fix:\n\n```python\ndef f(x):\n    return x * 2  # **not bold**\n```\n\nDone.';
  assert.deepEqual(parseMarkdown(text), [
    { kind: 'paragraph', inlines: [{ kind: 'text', text: 'Here is a fix:' }] },
    { kind: 'code', language: 'python', text: 'def f(x):\n    return x * 2  # **not bold**' },
    { kind: 'paragraph', inlines: [{ kind: 'text', text: 'Done.' }] },
  ]);
});

test('an unclosed fence runs to the end; tildes and longer fences close only with their own kind', () => {
  assert.deepEqual(parseMarkdown('```\nopen\n~~~\nstill code'), [{ kind: 'code', language: '', text: 'open\n~~~\nstill code' }]);
  assert.deepEqual(parseMarkdown('````js\n```\n````'), [{ kind: 'code', language: 'js', text: '```' }]);
});

test('inline code, strong and emphasis; snake_case and a lone asterisk stay text', () => {
  assert.deepEqual(parseInline('run `make test` **now**, *please*'), [
    { kind: 'text', text: 'run ' }, { kind: 'code', text: 'make test' }, { kind: 'text', text: ' ' },
    { kind: 'strong', children: [{ kind: 'text', text: 'now' }] }, { kind: 'text', text: ', ' },
    { kind: 'em', children: [{ kind: 'text', text: 'please' }] },
  ]);
  assert.deepEqual(parseInline('zeta_ratelimit and snake_case_name'), [{ kind: 'text', text: 'zeta_ratelimit and snake_case_name' }]);
  assert.deepEqual(parseInline('set MAX_RETRIES_ to 3'), [{ kind: 'text', text: 'set MAX_RETRIES_ to 3' }]);
  assert.deepEqual(parseInline('2 * 3 = 6'), [{ kind: 'text', text: '2 * 3 = 6' }]);
  assert.deepEqual(parseInline('``a ` b``'), [{ kind: 'code', text: 'a ` b' }]);
  assert.deepEqual(parseInline('\\*literal\\*'), [{ kind: 'text', text: '*literal*' }]);
});

test('headings, lists, quotes and rules', () => {
  const blocks = parseMarkdown('## Plan\n- one\n- two\n  continued\n\n3. third\n4. fourth\n\n> quoted **text**\n\n---');
  assert.deepEqual(blocks.map((b) => b.kind), ['heading', 'list', 'list', 'quote', 'rule']);
  assert.equal(blocks[0].level, 2);
  assert.deepEqual(blocks[1].items.map((i) => inlineText(i)), ['one', 'two\ncontinued']);
  assert.equal(blocks[2].ordered, true);
  assert.equal(blocks[2].start, 3);
  assert.equal(blocks[3].blocks[0].inlines[1].kind, 'strong');
});

test('single newlines inside a paragraph are line breaks (chat text means them)', () => {
  assert.deepEqual(parseMarkdown('line one\nline two'), [
    { kind: 'paragraph', inlines: [{ kind: 'text', text: 'line one' }, { kind: 'break' }, { kind: 'text', text: 'line two' }] },
  ]);
});

test('hostile text stays text: HTML, links, command links, images and icons are the characters they are', () => {
  const hostile = '<img src=x onerror=alert(1)> [Run](command:workbench.action.terminal.new) ![i](https://x/y.png) $(alert) <script>alert(1)</script>';
  const blocks = parseMarkdown(hostile);
  assert.equal(blocks.length, 1);
  assert.equal(blocks[0].kind, 'paragraph');
  // no piece but text: nothing a renderer could turn into an element with an attribute
  assert.deepEqual(blocks[0].inlines.map((i) => i.kind), ['text']);
  assert.equal(inlineText(blocks[0].inlines), hostile);
});

test('every kind of piece carries only text (no field a renderer could use as a URL or HTML)', () => {
  const walk = (value) => {
    if (Array.isArray(value)) {
      value.forEach(walk);
    } else if (value !== null && typeof value === 'object') {
      for (const [key, v] of Object.entries(value)) {
        assert.ok(['kind', 'text', 'inlines', 'children', 'level', 'language', 'ordered', 'start', 'items', 'blocks'].includes(key), key);
        walk(v);
      }
    }
  };
  walk(parseMarkdown('# h\n> q\n- [a](b)\n```x\ny\n```\n**s** *e* `c`\n\n<a href="javascript:1">x</a>'));
});

test('deeply nested quotes do not recurse without end', () => {
  const blocks = parseMarkdown('>'.repeat(5000) + ' deep');
  assert.ok(blocks.length === 1);
});
