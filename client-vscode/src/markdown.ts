// A small Markdown reader for transcript text (prompts and replies): it turns text into blocks (paragraphs,
// fenced code, headings, lists, quotes, rules) and inline pieces (text, code, strong, emphasis) that the
// conversation webview builds with textContent only. It produces no HTML and knows no links, images or raw
// HTML: a transcript's `<img …>`, `[label](command:…)` or `$(icon)` stay the characters they are.
// No `vscode` import: bundled into the webview script and unit-tested under plain Node.

export type Inline =
  | { kind: 'text'; text: string }
  | { kind: 'code'; text: string }
  | { kind: 'strong'; children: Inline[] }
  | { kind: 'em'; children: Inline[] }
  | { kind: 'break' };

export type Block =
  | { kind: 'paragraph'; inlines: Inline[] }
  | { kind: 'heading'; level: number; inlines: Inline[] }
  | { kind: 'code'; language: string; text: string }
  | { kind: 'list'; ordered: boolean; start: number; items: Inline[][] }
  | { kind: 'quote'; blocks: Block[] }
  | { kind: 'rule' };

// Every line is read by the scanners below, each one pass over the line: no regular expression with
// overlapping repeats meets stored text, so a crafted line (a 128 KB fence line, heading or list item) costs
// time linear in its length. (A backtracking regex here froze the extension host for seconds per render.)

/** Quotes nested deeper than this are read as plain paragraphs (a crafted text cannot recurse without end). */
const MAX_QUOTE_DEPTH = 8;

const isBlank = (c: string | undefined): boolean => c === ' ' || c === '\t';

/** Where a line's content starts after at most three spaces of indent, or -1 when it is indented more. */
function indentEnd(line: string): number {
  let i = 0;
  while (i < 3 && line[i] === ' ') {
    i++;
  }
  return line[i] === ' ' ? -1 : i;
}

interface Fence {
  char: '`' | '~';
  length: number;
  language: string;
}

/** An opening fence: ``` or ~~~ (three or more), then an info string without backticks whose first word is the language. */
function openingFence(line: string): Fence | undefined {
  const start = indentEnd(line);
  const char = start < 0 ? undefined : line[start];
  if (char !== '`' && char !== '~') {
    return undefined;
  }
  let end = start;
  while (line[end] === char) {
    end++;
  }
  if (end - start < 3 || line.includes('`', end)) {
    return undefined;
  }
  let from = end;
  while (from < line.length && /\s/.test(line[from] ?? '')) {
    from++;
  }
  let to = from;
  while (to < line.length && !/\s/.test(line[to] ?? '')) {
    to++;
  }
  return { char, length: end - start, language: line.slice(from, to) };
}

/** A closing fence of `fence`: the same character, at least as many, nothing after but spaces or tabs. */
function closesFence(line: string, fence: Fence): boolean {
  const start = indentEnd(line);
  if (start < 0) {
    return false;
  }
  let end = start;
  while (line[end] === fence.char) {
    end++;
  }
  if (end - start < fence.length) {
    return false;
  }
  while (isBlank(line[end])) {
    end++;
  }
  return end === line.length;
}

/** A thematic break: three or more of one of - * _, with spaces or tabs between. */
function isRule(line: string): boolean {
  const start = indentEnd(line);
  const char = start < 0 ? undefined : line[start];
  if (char !== '-' && char !== '*' && char !== '_') {
    return false;
  }
  let count = 0;
  for (let i = start; i < line.length; i++) {
    const c = line[i];
    if (c === char) {
      count++;
    } else if (!isBlank(c)) {
      return false;
    }
  }
  return count >= 3;
}

/** An ATX heading: 1 to 6 `#`, then nothing or a space and its text, an optional closing run of `#` dropped. */
function heading(line: string): { level: number; text: string } | undefined {
  const start = indentEnd(line);
  if (start < 0) {
    return undefined;
  }
  let end = start;
  while (line[end] === '#') {
    end++;
  }
  const level = end - start;
  if (level < 1 || level > 6 || (end < line.length && !isBlank(line[end]))) {
    return undefined;
  }
  let to = line.length;
  while (to > end && isBlank(line[to - 1])) {
    to--;
  }
  let hashes = to;
  while (hashes > end && line[hashes - 1] === '#') {
    hashes--;
  }
  if (hashes < to && hashes > end && isBlank(line[hashes - 1])) {
    to = hashes; // a closing sequence: " ##" at the end
    while (to > end && isBlank(line[to - 1])) {
      to--;
    }
  }
  let from = end;
  while (from < to && isBlank(line[from])) {
    from++;
  }
  return { level, text: line.slice(from, to) };
}

