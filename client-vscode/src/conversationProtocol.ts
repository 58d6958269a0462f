// Messages between the conversation panel (extension side, src/conversation.ts) and its webview script
// (src/webview/conversation.ts), and the pure step that makes a pimem/session answer into what the webview
// shows. No `vscode` import: bundled into the webview script and unit-tested under plain Node.
import { parseMarkdown, type Block } from './markdown';
import type { FileAction, SessionResult, SessionTurn } from './protocol';
import { folderName, formatDate, sourceLabel } from './render';

export interface ConversationTurn {
  index: number; // in `turns` of the state (messages name turns by it)
  position: number; // 1-based position in the session
  turnId: string;
  date: string;
  user: Block[];
  reply: Block[];
  toolNames: string[];
  files: { path: string; action: FileAction }[];
  hit: boolean;
  truncated: boolean;
  canOpenRaw: boolean;
}

export interface ConversationState {
  /** Changes with every new conversation shown, so that the webview scrolls to the hit once. */
  id: number;
  agent: string;
  source: string;
  folder: string;
  cwd: string;
  started: string;
  turnCount: number;
  /** The first and last position shown (1-based) */
  from: number;
  to: number;
  moreBefore: boolean;
  moreAfter: boolean;
  canContinueInPi: boolean;
  canCopyResume: boolean;
  turns: ConversationTurn[];
}

export type ConversationToWebview =
  | { type: 'state'; state: ConversationState }
  | { type: 'loading'; message: string }
  | { type: 'error'; message: string };

export type ConversationFromWebview =
  | { type: 'ready' }
  | { type: 'openRaw'; index: number }
  | { type: 'whole'; index: number }
  | { type: 'more'; direction: 'earlier' | 'later' }
  | { type: 'continueInPi' }
  | { type: 'copyResume' };

/** Validates a message from the webview (which runs transcript-derived content): undefined when malformed. */
export function parseConversationMessage(raw: unknown): ConversationFromWebview | undefined {
  if (typeof raw !== 'object' || raw === null) {
    return undefined;
  }
  const m = raw as Record<string, unknown>;
  switch (m.type) {
    case 'ready':
    case 'continueInPi':
    case 'copyResume':
      return { type: m.type };
    case 'openRaw':
    case 'whole':
      return Number.isSafeInteger(m.index) && (m.index as number) >= 0 ? { type: m.type, index: m.index as number } : undefined;
    case 'more':
      return m.direction === 'earlier' || m.direction === 'later' ? { type: 'more', direction: m.direction } : undefined;
    default:
      return undefined;
  }
}

/** What the webview shows for a window of a session, the turn `hitTurnId` marked. */
export function conversationState(
  session: SessionResult,
  turns: readonly SessionTurn[],
  firstPosition: number,
  hitTurnId: string | undefined,
  id: number,
): ConversationState {
  return {
    id,
    agent: sourceLabel(session.source),
    source: session.source,
    folder: folderName(session.cwd),
    cwd: session.cwd,
    started: formatDate(session.startedAt),
    turnCount: session.turnCount,
    from: turns.length > 0 ? firstPosition + 1 : 0,
    to: firstPosition + turns.length,
    moreBefore: firstPosition > 0,
    moreAfter: firstPosition + turns.length < session.turnCount,
    canContinueInPi: session.source === 'codex',
    canCopyResume: session.resumeCommand !== null,
    turns: turns.map((turn, index) => ({
      index,
      position: firstPosition + index + 1,
      turnId: turn.turnId,
      date: formatDate(turn.ts),
      user: parseMarkdown(turn.userText),
      reply: parseMarkdown(turn.replyText),
      toolNames: turn.toolNames,
      files: turn.files,
      hit: hitTurnId !== undefined && turn.turnId === hitTurnId,
      truncated: turn.truncated,
      canOpenRaw: turn.jsonlPath.length > 0,
    })),
  };
}
