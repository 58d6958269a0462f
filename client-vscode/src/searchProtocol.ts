// Messages between the extension and the sidebar search webview (src/searchView.ts, src/webview/search.ts).
// The webview sends what the user typed and chose, and asks for actions on a row by index; it never gets a
// path or a command it could run by itself. Everything it sends is validated here (it is untrusted input).
import type { SearchedTerm } from './panelProtocol';
import type { RecallScope, Source } from './protocol';

// protocol.ts's SOURCE_NAME, without its runtime import of vscode-languageclient (this module is bundled into a webview)
const SOURCE_NAME = /^[a-z][a-z0-9-]{0,31}$/;
// protocol.ts's RECALL_SCOPES, for the same reason
const SCOPES: readonly RecallScope[] = ['local', 'mine', 'team', 'all'];

export interface SearchRow {
  index: number;
  source: Source;
  cwd: string;
  ts: number;
  hits: number;
  userText: string;
  replyText: string;
  toolNames: string[];
  matched: string[];
  canOpen: boolean;
  canResume: boolean;
  /** The resume button's label: "Resume in terminal", or "Open in Copilot Chat". */
  resumeLabel: string;
  canCopy: boolean;
  /** Who wrote the turn, for a row of the shared store ("ana@laptop"); null for this machine's own rows. */
  author: string | null;
}

export type SearchStatus =
  | { kind: 'idle' }
  | { kind: 'loading' }
  | { kind: 'error'; message: string }
  | {
      kind: 'results';
      /** Changes with every new search (not with "Show more"). */
      id: number;
      fromText: boolean;
      searched: SearchedTerm[];
      /** The rows to show: all of them (replace) or the new ones (append). */
      rows: SearchRow[];
      append: boolean;
      count: string;
      more: boolean;
      /** Said under the count: the shared store's part is missing ("did not answer in time: this machine's rows only"). */
      note?: string;
    };

export interface SearchSettings {
  workspaceOnly: boolean;
  /** The workspace has a folder on disk (else the toggle is disabled). */
  hasWorkspace: boolean;
  /** The agent filters: every source the server knows (pimem/sources), in its order, with its label. */
  agents: { source: Source; label: string }[];
  /** The checked ones. */
  sources: Source[];
  /** Where to search (local unless a shared store is configured). */
  scope: RecallScope;
  /** A shared store is configured: the scope switch is shown (else hidden and local). */
  sharedAvailable: boolean;
}

export type ToSearchView =
  | { type: 'status'; status: SearchStatus }
  | { type: 'settings'; settings: SearchSettings }
  | { type: 'history'; turns: number | null; syncing: boolean }
  | { type: 'setQuery'; query: string }
  | { type: 'focus' };

const ROW_ACTIONS = ['open', 'raw', 'resume', 'copy'] as const;
export type SearchRowAction = (typeof ROW_ACTIONS)[number];

export type FromSearchView =
  | { type: 'ready' }
  | { type: 'search'; query: string; workspaceOnly: boolean; sources: Source[]; scope: RecallScope }
  | { type: 'more' }
  | { type: 'sync' }
  | { type: 'row'; action: SearchRowAction; index: number };

/** Longest query the webview may send (a pasted selection is cut to the server's limit later). */
const MAX_QUERY = 100_000;

export function parseFromSearchView(message: unknown): FromSearchView | undefined {
  if (typeof message !== 'object' || message === null) {
    return undefined;
  }
  const m = message as Record<string, unknown>;
  switch (m.type) {
    case 'ready':
    case 'more':
    case 'sync':
      return { type: m.type };
    case 'search': {
      if (typeof m.query !== 'string' || m.query.length > MAX_QUERY || typeof m.workspaceOnly !== 'boolean' || !Array.isArray(m.sources)) {
        return undefined;
      }
      const sources = (m.sources as unknown[]).filter((s): s is Source => typeof s === 'string' && SOURCE_NAME.test(s));
      // an older page sends no scope: local; anything else that is not a scope is refused
      if (m.scope !== undefined && !(SCOPES as readonly unknown[]).includes(m.scope)) {
        return undefined;
      }
      const scope = m.scope === undefined ? 'local' : (m.scope as RecallScope);
      return { type: 'search', query: m.query, workspaceOnly: m.workspaceOnly, sources, scope };
    }
    case 'row':
      if ((ROW_ACTIONS as readonly unknown[]).includes(m.action) && Number.isSafeInteger(m.index) && (m.index as number) >= 0) {
        return { type: 'row', action: m.action as SearchRowAction, index: m.index as number };
      }
      return undefined;
    default:
      return undefined;
  }
}

/** "ana on laptop", "ana", "laptop" or null: who wrote a shared row, one short plain line (the webview sets it as text). */
export function authorLabel(author: unknown, machine: unknown): string | null {
  const clean = (v: unknown): string => (typeof v === 'string' ? v.replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\s]+/gu, ' ').trim().slice(0, 64) : '');
  const who = clean(author);
  const where = clean(machine);
  if (who.length > 0 && where.length > 0) {
    return `${who} on ${where}`;
  }
  return who.length > 0 ? who : where.length > 0 ? where : null;
}

/** What the count line adds when the shared store's part of an answer is missing; undefined when it answered. */
export function sharedNote(shared: { state?: unknown } | undefined): string | undefined {
  if (shared === undefined || shared.state === 'ok') {
    return undefined;
  }
  switch (shared.state) {
    case 'timeout':
      return "The shared memory did not answer in time: this machine's turns only.";
    case 'unreachable':
      return "The shared memory cannot be reached: this machine's turns only.";
    case 'unconfigured':
      return "No shared memory is configured: this machine's turns only.";
    default:
      return "The shared memory did not answer: this machine's turns only.";
  }
}
