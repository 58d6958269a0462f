"""The names of pimem's custom LSP methods: the single place they are spelled on the Python side
(docs/lsp-extensions.md documents each; client-vscode/src/protocol.ts mirrors them)."""

RECALL = "pimem/recall"
BACKFILL = "pimem/backfill"
MIGRATE_CODEX = "pimem/migrateCodex"
STATUS = "pimem/status"
TURN = "pimem/turn"
AGENT_RECALL = "pimem/agentRecall"   # the editor's language-model tool: recall_memory, redacted
SESSIONS = "pimem/sessions"
SESSION = "pimem/session"
FILE_HISTORY = "pimem/fileHistory"

INDEX_CHANGED = "pimem/indexChanged"
SYNC_STATUS = "pimem/syncStatus"

REQUESTS = (RECALL, BACKFILL, MIGRATE_CODEX, STATUS, TURN, AGENT_RECALL, SESSIONS, SESSION, FILE_HISTORY)
NOTIFICATIONS = (INDEX_CHANGED, SYNC_STATUS)
