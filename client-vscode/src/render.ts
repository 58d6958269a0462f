// Pure rendering helpers shared by the hover (extension side) and the results webview (browser side).
// No `vscode` import here: this module is bundled into the webview script and unit-tested under plain Node.
import type { SearchedTerm } from './panelProtocol';
import type { RecallResult, RecallRow, Source } from './protocol';

export interface Segment {
  text: string;
  hit: boolean;
}

// How the sources are named when the server has not said (pimem/sources gives every label).
const SOURCE_LABELS: Record<Source, string> = {
  pi: 'Pi',
  claude: 'Claude Code',
  codex: 'Codex',
  gemini: 'Gemini CLI',
  opencode: 'OpenCode',
  'copilot-cli': 'Copilot CLI',
  'copilot-chat': 'Copilot Chat',
  cursor: 'Cursor',
};

/** A source this client knows by name (a restored panel's filter keeps only these). */
export function isKnownSource(source: unknown): source is Source {
  return typeof source === 'string' && Object.prototype.hasOwnProperty.call(SOURCE_LABELS, source);
}

/** Human name of an agent; unknown values are shown as they are. */
export function sourceLabel(source: string): string {
  return (Object.prototype.hasOwnProperty.call(SOURCE_LABELS, source) ? SOURCE_LABELS[source] : undefined) ?? source;
}

/**
 * Splits `text` into segments, marking every case-insensitive occurrence of any entity as a hit (the server
 * matches the same way). Overlapping and adjacent matches merge. Concatenating the segments gives `text` back.
 */
export function highlightSegments(text: string, entities: readonly string[]): Segment[] {
  if (text.length === 0) {
    return [];
  }
  // Lower-case code point by code point and remember where each lowered code unit came from, so that
  // characters whose lower case has another length (e.g. "İ") cannot shift the highlighted ranges.
  let lowered = '';
  const origin: number[] = [];
  for (let i = 0; i < text.length; ) {
    const cp = text.codePointAt(i) ?? 0;
    const width = cp > 0xffff ? 2 : 1;
    const low = String.fromCodePoint(cp).toLowerCase();
    lowered += low;
    origin.push(...Array<number>(low.length).fill(i));
    i += width;
  }
  const hit = new Uint8Array(text.length);
  for (const entity of entities) {
    const needle = entity.trim().toLowerCase();
    if (needle.length === 0) {
      continue;
    }
    // every occurrence, overlapping ones too, in one pass (Knuth-Morris-Pratt: a periodic text and needle, as
    // "aaaa…" and "aaa", cost no more than any other), each character marked once
    let covered = 0;
    for (const at of occurrences(lowered, needle)) {
      const start = Math.max(origin[at] ?? 0, covered);
      const lastOrigin = origin[at + needle.length - 1] ?? text.length - 1;
      const lastCp = text.codePointAt(lastOrigin) ?? 0;
      const end = lastOrigin + (lastCp > 0xffff ? 2 : 1);
      if (end > start) {
        hit.fill(1, start, end);
        covered = end;
      }
    }
  }
  const segments: Segment[] = [];
  let from = 0;
  for (let i = 1; i <= text.length; i++) {
    if (i === text.length || hit[i] !== hit[from]) {
      segments.push({ text: text.slice(from, i), hit: hit[from] === 1 });
      from = i;
    }
  }
  return segments;
}

/** Where `needle` starts in `text`, overlapping occurrences included, in O(text + needle) time. */
function* occurrences(text: string, needle: string): Generator<number> {
  const fail = new Int32Array(needle.length);
  for (let i = 1, k = 0; i < needle.length; i++) {
    while (k > 0 && needle[i] !== needle[k]) {
      k = fail[k - 1] ?? 0;
    }
    if (needle[i] === needle[k]) {
      k++;
    }
    fail[i] = k;
  }
  for (let i = 0, k = 0; i < text.length; i++) {
    while (k > 0 && text[i] !== needle[k]) {
      k = fail[k - 1] ?? 0;
    }
    if (text[i] === needle[k]) {
      k++;
    }
    if (k === needle.length) {
      yield i - needle.length + 1;
      k = fail[k - 1] ?? 0;
    }
  }
}