/** A list item: a bullet (- * +) or a number of 1 to 9 digits and `.` or `)`, then spaces or tabs, then its text. */
function listItem(line: string): { ordered: boolean; start: number; text: string } | undefined {
  const start = indentEnd(line);
  if (start < 0) {
    return undefined;
  }
  let end = start;
  let ordered = false;
  const first = line[start];
  if (first === '-' || first === '*' || first === '+') {
    end++;
  } else {
    while (end < line.length && end - start < 10 && line.charCodeAt(end) >= 48 && line.charCodeAt(end) <= 57) {
      end++;
    }
    if (end === start || end - start > 9 || (line[end] !== '.' && line[end] !== ')')) {
      return undefined;
    }
    ordered = true;
    end++;
  }
  if (!isBlank(line[end])) {
    return undefined;
  }
  let from = end;
  while (isBlank(line[from])) {
    from++;
  }
  return { ordered, start: ordered ? Number(line.slice(start, end - 1)) : 1, text: line.slice(from) };
}

/** The text of a block quote line (after `>` and one optional space or tab), or undefined. */
function quoted(line: string): string | undefined {
  const start = indentEnd(line);
  if (start < 0 || line[start] !== '>') {
    return undefined;
  }
  return line.slice(isBlank(line[start + 1]) ? start + 2 : start + 1);
}

/** A list item's continuation line: indented, not blank. */
function continues(line: string): boolean {
  let i = 0;
  while (isBlank(line[i])) {
    i++;
  }
  return i > 0 && i < line.length && !/\s/.test(line[i] ?? '');
}

/** The blocks of a Markdown text. Concatenating the text of all blocks loses no character but markup. */
export function parseMarkdown(text: string, depth = 0): Block[] {
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  const blocks: Block[] = [];
  let paragraph: string[] = [];
  const flush = (): void => {
    if (paragraph.length > 0) {
      blocks.push({ kind: 'paragraph', inlines: parseInlineLines(paragraph) });
      paragraph = [];
    }
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    const fence = openingFence(line);
    if (fence !== undefined) {
      flush();
      const body: string[] = [];
      i++;
      while (i < lines.length && !closesFence(lines[i] ?? '', fence)) {
        body.push(lines[i] ?? '');
        i++;
      }
      blocks.push({ kind: 'code', language: fence.language, text: body.join('\n') });
      continue;
    }
    if (line.trim() === '') {
      flush();
      continue;
    }
    if (isRule(line)) {
      flush();
      blocks.push({ kind: 'rule' });
      continue;
    }
    const head = heading(line);
    if (head !== undefined) {
      flush();
      blocks.push({ kind: 'heading', level: head.level, inlines: parseInline(head.text) });
      continue;
    }
    if (quoted(line) !== undefined && depth < MAX_QUOTE_DEPTH) {
      flush();
      const inner: string[] = [];
      while (i < lines.length) {
        const q = quoted(lines[i] ?? '');
        if (q === undefined) {
          break;
        }
        inner.push(q);
        i++;
      }
      i--;
      blocks.push({ kind: 'quote', blocks: parseMarkdown(inner.join('\n'), depth + 1) });
      continue;
    }
    const first = listItem(line);
    if (first !== undefined) {
      flush();
      const items: string[][] = [];
      while (i < lines.length) {
        const current = lines[i] ?? '';
        const item = listItem(current);
        if (item?.ordered === first.ordered) {
          items.push([item.text]);
        } else if (items.length > 0 && continues(current) && openingFence(current) === undefined) {
          items[items.length - 1]?.push(current.trim()); // a continuation line of the item
        } else {
          break;
        }
        i++;
      }
      i--;
      blocks.push({ kind: 'list', ordered: first.ordered, start: first.start, items: items.map((item) => parseInlineLines(item)) });
      continue;
    }
    paragraph.push(line.trim());
  }
  flush();
  return blocks;
}

/** Lines of one paragraph: each line's inlines, with a line break between lines (chat text means its newlines). */
function parseInlineLines(lines: readonly string[]): Inline[] {
  const out: Inline[] = [];
  lines.forEach((line, n) => {
    if (n > 0) {
      out.push({ kind: 'break' });
    }
    out.push(...parseInline(line));
  });
  return out;
}

