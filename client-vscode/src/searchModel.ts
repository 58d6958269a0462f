// What the sidebar search sends and how it pages. Pure (no `vscode` import), unit-tested under Node.
//
// The query: phrases separated by commas are entities (each matched literally, as "Recall…" takes them);
// anything else is free text, for which the server chooses the terms (and says which). Paging uses recall's
// `offset` and `withTotal` (docs/lsp-extensions.md); a server without them answers no `total`, and then
// "Show more" asks for a bigger `limit` instead (offset would be ignored there and repeat the first rows).
import { MAX_ENTITIES, parseEntities, recallText } from './query';
import type { RecallParams, RecallRow } from './protocol';

/** Rows per page. */
export const PAGE_SIZE = 20;
/** The largest `limit` recall accepts. */
export const MAX_LIMIT = 50;
/** `offset + limit` may not exceed this (and `total` is counted exactly up to it). */
export const MAX_WINDOW = 1000;

export type SearchQuery =
  | { kind: 'entities'; entities: string[] }
  | { kind: 'text'; text: string }
  | { kind: 'empty' }
  | { kind: 'invalid'; message: string };

export function parseSearch(input: string): SearchQuery {
  const trimmed = input.trim();
  if (trimmed.length === 0) {
    return { kind: 'empty' };
  }
  if (!trimmed.includes(',')) {
    return { kind: 'text', text: recallText(trimmed) };
  }
  const entities = parseEntities(trimmed);
  if (entities.length === 0) {
    return { kind: 'empty' };
  }
  if (entities.length > MAX_ENTITIES) {
    return { kind: 'invalid', message: `At most ${MAX_ENTITIES} phrases separated by commas (got ${entities.length}).` };
  }
  return { kind: 'entities', entities };
}

/** The `pimem/recall` params of a query (without paging). */
export function queryParams(query: Extract<SearchQuery, { kind: 'entities' | 'text' }>): RecallParams {
  return query.kind === 'entities' ? { entities: query.entities } : { text: query.text };
}

export interface Paging {
  /** 'offset': the server pages (it answered `total`); 'limit': it does not, the limit grows instead. */
  mode: 'offset' | 'limit';
  /** Rows shown so far. */
  shown: number;
  /** The limit of the last request. */
  limit: number;
  total: number | null;
  totalCapped: boolean;
  /** No more rows to ask for. */
  done: boolean;
}

/** Paging of a first answer (asked with offset 0, limit PAGE_SIZE, withTotal; `folders` requests at once). */
export function firstPaging(rows: number, total: number | undefined, totalCapped: boolean | undefined, folders = 1): Paging {
  const offset = total !== undefined && folders <= 1;
  const paging: Paging = {
    mode: offset ? 'offset' : 'limit',
    shown: rows,
    limit: PAGE_SIZE,
    total: total ?? null,
    totalCapped: totalCapped === true,
    done: false,
  };
  paging.done = isDone(paging, rows);
  return paging;
}

function isDone(p: Paging, lastGot: number): boolean {
  if (lastGot < p.limit && p.mode === 'offset') {
    return true;
  }
  if (p.mode === 'limit') {
    return p.shown < p.limit || p.limit >= MAX_LIMIT;
  }
  return (p.total !== null && !p.totalCapped && p.shown >= p.total) || p.shown >= MAX_WINDOW;
}

/** The next request's window: a page after the shown rows (offset mode) or all rows again with a bigger limit. */
export function nextWindow(p: Paging): { offset: number; limit: number } {
  if (p.mode === 'offset') {
    return { offset: p.shown, limit: Math.min(PAGE_SIZE, MAX_WINDOW - p.shown) };
  }
  return { offset: 0, limit: Math.min(MAX_LIMIT, p.limit + PAGE_SIZE) };
}

/** Paging after "Show more" answered `got` rows for `window` (in limit mode `got` is every row now shown). */
export function afterMore(p: Paging, window: { offset: number; limit: number }, got: number): Paging {
  const next: Paging = { ...p, limit: window.limit, shown: p.mode === 'offset' ? p.shown + got : got };
  next.done = isDone(next, got);
  return next;
}

/** "25 turns", "1,000+ turns", "1 turn"; without a total "20 turns shown" or "50+ turns". */
export function countText(p: Paging): string {
  const n = (v: number): string => v.toLocaleString('en-US');
  const turns = (v: number): string => (v === 1 ? 'turn' : 'turns');
  if (p.total !== null) {
    return p.totalCapped ? `${n(p.total)}+ turns` : `${n(p.total)} ${turns(p.total)}`;
  }
  return p.done && p.shown < p.limit ? `${n(p.shown)} ${turns(p.shown)}` : `${n(p.shown)}+ turns`;
}

/**
 * Rows of several folders' recalls (the "this workspace only" filter of a multi-root workspace: one request per
 * folder) as one list: best score first, then newest, each turn once (nested folders can both hold it).
 */
export function mergeRows<T extends Pick<RecallRow, 'turnId' | 'hits' | 'ts'>>(lists: readonly (readonly T[])[], limit: number): T[] {
  const seen = new Set<string>();
  const all: T[] = [];
  for (const row of lists.flat()) {
    if (!seen.has(row.turnId)) {
      seen.add(row.turnId);
      all.push(row);
    }
  }
  return all.sort((a, b) => b.hits - a.hits || b.ts - a.ts).slice(0, limit);
}
