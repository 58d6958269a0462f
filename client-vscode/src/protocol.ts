// The pimem/* protocol as seen by the client. Mirrors docs/lsp-extensions.md (the single source of truth):
// keep method names and interfaces here in step with that document, and nowhere else.
import { NotificationType, RequestType } from 'vscode-languageclient/node';

/** A source's name ("pi", "gemini", "copilot-cli", …). The list is the server's (pimem/sources): a client
 *  shows a name it does not know as it is. */
export type Source = string;
/** The sources every pimem server reads: the agent filters when the server cannot list its own. */
export const SOURCES: readonly Source[] = ['pi', 'claude', 'codex'];
/** What a source's name looks like (a value the webviews send back is checked against it). */
export const SOURCE_NAME = /^[a-z][a-z0-9-]{0,31}$/;

export namespace Methods {
  export const RECALL = 'pimem/recall';
  export const SYNC = 'pimem/sync'; // pimem/backfill is its deprecated alias (server side only)
  export const MIGRATE_CODEX = 'pimem/migrateCodex';
  export const STATUS = 'pimem/status';
  export const SOURCES = 'pimem/sources';
  export const INDEX_CHANGED = 'pimem/indexChanged';
  export const SYNC_STATUS = 'pimem/syncStatus';
}

// ---- initialization --------------------------------------------------------------------------------------

export interface PimemInitializationOptions {
  dbPath?: string;
  autoSync?: boolean;
  sources?: Record<Source, boolean>;
  hover?: 'off' | 'word';
}

// ---- pimem/recall ----------------------------------------------------------------------------------------

export interface RecallParams {
  entities?: string[];
  text?: string;
  limit?: number;
  sources?: Source[];
  cwd?: string;
}

export interface RecallRow {
  turnId: string;
  sessionId: string;
  source: Source;
  cwd: string;
  ts: number;
  userText: string;
  replyText: string;
  toolNames: string[];
  hits: number;
  jsonlPath: string;
  line: number | null;
  resumeCommand: string | null;
}

export interface RecallResult {
  entities: string[];
  results: RecallRow[];
  markdown: string;
}

export const RecallRequest = new RequestType<RecallParams, RecallResult, void>(Methods.RECALL);

// ---- pimem/sync ------------------------------------------------------------------------------------------

export interface BackfillParams {
  force?: boolean;
}

export interface SyncIssue {
  source: Source;
  jsonlPath: string | null;
  error: string;
}

export interface SyncStats {
  pi: number;
  claude: number;
  codex: number;
  sources?: Record<Source, number>; // every source (servers before pimem/sources have only the three above)
  turns: number;
  scannedFiles: number;
  skippedFiles: number;
  issues: SyncIssue[];
  cancelled: boolean;
  durationMs: number;
  storedMs: number;
}

export const BackfillRequest = new RequestType<BackfillParams, SyncStats, void>(Methods.SYNC);

// ---- pimem/migrateCodex ----------------------------------------------------------------------------------

export interface MigrateCodexParams {
  workspaceFolder?: string;
  dryRun?: boolean;
}

export interface MigrationReport {
  folder: string;
  dryRun: boolean;
  migrated: { codexSessionId: string; codexPath: string; piPath: string; messages: number }[];
  skipped: { codexSessionId: string; piPath: string; reason: string }[];
  issues: { jsonlPath: string; error: string }[];
}

export interface MigrateCodexResult {
  reports: MigrationReport[];
}

export const MigrateCodexRequest = new RequestType<MigrateCodexParams, MigrateCodexResult, void>(
  Methods.MIGRATE_CODEX,
);

// ---- pimem/status ----------------------------------------------------------------------------------------

export type StatusParams = Record<string, never>;

export interface StatusResult {
  dbPath: string;
  sessions: number;
  turns: Record<Source, number>;
  totalTurns: number;
  turnsToIndex: number;
  lastSync: { finishedAt: number; turns: number; issues: number; cancelled: boolean; force: boolean } | null;
  syncing: boolean;
}

export const StatusRequest = new RequestType<StatusParams, StatusResult, void>(Methods.STATUS);

// ---- pimem/sources ---------------------------------------------------------------------------------------

export type SourcesParams = Record<string, never>;

export interface SourceState {
  source: Source;
  label: string;
  read: boolean;
  enabled: boolean;
  present: boolean;
  roots: string[];
}

export interface SourcesResult {
  sources: SourceState[];
}

export const SourcesRequest = new RequestType<SourcesParams, SourcesResult, void>(Methods.SOURCES);

// ---- notifications (server → client) ---------------------------------------------------------------------

export interface IndexChangedParams {
  turns: number;
  sources: Source[];
  totalTurns: number;
}

export const IndexChangedNotification = new NotificationType<IndexChangedParams>(Methods.INDEX_CHANGED);

