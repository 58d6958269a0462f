// Arguments of the history commands (pimem.openConversation, pimem.continueInPi) and the resume command of a
// migrated session: checked here, because command arguments come from command links, tree rows and other
// extensions. No `vscode` import (unit-tested under plain Node).
import type { MigratedSession, MigrationReport } from './protocol';
import { piResume, type ResumeCommand } from './resumeArgs';

export interface OpenConversationArgs {
  sessionId: string;
  turnId?: string;
  /** The file an edit of that turn wrote (the memory of each line): its entry in the turn is highlighted. */
  file?: string;
  /** The tool of that edit ("Edit", "apply_patch"): highlighted among the turn's tools. */
  tool?: string;
}

/** Arguments of pimem.openConversation as a command link, a tree item or another extension gives them. */
export function parseOpenConversationArgs(raw: unknown): OpenConversationArgs | undefined {
  const first: unknown = Array.isArray(raw) ? raw[0] : raw;
  if (typeof first !== 'object' || first === null) {
    return undefined;
  }
  const { sessionId, turnId, file, tool } = first as Record<string, unknown>;
  if (typeof sessionId !== 'string' || sessionId.length === 0 || sessionId.length > 1024) {
    return undefined;
  }
  if (turnId !== undefined && (typeof turnId !== 'string' || turnId.length === 0 || turnId.length > 1024)) {
    return undefined;
  }
  const args: OpenConversationArgs = turnId === undefined ? { sessionId } : { sessionId, turnId };
  // only marks to highlight: a malformed one is dropped, the conversation still opens
  if (turnId !== undefined && typeof file === 'string' && file.length > 0 && file.length <= 4096) {
    args.file = file;
  }
  if (turnId !== undefined && typeof tool === 'string' && tool.length > 0 && tool.length <= 200) {
    args.tool = tool;
  }
  return args;
}

/** A Codex session id as pimem/migrateCodex takes it: "codex:" and the thread's UUID. */
const CODEX_SESSION_ID = /^codex:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

export function isCodexSessionId(value: unknown): value is string {
  return typeof value === 'string' && CODEX_SESSION_ID.test(value);
}

/**
 * `pi --session <file>` for a Pi session file, by the server's rules for resume commands (an absolute path free of
 * control characters, quoted for a POSIX shell); undefined for any other path. Used when the session was migrated
 * before, whose report names the Pi file but carries no command. Only ever copied, never typed into a shell.
 */
export function piResumeCommand(piPath: string): string | undefined {
  if (!piPath.startsWith('/') || /[\p{Cc}\u2028\u2029]/u.test(piPath)) {
    return undefined;
  }
  const quoted = /^[\w@%+=:,./-]+$/u.test(piPath) ? piPath : `'${piPath.replaceAll("'", `'"'"'`)}'`;
  return `pi --session ${quoted}`;
}

/**
 * How the one session a report is about can be resumed, and whether it was written now: `resume`, the program and
 * arguments a terminal runs (no shell reads them); `command`, the POSIX shell line for the clipboard.
 */
export function migratedResume(
  report: MigrationReport,
): { command: string | undefined; resume: ResumeCommand | undefined; fresh: boolean; reason?: string } | undefined {
  const written: MigratedSession | undefined = report.migrated[0];
  if (written !== undefined) {
    // null: the server refused the path for a resume command (a server without the field: the same rules here)
    if (written.resumeCommand === null) {
      return { command: undefined, resume: undefined, fresh: true };
    }
    const command = written.resumeCommand ?? piResumeCommand(written.piPath);
    return { command, resume: piResume(written.piPath, report.folder), fresh: true };
  }
  const skipped = report.skipped[0];
  if (skipped !== undefined) {
    const before = skipped.reason === 'already migrated';
    return {
      command: before ? piResumeCommand(skipped.piPath) : undefined,
      resume: before ? piResume(skipped.piPath, report.folder) : undefined,
      fresh: false,
      reason: skipped.reason,
    };
  }
  return undefined;
}

/**
 * The session id a command got: the id itself, {sessionId} (a command link, another extension), or a row of the
 * Sessions / File History views ({session: {sessionId}}).
 */
export function sessionIdArgument(raw: unknown): unknown {
  const first: unknown = Array.isArray(raw) ? raw[0] : raw;
  if (typeof first !== 'object' || first === null) {
    return first;
  }
  const { sessionId, session } = first as { sessionId?: unknown; session?: unknown };
  if (sessionId !== undefined) {
    return sessionId;
  }
  return typeof session === 'object' && session !== null ? (session as { sessionId?: unknown }).sessionId : undefined;
}
