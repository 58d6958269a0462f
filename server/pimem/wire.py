"""The JSON views of pimem's results: the one place that spells the protocol's field names.

The services return plain dataclasses; every client gets them through the functions here, so one
wire format serves ``pimem … --json``, the language server's results and notifications
(docs/lsp-extensions.md defines each object) and the agent tools' structured content (docs/mcp.md).
Keys are camelCase; a function per object, named after it. No I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pimem.models import SyncIssue, SyncProgress, SyncStats
from pimem.recall.format import resume_command, session_resume_command
from pimem.recall.query import MAX_PATH_CHARS, MAX_TURN_ID_CHARS, TEXT_CUT_CHARS, TOOL_NAME_CUT_CHARS, TOOL_NAMES_CUT
from pimem.recall.rows import RecallRow

if TYPE_CHECKING:   # the types only: the CLI's recall must not import the migration (nor its sync engine)
    from pimem.filehistory import FileHistory, FileSession
    from pimem.lineblame import LineAttribution, LineHistory
    from pimem.migrate import MigrationReport
    from pimem.recall.freetext import Term
    from pimem.sessions import SessionsPage, SessionSummary, SessionWindow
    from pimem.share.scope import SharedReport
    from pimem.status import SourceState, StoreStatus

JSON = dict[str, Any]

# Fields of a recall row an agent gets. resumeCommand is left out on purpose: it is a shell command
# built from stored data, and nothing from a transcript is offered to an agent to execute.
AGENT_HIDDEN_FIELDS = ("resumeCommand",)


def sync_issue(issue: SyncIssue) -> JSON:
    return {"source": issue.source, "jsonlPath": issue.jsonl_path, "error": issue.error}


def sync_stats(stats: SyncStats) -> JSON:
    """``SyncStats``: the result of ``pimem/sync`` and of ``pimem sync --json``."""
    return {
        "pi": stats.pi,
        "claude": stats.claude,
        "codex": stats.codex,
        "sources": dict(stats.files_by_source),
        "turns": stats.turns,
        "scannedFiles": stats.scanned_files,
        "skippedFiles": stats.skipped_files,
        "issues": [sync_issue(issue) for issue in stats.issues],
        "cancelled": stats.cancelled,
        "durationMs": stats.duration_ms,
        "storedMs": stats.stored_ms,
    }


def _row_fields(row: RecallRow) -> JSON:
    return {
        "turnId": row.turn_id, "sessionId": row.session_id, "source": row.source, "cwd": row.cwd,
        "ts": row.ts, "userText": row.user_text, "replyText": row.reply_text, "toolNames": row.tool_names,
        "hits": row.hits, "jsonlPath": row.jsonl_path, "line": row.line,
        "resumeCommand": resume_command(row), "matched": row.matched, "truncated": False,
        **({"author": row.author, "machine": row.machine} if row.author is not None else {}),
    }


def recall_row(row: RecallRow) -> JSON:
    """``RecallRow``, a row of a recall answer: every long field cut to its limit (a prefix;
    ``truncated`` is then true; :attr:`RecallRow.truncated`)."""
    result = _row_fields(row)
    if not row.truncated:
        return result
    result.update(
        turnId=row.turn_id[:MAX_TURN_ID_CHARS], sessionId=row.session_id[:MAX_TURN_ID_CHARS],
        cwd=row.cwd[:MAX_PATH_CHARS], jsonlPath=row.jsonl_path[:MAX_PATH_CHARS],
        userText=row.user_text[:TEXT_CUT_CHARS], replyText=row.reply_text[:TEXT_CUT_CHARS],
        toolNames=[name[:TOOL_NAME_CUT_CHARS] for name in row.tool_names[:TOOL_NAMES_CUT]],
        truncated=True)
    if row.author is not None:   # names chosen by another member: cut like ids
        result.update(author=row.author[:MAX_TURN_ID_CHARS], machine=(row.machine or "")[:MAX_TURN_ID_CHARS])
    return result


def turn_row(row: RecallRow) -> JSON:
    """``TurnRow``, the whole turn (``pimem/turn``, ``pimem show --json``): nothing cut, no ``hits``,
    ``matched`` or ``truncated``."""
    result = _row_fields(row)
    del result["hits"], result["truncated"], result["matched"]
    return result


def term(chosen: Term) -> JSON:
    """``RecallTerm``: a term a free-text recall searched."""
    return {"term": chosen.text, "turns": chosen.turns, "weight": chosen.weight}


def recall_answer(entities: Sequence[str], rows: Sequence[RecallRow], terms: Sequence[Term] | None = None,
                  total: int | None = None, total_capped: bool | None = None) -> JSON:
    """``RecallResult`` without its Markdown (what ``pimem recall --text --json`` prints): what was
    searched, the terms of a free-text recall, the rows, and the count when one was asked for."""
    answer: JSON = {"entities": list(entities)}
    if terms is not None:
        answer["terms"] = [term(chosen) for chosen in terms]
    answer["results"] = [recall_row(row) for row in rows]
    if total is not None:
        answer["total"] = total
        answer["totalCapped"] = bool(total_capped)
    return answer


def shared_report(report: SharedReport) -> JSON:
    """``SharedPart`` (``shared`` of a recall answer with a ``scope`` other than ``local``)."""
    result: JSON = {"state": report.state, "rows": report.rows, "durationMs": report.ms}
    if report.message is not None:
        result["message"] = report.message
    return result


def store_status(status: StoreStatus, *, syncing: bool | None = None) -> JSON:
    """``StatusResult`` (``pimem/status``; ``syncing`` is the server's) and ``pimem status --json``."""
    result: JSON = {
        "dbPath": status.db_path,
        "sessions": status.sessions,
        "turns": status.turns,
        "totalTurns": status.total_turns,
        "turnsToIndex": status.turns_to_index,
        "lastSync": status.last_sync,
        "upgradeRequired": status.upgrade_required,
        "shared": {"configured": status.shared_configured},
    }
    if syncing is not None:
        result["syncing"] = syncing
    return result


def source_states(states: list[SourceState]) -> JSON:
    """``SourcesResult`` (``pimem/sources``)."""
    return {"sources": [{"source": state.source, "label": state.label, "read": state.read, "enabled": state.enabled,
                         "present": state.present, "roots": list(state.roots)} for state in states]}


def migration_report(report: MigrationReport) -> JSON:
    """``MigrationReport`` (``pimem/migrateCodex``, ``pimem migrate-codex --json``)."""
    return {
        "folder": report.folder,
        "dryRun": report.dry_run,
        "migrated": [{"codexSessionId": m.codex_session_id, "codexPath": m.codex_path, "piPath": m.pi_path,
                      "messages": m.messages, "resumeCommand": m.resume_command} for m in report.migrated],
        "skipped": [{"codexSessionId": s.codex_session_id, "piPath": s.pi_path, "reason": s.reason}
                    for s in report.skipped],
        "issues": [{"jsonlPath": i.jsonl_path, "error": i.error} for i in report.issues],
    }


def agent_row(row: RecallRow) -> JSON:
    """A recall row as agents get it (``recall_memory``, ``pimem/agentRecall``): the ``pimem recall
    --json`` row without what is not for them (:data:`AGENT_HIDDEN_FIELDS`)."""
    view = recall_row(row)
    for field in AGENT_HIDDEN_FIELDS:
        view.pop(field, None)
    return view


def session_view(window: SessionWindow) -> JSON:
    """``read_session``'s structured content: the session and its turns (agent rows, not scored)."""
    turns = []
    for row in window.turns:
        turn = agent_row(row)
        turn.pop("hits", None)
        turn.pop("matched", None)   # a session is read, not searched
        turns.append(turn)
    return {"sessionId": window.session_id[:MAX_TURN_ID_CHARS], "source": window.source,
            "cwd": window.cwd[:MAX_PATH_CHARS], "jsonlPath": window.jsonl_path[:MAX_PATH_CHARS],
            "turnCount": window.turn_count,
            "firstPosition": window.first_position, "turns": turns}


def _resume(session: SessionSummary | SessionWindow | FileSession) -> str | None:
    return session_resume_command(session.source, session.session_id, session.cwd, session.jsonl_path)


def _cut_prompt(text: str) -> tuple[str, bool]:
    from pimem.sessions import cut_prompt  # the rule lives with the sessions service

    return cut_prompt(text)


def session_summary(summary: SessionSummary) -> JSON:
    """``SessionSummary``, a row of ``pimem/sessions`` (the first prompt cut, ``truncated``)."""
    prompt, cut = _cut_prompt(summary.first_prompt)
    return {"sessionId": summary.session_id[:MAX_TURN_ID_CHARS], "source": summary.source,
            "cwd": summary.cwd[:MAX_PATH_CHARS], "jsonlPath": summary.jsonl_path[:MAX_PATH_CHARS],
            "startedAt": summary.started_at, "lastTs": summary.last_ts, "turnCount": summary.turn_count,
            "firstPrompt": prompt, "truncated": cut,
            "resumeCommand": _resume(summary)}


def sessions_page(page: SessionsPage) -> JSON:
    """``SessionsResult`` (``pimem/sessions``, ``pimem sessions --json``)."""
    return {"sessions": [session_summary(session) for session in page.sessions], "total": page.total}


def session_window(window: SessionWindow) -> JSON:
    """``SessionResult`` (``pimem/session``): each turn a recall row without hits and matched (long
    fields cut, ``truncated``), with the files its tool calls touched."""
    turns = []
    for row in window.turns:
        turn = recall_row(row)
        del turn["hits"], turn["matched"]
        turn["files"] = [{"path": path, "action": action} for path, action in window.files.get(row.turn_id, [])]
        turns.append(turn)
    return {"sessionId": window.session_id[:MAX_TURN_ID_CHARS], "source": window.source,
            "cwd": window.cwd[:MAX_PATH_CHARS], "jsonlPath": window.jsonl_path[:MAX_PATH_CHARS],
            "startedAt": window.started_at, "turnCount": window.turn_count, "firstPosition": window.first_position,
            "resumeCommand": _resume(window),
            "turns": turns}


def file_session(session: FileSession) -> JSON:
    """``FileSession``, a row of ``pimem/fileHistory``."""
    prompt, cut = _cut_prompt(session.prompt)
    return {"sessionId": session.session_id[:MAX_TURN_ID_CHARS], "source": session.source,
            "cwd": session.cwd[:MAX_PATH_CHARS], "jsonlPath": session.jsonl_path[:MAX_PATH_CHARS],
            "actions": session.actions, "turns": session.turns, "lastTs": session.last_ts,
            "turnId": session.turn_id[:MAX_TURN_ID_CHARS], "prompt": prompt,
            "truncated": cut or len(session.turn_id) > MAX_TURN_ID_CHARS,
            "resumeCommand": _resume(session)}


def file_history(history: FileHistory) -> JSON:
    """``FileHistoryResult`` (``pimem/fileHistory``, ``pimem file-history --json``)."""
    return {"path": history.path, "total": history.total, "edited": history.edited,
            "sessions": [file_session(session) for session in history.sessions]}


def iso_time(ms: int) -> str:
    """A stored time (Unix ms) as ISO 8601 UTC with milliseconds (``2026-11-01T10:00:05.000Z``)."""
    from datetime import UTC, datetime

    try:
        moment = datetime.fromtimestamp(ms / 1000, UTC)
    except (OverflowError, OSError, ValueError):
        moment = datetime.fromtimestamp(0, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def line_attribution(found: LineAttribution) -> JSON:
    """``LineAttribution``, a line of ``pimem/lineHistory``."""
    return {"line": found.line, "confidence": found.confidence, "sessionId": found.session_id[:MAX_TURN_ID_CHARS],
            "turnId": found.turn_id[:MAX_TURN_ID_CHARS], "source": found.source, "timestamp": iso_time(found.ts),
            "prompt": found.prompt, "tool": found.tool[:TOOL_NAME_CUT_CHARS],
            "toolCallId": None if found.tool_call_id is None else found.tool_call_id[:MAX_TURN_ID_CHARS],
            "editStartLine": found.edit_start_line}


def line_history(history: LineHistory) -> JSON:
    """``LineHistoryResult`` (``pimem/lineHistory``, ``pimem blame --json``)."""
    return {"path": history.path, "lines": [line_attribution(found) for found in history.lines],
            "gitUsed": history.git_used}


def line_runs(history: LineHistory) -> JSON:
    """The ``line_history`` agent tool's view: attributed lines grouped into runs of consecutive lines
    of one call with one confidence, 1-based (an agent reads a few runs, not a row per line)."""
    runs: list[JSON] = []
    for found in history.lines:
        view = line_attribution(found)
        last = runs[-1] if runs else None
        if (last is not None and last["endLine"] == found.line and last["turnId"] == view["turnId"]
                and last["toolCallId"] == view["toolCallId"] and last["confidence"] == found.confidence):
            last["endLine"] = found.line + 1
            continue
        del view["line"], view["editStartLine"]
        runs.append({"startLine": found.line + 1, "endLine": found.line + 1, **view})
    return {"path": history.path, "gitUsed": history.git_used, "attributedLines": len(history.lines),
            "runs": runs}


def sync_status(progress: SyncProgress, *, syncing: bool, force: bool, token: str | None,
                error: str | None = None) -> JSON:
    """``SyncStatusParams`` (the ``pimem/syncStatus`` notification); ``error``: the one line of a
    store failure that stopped the sync."""
    status: JSON = {"syncing": syncing, "filesDone": progress.files_done, "filesTotal": progress.files_total,
                    "turnsIndexed": progress.indexed, "turnsToIndex": progress.to_index, "force": force,
                    "token": token}
    if error is not None:
        status["error"] = error
    return status


def index_changed(stats: SyncStats, total_turns: int) -> JSON:
    """``IndexChangedParams`` (the ``pimem/indexChanged`` notification)."""
    return {"turns": stats.turns, "sources": sorted(stats.changed_sources), "totalTurns": total_turns}