/** At most `max` code points of `text`, with "…" when something was cut. Never splits a surrogate pair. */
export function truncate(text: string, max: number): string {
  // walk at most `max` code points: a huge text is not copied into an array to cut a prefix of it
  let end = 0;
  for (let n = 0; n < max && end < text.length; n++) {
    end += (text.codePointAt(end) ?? 0) > 0xffff ? 2 : 1;
  }
  return end >= text.length ? text : text.slice(0, end).trimEnd() + '…';
}

/** The first `limit` characters of `text`, cut after a line end in its last quarter when there is one, never inside a surrogate pair. */
export function shownPart(text: string, limit: number): string {
  if (text.length <= limit) {
    return text;
  }
  const newline = text.lastIndexOf('\n', limit - 1);
  let end = newline >= limit - limit / 4 ? newline + 1 : limit;
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) {
    end--;
  }
  return text.slice(0, end);
}

/** Collapses runs of whitespace (newlines included) into single spaces. */
export function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/**
 * Escapes text for inline Markdown: every ASCII punctuation character gets a backslash (CommonMark allows
 * this for all of them), so a transcript can create no link, image, HTML tag, autolink, emphasis or code;
 * runs of whitespace (newlines included) become one space so that it cannot start a block either.
 */
export function escapeMarkdown(text: string): string {
  return text.replace(/\s+/g, ' ').replace(/[!-/:-@[-`{-~]/g, (c) => '\\' + c);
}

const ZERO_WIDTH_SPACE = '\u200b';

/**
 * A value (a path, a server message) made safe for a notification, a status bar item or a quick pick, which
 * render `[label](command:…)` / `(https:…)` / `(file:…)` as links and `$(name)` as icons, with no way to escape
 * them. A zero-width space after every `]` or `$` that precedes `(` breaks both forms and changes nothing
 * visible; control and bidirectional-override characters go, so the value stays one plain line, cut to `max`
 * code points.
 */
export function plainText(text: string, max = 300): string {
  const line = text
    .replace(/[\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, '')
    .replace(/[\p{Cc}\p{Zl}\p{Zp}\s]+/gu, ' ')
    .trim();
  return truncate(line, max).replace(/([\]$])(?=\()/g, `$1${ZERO_WIDTH_SPACE}`);
}

const ALNUM = /[\p{L}\p{N}\p{M}]/u;

/**
 * A match split into its punctuation or spaces before the first letter or digit, its letters and digits from the
 * first to the last, and what follows them: two scans, one from each end (a regex with a lazy middle and a
 * repeated tail backtracks quadratically over a long run of punctuation).
 */
function alnumCore(text: string): [string, string, string] {
  const points = Array.from(text);
  let first = 0;
  while (first < points.length && !ALNUM.test(points[first] ?? '')) {
    first++;
  }
  let last = points.length;
  while (last > first && !ALNUM.test(points[last - 1] ?? '')) {
    last--;
  }
  return [points.slice(0, first).join(''), points.slice(first, last).join(''), points.slice(last).join('')];
}

/**
 * Markdown of `text` cut to `max` code points, with the entities in bold. Every piece is escaped first; the `**`
 * then go around the letters-and-digits core of each match only: a `**` between a letter and punctuation (as
 * in `x**\_price**y` or `a**100\%**b`) is no emphasis delimiter in CommonMark, and the asterisks would show.
 * Between letters (`validate**Price**Ids`) or next to spaces they always are.
 */
export function highlightMarkdown(text: string, entities: readonly string[], max: number): string {
  return highlightSegments(truncate(oneLine(text), max), entities)
    .map((s) => {
      if (!s.hit) {
        return escapeMarkdown(s.text);
      }
      const [lead, core, trail] = alnumCore(s.text);
      return core.length === 0
        ? escapeMarkdown(s.text)
        : `${escapeMarkdown(lead)}**${escapeMarkdown(core)}**${escapeMarkdown(trail)}`;
    })
    .join('');
}

/**
 * The words to highlight in a row: the terms the server says it matched (`matched`), so that a text recall does
 * not mark its other terms where they were not counted; the searched words when a row names none.
 */
export function highlightTerms(row: { matched?: readonly string[] }, searched: readonly string[]): readonly string[] {
  return row.matched !== undefined && row.matched.length > 0 ? row.matched : searched;
}

/**
 * A row's accessible name: agent, folder, date and the start of the prompt ("Claude Code, webshop, 2026-11-30
 * 09:45: Why does the flamingo bug…"), so that the cards and their buttons have distinct names.
 */
export function rowName(row: { source: string; cwd: string; ts: number; userText: string }): string {
  return `${sourceLabel(row.source)}, ${folderName(row.cwd)}, ${formatDate(row.ts)}: ${truncate(oneLine(row.userText), 48)}`;
}

/** "2026-11-30 09:40" in the local time zone. */
export function formatDate(ts: number): string {
  const d = new Date(ts);
  if (Number.isNaN(d.getTime())) {
    return '';
  }
  const p = (n: number): string => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}`;
}

/** Last path component of a folder, for compact display ("/tmp/pimem-demo/webshop" → "webshop"). */
export function folderName(path: string): string {
  const parts = path.split(/[\\/]+/).filter((p) => p.length > 0);
  return parts[parts.length - 1] ?? path;
}

/**
 * What a recall searched for, in the server's order: the entities given, or the terms it chose from a text, with
 * its estimate of how many turns hold each (`terms`).
 */
export function searchedTerms(result: Pick<RecallResult, 'entities' | 'terms'>): SearchedTerm[] {
  const known = new Map((result.terms ?? []).map((t) => [t.term, t]));
  return result.entities.map((term) => {
    const found = known.get(term);
    return { term, turns: found?.turns ?? null, weight: found?.weight ?? null };
  });
}

/** "about 5,105 turns" for an estimate of the server's index. */
export function turnsEstimate(turns: number): string {
  return `about ${turns.toLocaleString('en-US')} ${turns === 1 ? 'turn' : 'turns'}`;
}

/** "searched: timezone (about 3 turns), flaky (about 5,105 turns)" as inline Markdown, every term escaped. */
export function searchedMarkdown(searched: readonly SearchedTerm[]): string {
  const terms = searched.map((s) => escapeMarkdown(s.term) + (s.turns === null ? '' : ` (${turnsEstimate(s.turns)})`));
  return `searched: ${terms.join(', ')}`;
}

export interface HoverMarkdownOptions {
  /** A `command:` URI that opens these results in the panel. */
  showResultsUri: string;
  /** A `command:` URI that searches the same text in the sidebar (a second link, when given). */
  searchUri?: string;
  /** Code points of user text / reply text to show per row. */
  maxChars?: number;
  /** What was searched (searchedTerms); default: the entities, without estimates. */
  searched?: readonly SearchedTerm[];
}

/**
 * The hover for a recall: what was searched, one short paragraph per row (with the terms it matched) plus a link
 * to the panel. All transcript-derived text (user text, reply, folder, entities, terms) goes through
 * `escapeMarkdown`; the only links are `showResultsUri` and `searchUri`.
 */
export function hoverMarkdown(entities: readonly string[], rows: readonly RecallRow[], opts: HoverMarkdownOptions): string {
  const max = opts.maxChars ?? 160;
  const words = entities.map((e) => escapeMarkdown(e)).join(', ');
  const searched = opts.searched ?? entities.map((term) => ({ term, turns: null, weight: null }));
  const parts: string[] = [`**Pi Memory** — past turns about ${words}  \n${searchedMarkdown(searched)}`];
  for (const row of rows) {
    const matched = row.matched.length > 0 ? [`matched: ${row.matched.map((m) => escapeMarkdown(m)).join(', ')}`] : [];
    const meta = [
      `**${escapeMarkdown(sourceLabel(row.source))}**`,
      escapeMarkdown(folderName(row.cwd)),
      escapeMarkdown(formatDate(row.ts)),
      `score ${row.hits}`,
      ...matched,
    ].join(' · ');
    const terms = highlightTerms(row, entities);
    const user = highlightMarkdown(row.userText, terms, max);
    const reply = highlightMarkdown(row.replyText, terms, max);
    parts.push(`${meta}  \n*You:* ${user}  \n*Reply:* ${reply.length > 0 ? reply : '—'}`);
  }
  const search = opts.searchUri === undefined ? '' : ` · [Search in the sidebar](${opts.searchUri})`;
  parts.push(`[Open in the Pi Memory panel](${opts.showResultsUri})${search}`);
  return parts.join('\n\n---\n\n');
}
