// Messages between the extension and the results webview. The webview renders what it is sent and asks the
// extension to act on a row by index; it never receives a path or a command it could act on by itself.
import type { RecallParams, Source } from './protocol';
import { isKnownSource, shownPart } from './render';

export interface PanelRow {
  index: number;
  source: Source;
  cwd: string;
  ts: number;
  hits: number;
  userText: string;
  replyText: string;
  toolNames: string[];
  canOpen: boolean;
  /** "Resume in terminal" can run the agent for this session. */
  canResume: boolean;
  /** The resume button's label: "Resume in terminal", or "Open in Copilot Chat". */
  resumeLabel: string;
  resumeCommand: string | null;
  /** The entities / terms found in this turn (why it was found). */
  matched: string[];
  /** A text was cut in the recall answer and the whole turn has not been fetched. */
  truncated: boolean;
  /** The whole turn was fetched (pimem/turn): its texts are complete, but for `hidden` characters. */
  whole: boolean;
  /** Characters of a fetched whole turn not sent (a huge turn: the conversation view shows it in pieces). */
  hidden: number;
}

/** Characters of a whole turn's prompt and of its reply sent to the panel; the conversation view shows the rest. */
export const WHOLE_TURN_CHARS = 256 * 1024;

/**
 * The texts of a whole turn (pimem/turn) as the panel gets them: a huge turn is not sent whole (the webview
 * would highlight and lay out megabytes at once), `hidden` says how much was left out.
 */
export function wholeTurnTexts(turn: { userText: string; replyText: string }): { userText: string; replyText: string; hidden: number } {
  const userText = shownPart(turn.userText, WHOLE_TURN_CHARS);
  const replyText = shownPart(turn.replyText, WHOLE_TURN_CHARS);
  return { userText, replyText, hidden: turn.userText.length - userText.length + turn.replyText.length - replyText.length };
}

/** A word that was searched for, with the server's estimate of how many turns hold it (free text only). */
export interface SearchedTerm {
  term: string;
  turns: number | null;
  weight: number | null;
}

export type PanelState =
  | { kind: 'idle' }
  | { kind: 'loading'; query: string }
  | {
      kind: 'results';
      /** Changes with every recall (not when one of its rows is completed by the whole turn). */
      id: number;
      query: string;
      fromText: boolean;
      entities: string[];
      searched: SearchedTerm[];
      rows: PanelRow[];
    }
  | { kind: 'error'; query: string; message: string };

export interface ToWebview {
  type: 'state';
  state: PanelState;
  /** The request behind the state, for the webview to keep (vscode.setState) across a window reload. */
  restore?: RestorableRecall;
}

/** What the webview keeps (vscode.setState) so that the panel can come back after a window reload. */
export interface RestorableRecall {
  query: string;
  fromText: boolean;
  request: RecallParams;
}

/** A webview state as RestorableRecall, or undefined (it is read back from storage: checked field by field). */
export function parseRestorable(saved: unknown): RestorableRecall | undefined {
  const restore = (saved as { restore?: unknown } | null | undefined)?.restore;
  if (typeof restore !== 'object' || restore === null) {
    return undefined;
  }
  const r = restore as Record<string, unknown>;
  const q = r.request as Record<string, unknown> | null | undefined;
  if (typeof r.query !== 'string' || typeof r.fromText !== 'boolean' || typeof q !== 'object' || q === null) {
    return undefined;
  }
  const request: RecallParams = {};
  if (typeof q.text === 'string') {
    request.text = q.text;
  } else if (Array.isArray(q.entities) && q.entities.every((e): e is string => typeof e === 'string')) {
    request.entities = q.entities;
  } else {
    return undefined;
  }
  if (Number.isSafeInteger(q.limit)) {
    request.limit = q.limit as number;
  }
  if (typeof q.cwd === 'string') {
    request.cwd = q.cwd;
  }
  if (Array.isArray(q.sources)) {
    request.sources = (q.sources as unknown[]).filter(isKnownSource);
  }
  return { query: r.query, fromText: r.fromText, request };
}

/**
 * What the webview can ask for a row: open its conversation or raw transcript, resume it in a terminal, copy its
 * resume command, fetch the whole turn.
 */
const ROW_ACTIONS = ['open', 'raw', 'resume', 'copyResume', 'wholeTurn'] as const;
export type RowAction = (typeof ROW_ACTIONS)[number];

export type FromWebview = { type: 'ready' } | { type: RowAction; index: number };

function isRowAction(value: unknown): value is RowAction {
  return (ROW_ACTIONS as readonly unknown[]).includes(value);
}

/** Validates a message from the webview (it is untrusted input). */
export function parseFromWebview(message: unknown): FromWebview | undefined {
  if (typeof message !== 'object' || message === null) {
    return undefined;
  }
  const m = message as Record<string, unknown>;
  if (m.type === 'ready') {
    return { type: 'ready' };
  }
  if (isRowAction(m.type) && Number.isSafeInteger(m.index) && (m.index as number) >= 0) {
    return { type: m.type, index: m.index as number };
  }
  return undefined;
}
