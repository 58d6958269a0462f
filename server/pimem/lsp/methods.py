"""The names of pimem's custom LSP methods: the single place they are spelled on the Python side
(docs/lsp-extensions.md documents each; client-vscode/src/protocol.ts mirrors them, and
tests/lsp/test_protocol_sync.py checks that the three agree)."""

RECALL = "pimem/recall"
SYNC = "pimem/sync"
BACKFILL = "pimem/backfill"   # deprecated: the old name of pimem/sync (same params, same result)
MIGRATE_CODEX = "pimem/migrateCodex"
STATUS = "pimem/status"
SOURCES = "pimem/sources"
TURN = "pimem/turn"
AGENT_RECALL = "pimem/agentRecall"   # the editor's language-model tool: recall_memory, redacted
SESSIONS = "pimem/sessions"
SESSION = "pimem/session"
FILE_HISTORY = "pimem/fileHistory"
LINE_HISTORY = "pimem/lineHistory"

INDEX_CHANGED = "pimem/indexChanged"
SYNC_STATUS = "pimem/syncStatus"

DEPRECATED = {BACKFILL: SYNC}   # an old name -> the method it is an alias of
REQUESTS = (RECALL, SYNC, BACKFILL, MIGRATE_CODEX, STATUS, SOURCES, TURN, AGENT_RECALL, SESSIONS, SESSION,
            FILE_HISTORY, LINE_HISTORY)
NOTIFICATIONS = (INDEX_CHANGED, SYNC_STATUS)
