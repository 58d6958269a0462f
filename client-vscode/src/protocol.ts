// The pimem/* protocol as seen by the client. Mirrors docs/lsp-extensions.md (the single source of truth):
// keep method names and interfaces here in step with that document, and nowhere else.
import { NotificationType, RequestType } from 'vscode-languageclient/node';

export type Source = 'pi' | 'claude' | 'codex';
export const SOURCES: readonly Source[] = ['pi', 'claude', 'codex'];

export namespace Methods {
  export const RECALL = 'pimem/recall';
  export const SYNC = 'pimem/sync'; // pimem/backfill is its deprecated alias (server side only)
  export const MIGRATE_CODEX = 'pimem/migrateCodex';
  export const STATUS = 'pimem/status';
  export const INDEX_CHANGED = 'pimem/indexChanged';
  export const SYNC_STATUS = 'pimem/syncStatus';
}

// ---- initialization --------------------------------------------------------------------------------------

export interface PimemInitializationOptions {
  dbPath?: string;
  autoSync?: boolean;
  sources?: { pi?: boolean; claude?: boolean; codex?: boolean };
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
  turns: { pi: number; claude: number; codex: number };
  totalTurns: number;
  turnsToIndex: number;
  lastSync: { finishedAt: number; turns: number; issues: number; cancelled: boolean; force: boolean } | null;
  syncing: boolean;
}

export const StatusRequest = new RequestType<StatusParams, StatusResult, void>(Methods.STATUS);

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
