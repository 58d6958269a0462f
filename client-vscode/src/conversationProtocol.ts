// Messages between the conversation panel (extension side, src/conversation.ts) and its webview script
// (src/webview/conversation.ts), and the pure step that makes a pimem/session answer into what the webview
// shows. No `vscode` import: bundled into the webview script and unit-tested under plain Node.
import { parseMarkdown, type Block } from './markdown';
import type { FileAction, SessionResult, SessionTurn } from './protocol';
import { folderName, formatDate, shownPart, sourceLabel } from './render';

export interface ConversationTurn {
  index: number; // in `turns` of the state (messages name turns by it)
  position: number; // 1-based position in the session
  turnId: string;
  date: string;
  user: Block[];
  reply: Block[];
  toolNames: string[];
  /** `edited`: the file whose lines the conversation was opened for (the memory of each line). */
  files: { path: string; action: FileAction; edited?: boolean }[];
  /** The tool of that edit, highlighted among toolNames. */
  editTool?: string;
  hit: boolean;
  truncated: boolean;
  /** Characters of the prompt and the reply not shown yet ("Show more" shows the next piece). */
  hidden: number;
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
  | { type: 'moreText'; index: number }
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
    case 'moreText':
      return Number.isSafeInteger(m.index) && (m.index as number) >= 0 ? { type: m.type, index: m.index as number } : undefined;
    case 'more':
      return m.direction === 'earlier' || m.direction === 'later' ? { type: 'more', direction: m.direction } : undefined;
    default:
      return undefined;
  }
}

/**
 * A long turn is shown in pieces: the first PIECE_CHARS characters of its prompt and of its reply, then
 * MORE_CHARS more per "Show more". Only what is shown is read as Markdown and posted to the webview, so a whole
 * turn of 50 MB costs a render no more than one of 64 KB.
 */
export const PIECE_CHARS = 64 * 1024;
export const MORE_CHARS = 256 * 1024;

/**
 * What the webview shows for a window of a session, the turn `hitTurnId` marked. `shownChars` says, per turn id,
 * how many characters of its prompt and of its reply are shown (default PIECE_CHARS).
 */
export function conversationState(
  session: SessionResult,
  turns: readonly SessionTurn[],
  firstPosition: number,
  hitTurnId: string | undefined,
  id: number,
  shownChars: ReadonlyMap<string, number> = new Map(),
  edit?: { file?: string; tool?: string },
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
    turns: turns.map((turn, index) => {
      const limit = shownChars.get(turn.turnId) ?? PIECE_CHARS;
      const user = shownPart(turn.userText, limit);
      const reply = shownPart(turn.replyText, limit);
      const hit = hitTurnId !== undefined && turn.turnId === hitTurnId;
      const editFile = hit ? edit?.file : undefined;
      const editTool = hit && edit?.tool !== undefined && turn.toolNames.includes(edit.tool) ? edit.tool : undefined;
      return {
        index,
        position: firstPosition + index + 1,
        turnId: turn.turnId,
        date: formatDate(turn.ts),
        user: parseMarkdown(user),
        reply: parseMarkdown(reply),
        toolNames: turn.toolNames,
        files: editFile === undefined ? turn.files : turn.files.map((f) => (f.path === editFile && f.action !== 'read' ? { ...f, edited: true } : f)),
        ...(editTool === undefined ? {} : { editTool }),
        hit,
        truncated: turn.truncated,
        hidden: turn.userText.length - user.length + turn.replyText.length - reply.length,
        canOpenRaw: turn.jsonlPath.length > 0,
      };
    }),
  };
}