const ESCAPABLE = /[!-/:-@[-`{-~]/;

/**
 * The next closing candidate of each kind, found by scans that never go over the same characters twice in one
 * parseInline call (the positions asked about only grow): a line of a thousand unclosed openers costs one pass.
 */
class Closers {
  private readonly found = new Map<string, { from: number; at: number }>();
  private runs: Map<number, number[]> | undefined;
  private readonly runIndex = new Map<number, number>();

  constructor(private readonly text: string) {}

  /** The first `delimiter` after `from` that may close (not escaped; a single one not doubled), or -1. */
  delimiter(from: number, delimiter: string): number {
    const known = this.found.get(delimiter);
    if (known !== undefined && known.from <= from && (known.at === -1 || from < known.at)) {
      return known.at; // nothing may close in (known.from, known.at)
    }
    const { text } = this;
    let at = text.indexOf(delimiter, from + 1);
    for (; at !== -1; at = text.indexOf(delimiter, at + 1)) {
      if (text[at - 1] !== '\\' && (delimiter.length === 2 || text[at + 1] !== delimiter)) {
        break;
      }
    }
    this.found.set(delimiter, { from, at });
    return at;
  }

  /** The start of the first run of exactly `length` backticks at or after `from`, or -1. */
  backtickRun(from: number, length: number): number {
    if (this.runs === undefined) {
      // one pass: where every run of backticks starts, by its length
      this.runs = new Map();
      for (let at = this.text.indexOf('`'); at !== -1; ) {
        let end = at + 1;
        while (this.text[end] === '`') {
          end++;
        }
        const list = this.runs.get(end - at) ?? [];
        list.push(at);
        this.runs.set(end - at, list);
        at = this.text.indexOf('`', end);
      }
    }
    const list = this.runs.get(length) ?? [];
    let n = this.runIndex.get(length) ?? 0;
    while (n < list.length && (list[n] ?? 0) < from) {
      n++;
    }
    this.runIndex.set(length, n);
    return list[n] ?? -1;
  }
}

/** Inline pieces of one line: code spans, **strong** / __strong__, *em* / _em_, backslash escapes. */
export function parseInline(text: string, nested = false): Inline[] {
  const out: Inline[] = [];
  const closers = new Closers(text);
  // the plain text since the last piece, as slices of `text` (escapes drop their backslash), joined once
  let plain: string[] = [];
  let plainFrom = 0;
  const endPlain = (to: number): void => {
    if (to > plainFrom) {
      plain.push(text.slice(plainFrom, to));
    }
    if (plain.length > 0) {
      out.push({ kind: 'text', text: plain.join('') });
      plain = [];
    }
  };
  const push = (piece: Inline, from: number, next: number): void => {
    endPlain(from);
    out.push(piece);
    plainFrom = next;
  };
  let i = 0;
  while (i < text.length) {
    const c = text[i] ?? '';
    if (c === '\\' && i + 1 < text.length && ESCAPABLE.test(text[i + 1] ?? '')) {
      if (i > plainFrom) {
        plain.push(text.slice(plainFrom, i));
      }
      plainFrom = i + 1; // the escaped character is plain text
      i += 2;
      continue;
    }
    if (c === '`') {
      let run = 1;
      while (text[i + run] === '`') {
        run++;
      }
      const close = closers.backtickRun(i + run, run);
      if (close === -1) {
        i += run; // no closing run: literal backticks
        continue;
      }
      let code = text.slice(i + run, close);
      if (code.length > 2 && code.startsWith(' ') && code.endsWith(' ') && code.trim() !== '') {
        code = code.slice(1, -1);
      }
      push({ kind: 'code', text: code }, i, close + run);
      i = close + run;
      continue;
    }
    if (!nested && (c === '*' || c === '_') && text[i + 1] === c) {
      const close = closers.delimiter(i + 2, c + c);
      if (close !== -1 && opens(text, i, 2) && closes(text, close, 2)) {
        push({ kind: 'strong', children: parseInline(text.slice(i + 2, close), true) }, i, close + 2);
        i = close + 2;
        continue;
      }
    }
    if ((c === '*' || c === '_') && text[i + 1] !== c) {
      const close = closers.delimiter(i + 1, c);
      if (close !== -1 && opens(text, i, 1) && closes(text, close, 1)) {
        push({ kind: 'em', children: parseInline(text.slice(i + 1, close), true) }, i, close + 1);
        i = close + 1;
        continue;
      }
    }
    i++;
  }
  endPlain(text.length);
  return out;
}

const WORD = /[\p{L}\p{N}]/u;

/** An opening delimiter: followed by a non-space; `_` also not inside a word (snake_case stays as it is). */
function opens(text: string, at: number, width: number): boolean {
  const next = text[at + width] ?? '';
  if (next === '' || /\s/.test(next)) {
    return false;
  }
  return text[at] !== '_' || !WORD.test(text[at - 1] ?? '');
}

/** A closing delimiter: preceded by a non-space; `_` also not followed by a word character. */
function closes(text: string, at: number, width: number): boolean {
  const previous = text[at - 1] ?? '';
  if (previous === '' || /\s/.test(previous)) {
    return false;
  }
  return text[at] !== '_' || !WORD.test(text[at + width] ?? '');
}

/** The characters a reader sees in the inlines (tests and accessible labels). */
export function inlineText(inlines: readonly Inline[]): string {
  return inlines
    .map((piece) => {
      switch (piece.kind) {
        case 'text':
        case 'code':
          return piece.text;
        case 'break':
          return '\n';
        default:
          return inlineText(piece.children);
      }
    })
    .join('');
}
