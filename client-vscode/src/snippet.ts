// Snippets of a transcript text around its matches, for the search cards: a window around the first match of
// each matched term (not the text's first lines), windows merged where they overlap, "…" where text was left
// out. Pure (no `vscode` import): bundled into the webview and unit-tested under Node.
import { highlightSegments, type Segment } from './render';

export const ELLIPSIS = '…';

/** Where the first case-insensitive occurrence of `term` starts and ends in `text`, or undefined. */
export function firstMatch(text: string, term: string): { start: number; end: number } | undefined {
  let at = 0;
  for (const segment of highlightSegments(text, [term])) {
    if (segment.hit) {
      return { start: at, end: at + segment.text.length };
    }
    at += segment.text.length;
  }
  return undefined;
}

/** Moves `i` off the second half of a surrogate pair, so that a slice never splits a character. */
function safe(text: string, i: number): number {
  const code = text.charCodeAt(i);
  return i > 0 && i < text.length && code >= 0xdc00 && code <= 0xdfff ? i - 1 : i;
}

/** Widens [start, end) to about `radius` characters each side, ending at whitespace when there is some near. */
function windowAround(text: string, start: number, end: number, radius: number): [number, number] {
  let from = Math.max(0, start - radius);
  let to = Math.min(text.length, end + radius);
  if (from > 0) {
    const space = text.slice(from, start).search(/\s/);
    from = space >= 0 ? from + space + 1 : from;
  }
  if (to < text.length) {
    const before = text.slice(end, to);
    const space = Math.max(before.lastIndexOf(' '), before.lastIndexOf('\n'));
    to = space >= 0 ? end + space : to;
  }
  return [safe(text, from), safe(text, to)];
}

/**
 * The parts of `text` worth showing for `terms`: each term's first match with about `radius` characters of
 * context each side (overlapping windows merged, in text order), the terms highlighted, "…" segments where
 * text was left out. A text in which no term occurs gives its beginning. Whitespace runs become one space.
 */
export function snippetSegments(text: string, terms: readonly string[], radius = 60): Segment[] {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (flat.length === 0) {
    return [];
  }
  const windows: [number, number][] = [];
  for (const term of terms) {
    const match = firstMatch(flat, term);
    if (match !== undefined) {
      windows.push(windowAround(flat, match.start, match.end, radius));
    }
  }
  if (windows.length === 0) {
    windows.push(windowAround(flat, 0, 0, radius * 2));
  }
  windows.sort((a, b) => a[0] - b[0]);
  const merged: [number, number][] = [];
  for (const w of windows) {
    const last = merged[merged.length - 1];
    if (last !== undefined && w[0] <= last[1] + 1) {
      last[1] = Math.max(last[1], w[1]);
    } else {
      merged.push([w[0], w[1]]);
    }
  }
  const segments: Segment[] = [];
  merged.forEach(([from, to], i) => {
    if (from > 0) {
      segments.push({ text: i === 0 ? `${ELLIPSIS} ` : ` ${ELLIPSIS} `, hit: false });
    }
    segments.push(...highlightSegments(flat.slice(from, to).trim(), terms));
    if (i === merged.length - 1 && to < flat.length) {
      segments.push({ text: ` ${ELLIPSIS}`, hit: false });
    }
  });
  return segments;
}
