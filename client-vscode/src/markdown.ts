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

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^\s`]*)[^`]*$/;
const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const BULLET = /^ {0,3}([-*+])[ \t]+(.*)$/;
const ORDERED = /^ {0,3}(\d{1,9})[.)][ \t]+(.*)$/;
const QUOTE = /^ {0,3}>[ \t]?(.*)$/;
const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
/** Quotes nested deeper than this are read as plain paragraphs (a crafted text cannot recurse without end). */
const MAX_QUOTE_DEPTH = 8;

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
    const fence = FENCE.exec(line);
    if (fence !== null) {
      flush();
      const marker = fence[1] ?? '```';
      const closing = new RegExp(`^ {0,3}${marker.startsWith('`') ? '`' : '~'}{${marker.length},}[ \\t]*$`);
      const body: string[] = [];
      i++;
      while (i < lines.length && !closing.test(lines[i] ?? '')) {
        body.push(lines[i] ?? '');
        i++;
      }
      blocks.push({ kind: 'code', language: fence[2] ?? '', text: body.join('\n') });
      continue;
    }
    if (line.trim() === '') {
      flush();
      continue;
    }
    if (RULE.test(line)) {
      flush();
      blocks.push({ kind: 'rule' });
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading !== null) {
      flush();
      blocks.push({ kind: 'heading', level: heading[1]?.length ?? 1, inlines: parseInline(heading[2] ?? '') });
      continue;
    }
    if (QUOTE.test(line) && depth < MAX_QUOTE_DEPTH) {
      flush();
      const quoted: string[] = [];
      while (i < lines.length) {
        const m = QUOTE.exec(lines[i] ?? '');
        if (m === null) {
          break;
        }
        quoted.push(m[1] ?? '');
        i++;
      }
      i--;
      blocks.push({ kind: 'quote', blocks: parseMarkdown(quoted.join('\n'), depth + 1) });
      continue;
    }
    const bullet = BULLET.exec(line);
    const ordered = bullet === null ? ORDERED.exec(line) : null;
    if (bullet !== null || ordered !== null) {
      flush();
      const isOrdered = ordered !== null;
      const items: string[][] = [];
      while (i < lines.length) {
        const current = lines[i] ?? '';
        const item = isOrdered ? ORDERED.exec(current) : BULLET.exec(current);
        if (item !== null) {
          items.push([item[2] ?? '']);
        } else if (/^[ \t]+\S/.test(current) && items.length > 0 && !FENCE.test(current)) {
          items[items.length - 1]?.push(current.trim()); // a continuation line of the item
        } else {
          break;
        }
        i++;
      }
      i--;
      blocks.push({
        kind: 'list',
        ordered: isOrdered,
        start: isOrdered ? Number(ordered[1]) : 1,
        items: items.map((item) => parseInlineLines(item)),
      });
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

/** Inline pieces of one line: code spans, **strong** / __strong__, *em* / _em_, backslash escapes. */
export function parseInline(text: string, nested = false): Inline[] {
  const out: Inline[] = [];
  let plain = '';
  const push = (piece: Inline): void => {
    if (plain.length > 0) {
      out.push({ kind: 'text', text: plain });
      plain = '';
    }
    out.push(piece);
  };
  let i = 0;
  while (i < text.length) {
    const c = text[i] ?? '';
    if (c === '\\' && i + 1 < text.length && ESCAPABLE.test(text[i + 1] ?? '')) {
      plain += text[i + 1] ?? '';
      i += 2;
      continue;
    }
    if (c === '`') {
      let run = 1;
      while (text[i + run] === '`') {
        run++;
      }
      const close = findBacktickRun(text, i + run, run);
      if (close === -1) {
        plain += text.slice(i, i + run); // no closing run: literal backticks
        i += run;
        continue;
      }
      let code = text.slice(i + run, close);
      if (code.length > 2 && code.startsWith(' ') && code.endsWith(' ') && code.trim() !== '') {
        code = code.slice(1, -1);
      }
      push({ kind: 'code', text: code });
      i = close + run;
      continue;
    }
    if (!nested && (c === '*' || c === '_') && text[i + 1] === c) {
      const close = findDelimiter(text, i + 2, c + c);
      if (close !== -1 && opens(text, i, 2) && closes(text, close, 2)) {
        push({ kind: 'strong', children: parseInline(text.slice(i + 2, close), true) });
        i = close + 2;
        continue;
      }
    }
    if ((c === '*' || c === '_') && text[i + 1] !== c) {
      const close = findDelimiter(text, i + 1, c);
      if (close !== -1 && opens(text, i, 1) && closes(text, close, 1)) {
        push({ kind: 'em', children: parseInline(text.slice(i + 1, close), true) });
        i = close + 1;
        continue;
      }
    }
    plain += c;
    i++;
  }
  if (plain.length > 0) {
    out.push({ kind: 'text', text: plain });
  }
  return out;
}

function findBacktickRun(text: string, from: number, run: number): number {
  for (let at = text.indexOf('`', from); at !== -1; at = text.indexOf('`', at + 1)) {
    let length = 1;
    while (text[at + length] === '`') {
      length++;
    }
    if (length === run) {
      return at;
    }
    at += length - 1;
  }
  return -1;
}

function findDelimiter(text: string, from: number, delimiter: string): number {
  for (let at = text.indexOf(delimiter, from); at !== -1; at = text.indexOf(delimiter, at + 1)) {
    if (at > from && text[at - 1] !== '\\' && (delimiter.length === 2 || text[at + 1] !== delimiter)) {
      return at;
    }
  }
  return -1;
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
