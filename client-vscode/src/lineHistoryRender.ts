// Pure parts of the memory of each line (issue 23, `pimem/lineHistory`): which lines to ask for, the relative
// time, the current-line annotation, the hover and the quick pick of "Which conversation wrote this?". No `vscode`
// import: unit-tested under plain Node. Every value from the server (prompt, source, tool) comes from a transcript:
// it is made one plain line (plainText) for the annotation and the quick pick, and escaped (escapeMarkdown) for the
// hover, whose only links are the ones the caller built.
import type { LineAttribution } from './protocol';
import { escapeMarkdown, plainText, sourceLabel } from './render';

/** Code points of the prompt in the after-line annotation (the whole annotation stays on one line). */
export const ANNOTATION_PROMPT_CHARS = 60;
/** Code points of the prompt in the hover and in the quick pick. */
export const HOVER_PROMPT_CHARS = 200;
/** Turns listed in a hover; the others are counted ("and 3 more"). */
export const HOVER_TURNS = 5;
/** Lines asked for at once (a larger selection is cut to its first lines: the server takes 20,000). */
export const MAX_LINES = 5000;

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/**
 * "3 days ago" for an ISO timestamp, seen at `now` (ms); "" for one that is not a date. A time a little in the
 * future (another machine's clock) is "just now".
 */
export function relativeTime(iso: string, now: number): string {
  const at = Date.parse(iso);
  if (Number.isNaN(at)) {
    return '';
  }
  const ago = now - at;
  const n = (count: number, unit: string): string => `${String(count)} ${unit}${count === 1 ? '' : 's'} ago`;
  if (ago < 45_000) {
    return 'just now';
  }
  if (ago < 90_000) {
    return 'a minute ago';
  }
  if (ago < 45 * MINUTE) {
    return n(Math.round(ago / MINUTE), 'minute');
  }
  if (ago < 90 * MINUTE) {
    return 'an hour ago';
  }
  if (ago < 22 * HOUR) {
    return n(Math.round(ago / HOUR), 'hour');
  }
  if (ago < 36 * HOUR) {
    return 'yesterday';
  }
  if (ago < 26 * DAY) {
    return n(Math.max(2, Math.round(ago / DAY)), 'day');
  }
  if (ago < 45 * DAY) {
    return 'a month ago';
  }
  if (ago < 320 * DAY) {
    return n(Math.max(2, Math.round(ago / (30.4 * DAY))), 'month');
  }
  if (ago < 548 * DAY) {
    return 'a year ago';
  }
  return n(Math.max(2, Math.round(ago / (365.25 * DAY))), 'year');
}

/** The agent's name as one short plain line. */
function agentName(source: string): string {
  return plainText(sourceLabel(source), 40);
}

/**
 * The after-line annotation: "Claude Code · 3 days ago · make the cache TTL configurable", one plain line of at
 * most about 120 characters (a decoration shows its text as it is: no Markdown, but control and bidirectional
 * characters would still reorder or break the line).
 */
export function annotationText(line: LineAttribution, now: number): string {
  const parts = [agentName(line.source)];
  const when = relativeTime(line.timestamp, now);
  if (when.length > 0) {
    parts.push(when);
  }
  const prompt = plainText(line.prompt, ANNOTATION_PROMPT_CHARS);
  if (prompt.length > 0) {
    parts.push(prompt);
  }
  return parts.join(' · ');
}

/**
 * The lines of a selection or of the cursor, 0-based and inclusive, as `pimem/lineHistory` takes them: a
 * selection that ends at the start of a line does not include that line; at most MAX_LINES lines.
 */
export function selectedLines(start: { line: number; character: number }, end: { line: number; character: number }): { first: number; last: number } {
  const first = Math.min(start.line, end.line);
  let last = Math.max(start.line, end.line);
  const tail = start.line > end.line || (start.line === end.line && start.character > end.character) ? start : end;
  if (last > first && tail.character === 0) {
    last -= 1;
  }
  return { first, last: Math.min(last, first + MAX_LINES - 1) };
}

/** "line 12", "lines 3–5, 9" for 0-based lines (people count from 1). */
export function lineRanges(lines: readonly number[]): string {
  const sorted = [...new Set(lines)].sort((a, b) => a - b);
  const ranges: string[] = [];
  for (let i = 0; i < sorted.length; ) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === (sorted[j] ?? 0) + 1) {
      j++;
    }
    const a = (sorted[i] ?? 0) + 1;
    const b = (sorted[j] ?? 0) + 1;
    ranges.push(a === b ? String(a) : `${String(a)}–${String(b)}`);
    i = j + 1;
  }
  return `${sorted.length === 1 ? 'line' : 'lines'} ${ranges.join(', ')}`;
}

/** One turn's edits among the asked lines. */
export interface TurnLines {
  sessionId: string;
  turnId: string;
  source: string;
  timestamp: string;
  prompt: string;
  tools: string[];
  lines: number[];
  confidences: string[];
}

/** A conversation and its turns that wrote asked lines, newest turn first. */
export interface ConversationLines {
  sessionId: string;
  source: string;
  turns: TurnLines[];
}

const CONFIDENCE_ORDER = ['exact', 'line', 'moved'];

function newestFirst(a: { timestamp: string }, b: { timestamp: string }): number {
  const ta = Date.parse(a.timestamp);
  const tb = Date.parse(b.timestamp);
  return (Number.isNaN(tb) ? 0 : tb) - (Number.isNaN(ta) ? 0 : ta);
}

