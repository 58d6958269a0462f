// Pure helpers of the Sessions and File History views: grouping by day or agent, and the labels of their rows.
// No `vscode` import (unit-tested under plain Node). Every string made from stored data goes through
// plainText, because tree labels, descriptions and CodeLens titles render `$(icon)` and some render links.
import type { FileAction, FileHistoryResult, FileSession, SessionSummary, SessionTurn, Source } from './protocol';
import { folderName, formatDate, oneLine, plainText, sourceLabel, truncate } from './render';

export type GroupBy = 'day' | 'agent';

export interface SessionGroup {
  key: string;
  label: string;
  sessions: SessionSummary[];
}

/** Code points of a prompt in a row's label. */
const LABEL_CHARS = 90;
const AGENT_ORDER: readonly Source[] = ['claude', 'codex', 'pi'];

/** "YYYY-MM-DD" of a time in the local time zone ("" for an invalid time). */
export function localDay(ts: number): string {
  return formatDate(ts).slice(0, 10);
}

/** "Today", "Yesterday" or the day ("2026-11-30"), relative to `now`. */
export function dayLabel(ts: number, now: number): string {
  const day = localDay(ts);
  if (day === '') {
    return 'Unknown date';
  }
  if (day === localDay(now)) {
    return 'Today';
  }
  const yesterday = new Date(now);
  yesterday.setDate(yesterday.getDate() - 1);
  return day === localDay(yesterday.getTime()) ? 'Yesterday' : day;
}

/**
 * Sessions in groups. `sessions` come newest first (the server's order) and keep that order inside each group;
 * days are newest first; agents are in a fixed order (Claude Code, Codex, Pi), unknown ones after.
 */
export function groupSessions(sessions: readonly SessionSummary[], by: GroupBy, now: number): SessionGroup[] {
  const groups = new Map<string, SessionGroup>();
  for (const session of sessions) {
    const key = by === 'day' ? localDay(session.lastTs) : session.source;
    let group = groups.get(key);
    if (group === undefined) {
      const label = by === 'day' ? dayLabel(session.lastTs, now) : plainText(sourceLabel(session.source), 40);
      group = { key, label, sessions: [] };
      groups.set(key, group);
    }
    group.sessions.push(session);
  }
  const list = [...groups.values()];
  if (by === 'day') {
    return list.sort((a, b) => (a.key < b.key ? 1 : a.key > b.key ? -1 : 0));
  }
  const rank = (key: string): number => {
    const at = AGENT_ORDER.indexOf(key);
    return at === -1 ? AGENT_ORDER.length : at;
  };
  return list.sort((a, b) => rank(a.key) - rank(b.key) || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/** A prompt as a row label: one line, cut, safe; a placeholder when there is none. */
export function promptLabel(prompt: string, empty = '(no prompt)'): string {
  const line = oneLine(prompt);
  return line.length === 0 ? empty : plainText(truncate(line, LABEL_CHARS), LABEL_CHARS + 1);
}

/** "14:05" of a time in the local time zone. */
export function clockTime(ts: number): string {
  return formatDate(ts).slice(11);
}

function count(n: number, noun: string): string {
  return `${n.toLocaleString('en-US')} ${noun}${n === 1 ? '' : 's'}`;
}

/** The session's agent, and the part of its time the group does not say, and its size. */
export function sessionDescription(session: SessionSummary, by: GroupBy): string {
  const when = by === 'day' ? clockTime(session.lastTs) : formatDate(session.lastTs);
  const agent = by === 'day' ? [sourceLabel(session.source)] : [];
  return plainText([...agent, when, count(session.turnCount, 'turn')].filter((p) => p !== '').join(' · '), 120);
}

/** Tooltip of a session row: agent, folder, dates, size and the first prompt, as plain text. */
export function sessionTooltip(session: SessionSummary): string {
  const lines = [
    `${sourceLabel(session.source)} · ${session.cwd} · ${count(session.turnCount, 'turn')}`,
    `started ${formatDate(session.startedAt)}, last turn ${formatDate(session.lastTs)}`,
    '',
    truncate(session.firstPrompt, 300),
  ];
  return lines.map((line) => plainText(line, 400)).join('\n');
}

/** A turn row under its session: its prompt, and its time and tools. */
export function turnDescription(turn: Pick<SessionTurn, 'ts' | 'toolNames'>): string {
  const tools = turn.toolNames.length > 0 ? [turn.toolNames.slice(0, 4).join(', ') + (turn.toolNames.length > 4 ? ', …' : '')] : [];
  return plainText([clockTime(turn.ts), ...tools].filter((p) => p !== '').join(' · '), 120);
}

const ACTION_WORDS: Record<FileAction, string> = { read: 'read', write: 'wrote', edit: 'edited', delete: 'deleted' };

/** "edited, read" from a session's actions on a file (the server's order: read, write, edit, delete). */
export function actionsLabel(actions: readonly string[]): string {
  return actions.map((a) => (Object.prototype.hasOwnProperty.call(ACTION_WORDS, a) ? ACTION_WORDS[a as FileAction] : a)).join(', ');
}

/** A file-history row's description: agent, what it did to the file, when, in how many turns. */
export function fileSessionDescription(session: FileSession): string {
  return plainText(
    [sourceLabel(session.source), actionsLabel(session.actions), formatDate(session.lastTs), session.turns > 1 ? count(session.turns, 'turn') : '']
      .filter((p) => p !== '')
      .join(' · '),
    160,
  );
}

export function fileSessionTooltip(session: FileSession): string {
  return [
    `${sourceLabel(session.source)} · ${folderName(session.cwd)} · ${actionsLabel(session.actions)} in ${count(session.turns, 'turn')}`,
    `last ${formatDate(session.lastTs)} · ${session.cwd}`,
    '',
    truncate(session.prompt, 300),
  ]
    .map((line) => plainText(line, 400))
    .join('\n');
}

/**
 * The line at the top of a file: "3 past conversations edited this file"; "2 past conversations read this file"
 * when none changed it; undefined when none touched it.
 */
export function fileLensTitle(history: Pick<FileHistoryResult, 'total' | 'edited'>): string | undefined {
  if (history.edited > 0) {
    return `${history.edited} past ${history.edited === 1 ? 'conversation' : 'conversations'} edited this file`;
  }
  if (history.total > 0) {
    return `${history.total} past ${history.total === 1 ? 'conversation' : 'conversations'} read this file`;
  }
  return undefined;
}

/** The File History view's message: what the list is about ("cart.py: 3 edited it, 4 touched it"). */
export function fileHistoryMessage(fileName: string, history: Pick<FileHistoryResult, 'total' | 'edited' | 'sessions'>): string {
  const name = plainText(fileName, 80);
  const shown = history.sessions.length < history.total ? ` (newest ${history.sessions.length} shown)` : '';
  return `${name}: ${count(history.total, 'past conversation')} touched it, ${history.edited} edited it${shown}.`;
}