export interface SyncStatusParams {
  syncing: boolean;
  filesDone: number;
  filesTotal: number;
  turnsIndexed: number; // second phase of a large sync: stored turns being indexed
  turnsToIndex: number; // 0 while files are being parsed
  force: boolean;
  token: string | null;
}

export const SyncStatusNotification = new NotificationType<SyncStatusParams>(Methods.SYNC_STATUS);

// ---- error codes used by the server (JSON-RPC / LSP) -----------------------------------------------------

export namespace ErrorCodes {
  export const InvalidParams = -32602;
  export const RequestCancelled = -32800;
  export const RequestFailed = -32803;
}

// ---- recall explained, whole turns, the agents' recall, store upgrades -----------------------------------
// Kept in one block of its own (declaration merging extends the interfaces and the Methods namespace above)
// so that it merges cleanly with concurrent changes to the blocks above; fold it in when convenient.

export namespace Methods {
  export const TURN = 'pimem/turn';
  export const AGENT_RECALL = 'pimem/agentRecall';
}

export interface RecallTerm {
  term: string;
  turns: number; // estimated turns holding it (from the index)
  weight: number; // integer ≥ 1
}

export interface RecallResult {
  terms?: RecallTerm[]; // only for `text`: each term of `entities`, in the same order
}

export interface RecallRow {
  matched: string[]; // the entities / terms found in this turn, in the order of `entities`
  truncated: boolean; // a field was cut: pimem/turn {turnId} has the whole turn
}

export interface StatusResult {
  upgradeRequired: string | null; // the store was written by a newer pimem: the one-line "please upgrade"
}

// ---- pimem/turn ------------------------------------------------------------------------------------------

export interface TurnParams {
  turnId: string;
}

/** A RecallRow without `hits`, `matched` and `truncated`, every field whole. */
export type TurnRow = Omit<RecallRow, 'hits' | 'matched' | 'truncated'>;

export interface TurnResult {
  turn: TurnRow | null; // null: no such turn in the store (any more)
}

export const TurnRequest = new RequestType<TurnParams, TurnResult, void>(Methods.TURN);

// ---- pimem/agentRecall -----------------------------------------------------------------------------------

/**
 * recall_memory's arguments (docs/mcp.md: `entities`, `limit`, `sources`, `cwd`) as the model gave them: the
 * server validates them as `pimem mcp` does; plus `redact`, which is the client's setting and never the model's.
 */
export interface AgentRecallParams {
  [argument: string]: unknown;
  redact: boolean;
}

/** A RecallRow as agents get it: without resumeCommand. */
export type AgentRow = Omit<RecallRow, 'resumeCommand'>;

export interface AgentRecallResult {
  results: AgentRow[];
  markdown: string; // recall_memory's content[0] text
}

export const AgentRecallRequest = new RequestType<AgentRecallParams, AgentRecallResult, void>(Methods.AGENT_RECALL);

// ---- sessions, one session, the memory of each file (issue 15) --------------------------------------------
// A block of its own, like the one above, so that it merges cleanly with concurrent changes.

export namespace Methods {
  export const SESSIONS = 'pimem/sessions';
  export const SESSION = 'pimem/session';
  export const FILE_HISTORY = 'pimem/fileHistory';
}

export type FileAction = 'read' | 'write' | 'edit' | 'delete';

// ---- pimem/sessions --------------------------------------------------------------------------------------

export interface SessionsParams {
  folders?: string[]; // paths or file:// URIs: sessions whose cwd is one of them or below (default: all)
  sources?: Source[];
  limit?: number; // 1..500, default 200
  offset?: number;
}

export interface SessionSummary {
  sessionId: string;
  source: Source;
  cwd: string;
  jsonlPath: string;
  startedAt: number;
  lastTs: number; // its newest turn (the order: lastTs desc, then sessionId)
  turnCount: number;
  firstPrompt: string; // cut to 300 characters ("" when it has none)
  truncated: boolean;
  resumeCommand: string | null;
}

export interface SessionsResult {
  sessions: SessionSummary[];
  total: number; // all that match, not only this page
}

export const SessionsRequest = new RequestType<SessionsParams, SessionsResult, void>(Methods.SESSIONS);

// ---- pimem/session ---------------------------------------------------------------------------------------

export interface SessionParams {
  sessionId: string;
  turnId?: string; // centre the window on this turn (default: start at the first turn)
  before?: number; // 0..200, default 50
  after?: number; // 0..200, default 50
}

/** A RecallRow without hits and matched (long fields cut, `truncated`), with the files its tool calls touched. */
export type SessionTurn = Omit<RecallRow, 'hits' | 'matched'> & { files: { path: string; action: FileAction }[] };

export interface SessionResult {
  sessionId: string;
  source: Source;
  cwd: string;
  jsonlPath: string;
  startedAt: number;
  turnCount: number;
  firstPosition: number; // 0-based position of turns[0] in the session
  resumeCommand: string | null;
  turns: SessionTurn[];
}