/**
 * The attributions grouped by conversation (newest turn first), each conversation's turns newest first, each turn
 * with its lines in order, its tools and its confidences (exact, line, moved).
 */
export function groupByConversation(lines: readonly LineAttribution[]): ConversationLines[] {
  const conversations = new Map<string, ConversationLines>();
  const turns = new Map<string, TurnLines>();
  for (const attribution of lines) {
    const key = JSON.stringify([attribution.sessionId, attribution.turnId]);
    let turn = turns.get(key);
    if (turn === undefined) {
      turn = {
        sessionId: attribution.sessionId,
        turnId: attribution.turnId,
        source: attribution.source,
        timestamp: attribution.timestamp,
        prompt: attribution.prompt,
        tools: [],
        lines: [],
        confidences: [],
      };
      turns.set(key, turn);
      let conversation = conversations.get(attribution.sessionId);
      if (conversation === undefined) {
        conversation = { sessionId: attribution.sessionId, source: attribution.source, turns: [] };
        conversations.set(attribution.sessionId, conversation);
      }
      conversation.turns.push(turn);
    }
    turn.lines.push(attribution.line);
    if (attribution.tool.length > 0 && !turn.tools.includes(attribution.tool)) {
      turn.tools.push(attribution.tool);
    }
    if (!turn.confidences.includes(attribution.confidence)) {
      turn.confidences.push(attribution.confidence);
    }
  }
  for (const turn of turns.values()) {
    turn.lines.sort((a, b) => a - b);
    turn.confidences.sort((a, b) => CONFIDENCE_ORDER.indexOf(a) - CONFIDENCE_ORDER.indexOf(b));
  }
  const result = [...conversations.values()];
  for (const conversation of result) {
    conversation.turns.sort(newestFirst);
  }
  return result.sort((a, b) => newestFirst(a.turns[0] ?? { timestamp: '' }, b.turns[0] ?? { timestamp: '' }));
}

/** What a turn's line shows besides its agent and time: "lines 3–5 · Edit · exact match". */
function turnDetail(turn: TurnLines): string {
  const how: Record<string, string> = { exact: 'exact match', line: 'line match', moved: 'moved since' };
  return [lineRanges(turn.lines), ...turn.tools.slice(0, 3).map((t) => plainText(t, 40)), ...turn.confidences.map((c) => how[c] ?? plainText(c, 20))].join(' · ');
}

/**
 * The hover: "written by **Claude Code** · 3 days ago · *make the cache TTL configurable*" for each turn that
 * wrote some of the lines (newest first, at most HOVER_TURNS), with the lines, tool and confidence, and an "Open
 * conversation" link whose URI the caller built for that turn (`openUri(turn)`: the turn's position in the
 * flattened, newest-first list). Every stored value is escaped.
 */
export function lineHoverMarkdown(lines: readonly LineAttribution[], now: number, openUri: (index: number) => string): string {
  const turns = groupByConversation(lines)
    .flatMap((c) => c.turns)
    .sort(newestFirst);
  const parts: string[] = [];
  turns.slice(0, HOVER_TURNS).forEach((turn, index) => {
    const head = [`written by **${escapeMarkdown(agentName(turn.source))}**`];
    const when = relativeTime(turn.timestamp, now);
    if (when.length > 0) {
      head.push(escapeMarkdown(when));
    }
    const prompt = plainText(turn.prompt, HOVER_PROMPT_CHARS);
    if (prompt.length > 0) {
      head.push(`*${escapeMarkdown(prompt)}*`);
    }
    parts.push(`${head.join(' · ')}  \n${escapeMarkdown(turnDetail(turn))} · [Open conversation](${openUri(index)})`);
  });
  const more = turns.length - HOVER_TURNS;
  if (more > 0) {
    parts.push(`and ${String(more)} more ${more === 1 ? 'turn' : 'turns'}: Pi Memory: Which Conversation Wrote This?`);
  }
  return `**Pi Memory**\n\n${parts.join('\n\n---\n\n')}`;
}

/** The turns a hover lists, in its order (the link of the i-th opens `hoverTurns(lines)[i]`). */
export function hoverTurns(lines: readonly LineAttribution[]): TurnLines[] {
  return groupByConversation(lines)
    .flatMap((c) => c.turns)
    .sort(newestFirst)
    .slice(0, HOVER_TURNS);
}

/** A quick pick row: a separator per conversation, then one row per turn of it. */
export type PickRow =
  | { kind: 'separator'; label: string }
  | { kind: 'turn'; label: string; description: string; detail: string; turn: TurnLines };

/**
 * The rows of "Which conversation wrote this?": per conversation (newest first) a separator "Claude Code
 * conversation", then its turns: the prompt, "3 days ago", "lines 3–5 · Edit · exact match". Plain text only.
 */
export function pickRows(lines: readonly LineAttribution[], now: number): PickRow[] {
  const rows: PickRow[] = [];
  for (const conversation of groupByConversation(lines)) {
    rows.push({ kind: 'separator', label: `${agentName(conversation.source)} conversation` });
    for (const turn of conversation.turns) {
      const prompt = plainText(turn.prompt, HOVER_PROMPT_CHARS);
      rows.push({
        kind: 'turn',
        label: prompt.length > 0 ? prompt : '(no prompt)',
        description: [agentName(turn.source), relativeTime(turn.timestamp, now)].filter((s) => s.length > 0).join(' · '),
        detail: turnDetail(turn),
        turn,
      });
    }
  }
  return rows;
}
