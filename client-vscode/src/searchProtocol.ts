// Messages between the extension and the sidebar search webview (src/searchView.ts, src/webview/search.ts).
// The webview sends what the user typed and chose, and asks for actions on a row by index; it never gets a
// path or a command it could run by itself. Everything it sends is validated here (it is untrusted input).
import type { SearchedTerm } from './panelProtocol';
import type { Source } from './protocol';

// protocol.ts's SOURCE_NAME, without its runtime import of vscode-languageclient (this module is bundled into a webview)
const SOURCE_NAME = /^[a-z][a-z0-9-]{0,31}$/;

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
    };

export interface SearchSettings {
  workspaceOnly: boolean;
  /** The workspace has a folder on disk (else the toggle is disabled). */
  hasWorkspace: boolean;
  /** The agent filters: every source the server knows (pimem/sources), in its order, with its label. */
  agents: { source: Source; label: string }[];
  /** The checked ones. */
  sources: Source[];
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
  | { type: 'search'; query: string; workspaceOnly: boolean; sources: Source[] }
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
      return { type: 'search', query: m.query, workspaceOnly: m.workspaceOnly, sources };
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