export const SessionRequest = new RequestType<SessionParams, SessionResult, void>(Methods.SESSION);

// ---- pimem/fileHistory -----------------------------------------------------------------------------------

export interface FileHistoryParams {
  path: string; // absolute path or file:// URI
  limit?: number; // 1..200 sessions, default 50
}

export interface FileSession {
  sessionId: string;
  source: Source;
  cwd: string;
  jsonlPath: string;
  actions: FileAction[]; // what this session's calls did to the file
  turns: number; // touching turns in this session
  lastTs: number; // the newest touching turn
  turnId: string; // that turn
  prompt: string; // that turn's user text, cut to 300 characters
  truncated: boolean;
  resumeCommand: string | null;
}

export interface FileHistoryResult {
  path: string; // as matched (normalised)
  total: number; // distinct sessions that touched the file
  edited: number; // of them, those whose calls wrote, edited or deleted it
  sessions: FileSession[]; // newest touching turn first
}

export const FileHistoryRequest = new RequestType<FileHistoryParams, FileHistoryResult, void>(Methods.FILE_HISTORY);

// ---- pimem/lineHistory: which conversation wrote each line (issue 23) -------------------------------------
// A block of its own, so that it merges cleanly with concurrent changes.

export namespace Methods {
  export const LINE_HISTORY = 'pimem/lineHistory';
}

export interface LineHistoryParams {
  uri: string; // file:// URI or absolute path
  range?: { start: { line: number; character: number }; end: { line: number; character: number } }; // default: whole document
  text?: string; // the current buffer (unsaved edits included); default: the file on disk
}

export interface LineAttribution {
  line: number; // 0-based
  confidence: 'exact' | 'line' | 'moved';
  sessionId: string; // pimem/session {sessionId, turnId} opens the conversation at that turn
  turnId: string;
  source: Source;
  timestamp: string; // ISO 8601 UTC
  prompt: string; // the turn's user text: first line, at most 200 characters
  tool: string;
  toolCallId: string | null;
  editStartLine: number | null; // exact only: where this call's block starts
}

export interface LineHistoryResult {
  path: string;
  lines: LineAttribution[]; // only attributed lines, in line order
  gitUsed: boolean;
}

export const LineHistoryRequest = new RequestType<LineHistoryParams, LineHistoryResult, void>(Methods.LINE_HISTORY);

// ---- pimem/migrateCodex for one session, pimem/syncStatus error ------------------------------------------

export interface MigrateCodexParams {
  sessionId?: string; // "codex:<thread id>": migrate only this session (its cwd decides the Pi folder)
}

export interface MigratedSession {
  codexSessionId: string;
  codexPath: string;
  piPath: string;
  messages: number;
  resumeCommand?: string | null; // `pi --session <the Pi session file>`; null: a path resume commands refuse
}

export interface SyncStatusParams {
  error?: string; // one line: the sync stopped because the store could not be used
}

// ---- recall paging (issue 15; a server without it ignores offset/withTotal and answers no total) ---------

export interface RecallParams {
  offset?: number; // ≥ 0: skip the first `offset` results (same order); offset + limit ≤ 1,000
  withTotal?: boolean; // also count the matching turns
}

export interface RecallResult {
  total?: number; // with withTotal: matching turns (copies collapsed), exact up to 1,000
  totalCapped?: boolean; // true: more than `total` match ("1,000+")
}

// ---- recall across the shared PostgreSQL store (issue 24; docs/lsp-extensions.md, pimem/recall "Scope") ----
// A block of its own, like the ones above, so that it merges cleanly with concurrent changes.

/** local: this machine's store (the default); mine: + my turns pushed from my other machines;
 * team: every member's shared turns; all: this store + the shared store. */
export type RecallScope = 'local' | 'mine' | 'team' | 'all';

export interface RecallParams {
  scope?: RecallScope; // default 'local'
}

export interface RecallRow {
  author?: string; // only on rows of the shared store: the member (database role) who pushed it
  machine?: string; // ... and the machine it was pushed from (no resumeCommand, no jsonlPath for these)
}

/** What the shared store gave: its rows come within the timeout, or the answer holds the local rows only. */
export interface SharedPart {
  state: 'ok' | 'timeout' | 'unreachable' | 'unconfigured' | 'error';
  rows: number; // rows of this page that came from the shared store
  durationMs: number;
  message?: string; // one line, when state is not 'ok'
}

export interface RecallResult {
  shared?: SharedPart; // only when `scope` is given and is not 'local'
}

export interface AgentRecallResult {
  shared?: SharedPart; // recall_memory's `scope` (docs/mcp.md)
}

// ---- is a shared store configured? (issue 24, the sidebar's scope switch) --------------------------------
// The sidebar shows its scope switch only when pimem/status says a shared store is configured (a server older
// than the field leaves it out: the sidebar then probes with one scoped recall).

export interface StatusResult {
  shared?: { configured: boolean } | null;
}
