"""Claude Code import fidelity (issue 10, items 12 and 13): what the interactive client writes.

The real transcript (tests/fixtures/claude-interactive, from ``tools/agentgen --agents claude-tui``) is
checked turn by turn by tests/importers/test_fixtures.py; these tests pin each rule on a minimal transcript
built from the same record shapes, and check that every rule survives a resume at every line.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pimem.importers.claude import MAX_BACKGROUND_CALLS
from pimem.store import connect, parse_tool_names
from pimem.sync import SyncRequest, run_sync
from support.history import CLAUDE_INTERACTIVE, MINIMAL, SAMPLES, roots_under
from sync.test_incremental import _rebase, snapshot, sync

SESSION = "5e55a0a0-0000-4000-8000-000000000000"
PROJECT = "-tmp-pimem-demo-tui-lab"


class Transcript:
    """Claude Code 2.1.332 record shapes, reduced to the fields the importer reads (and a little more)."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []
        self.second = 0

    def _envelope(self, uuid: str, kind: str) -> dict[str, Any]:
        self.second += 1
        return {"parentUuid": None, "isSidechain": False, "type": kind, "uuid": uuid,
                "timestamp": f"2026-12-01T10:{self.second // 60:02d}:{self.second % 60:02d}.000Z",
                "cwd": "/tmp/pimem-demo/tui-lab",
                "sessionId": SESSION, "version": "2.1.332"}

    def user(self, uuid: str, content: Any, **extra: Any) -> Transcript:
        self.lines.append({**self._envelope(uuid, "user"), "message": {"role": "user", "content": content}, **extra})
        return self

    def tool_result(self, uuid: str, call_id: str, text: str) -> Transcript:
        return self.user(uuid, [{"tool_use_id": call_id, "type": "tool_result", "content": text}],
                         toolUseResult={"stdout": text, "stderr": ""})

    def say(self, uuid: str, text: str, model: str = "claude-opus-5-5") -> Transcript:
        self.lines.append({**self._envelope(uuid, "assistant"), "message": {
            "id": "msg_" + uuid, "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": text}]}})
        return self

    def call(self, uuid: str, name: str, call_id: str, **tool_input: Any) -> Transcript:
        self.lines.append({**self._envelope(uuid, "assistant"), "message": {
            "id": "msg_" + uuid, "type": "message", "role": "assistant", "model": "claude-opus-5-5",
            "content": [{"type": "tool_use", "id": call_id, "name": name, "input": tool_input}]}})
        return self

    def enqueue(self, text: str) -> Transcript:
        self.lines.append({"type": "queue-operation", "operation": "enqueue", "sessionId": SESSION,
                           "timestamp": "2026-12-01T10:00:00.000Z", "content": text})
        return self

    def dequeue(self) -> Transcript:
        self.lines.append({"type": "queue-operation", "operation": "dequeue", "sessionId": SESSION,
                           "timestamp": "2026-12-01T10:00:00.000Z"})
        return self

    def queued(self, uuid: str, prompt: str, mode: str = "prompt") -> Transcript:
        attachment: dict[str, Any] = {"type": "queued_command", "prompt": prompt, "commandMode": mode,
                                      "source_uuid": "50" + uuid[2:]}
        if mode == "prompt":
            attachment.update(origin={"kind": "human"}, humanTurn=True)
        else:
            attachment.update(origin={"kind": mode, "producer": "session-task"})
        self.lines.append({**self._envelope(uuid, "attachment"), "attachment": attachment})
        return self

    def notification(self, uuid: str, call_id: str) -> Transcript:
        return self.user(uuid, notification_text(call_id), origin={"kind": "task-notification"})

    def write(self, base: Path) -> Path:
        path = base / "claude" / "projects" / PROJECT / f"{SESSION}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in self.lines), encoding="utf-8")
        return path


def notification_text(call_id: str) -> str:
    return (f"<task-notification>\n<task-id>a1b2c3</task-id>\n<tool-use-id>{call_id}</tool-use-id>\n"
            "<status>completed</status>\n<summary>Agent \"Explore\" finished</summary>\n"
            "<result>three files</result>\n</task-notification>")


def turns_of(transcript: Transcript, tmp_path: Path) -> list[tuple[str, str, str, list[str]]]:
    """(message id, user text, reply, tools) of every stored turn, in turn order (0, 1, 2… asserted)."""
    transcript.write(tmp_path / "base")
    db = tmp_path / "memory.db"
    sync(tmp_path / "base", db)
    rows = connect(db).execute("SELECT user_message_id, user_text, reply_text, tool_names, turn_index "
                               "FROM turns ORDER BY turn_index").fetchall()
    assert [row[4] for row in rows] == list(range(len(rows)))
    return [(row[0], row[1], row[2], parse_tool_names(row[3])) for row in rows]


# --- item 12: a prompt typed while the agent works ---------------------------------------------------

def test_a_prompt_queued_while_a_tool_runs_is_a_turn_with_its_own_reply(tmp_path: Path) -> None:
    transcript = (Transcript()
                  .user("u1", "Please run `sleep 8`.")
                  .say("a1", "Let me run `sleep 8`.").call("a2", "Bash", "toolu_1", command="sleep 8")
                  .enqueue("What is the flamingo bug?")
                  .tool_result("r1", "toolu_1", "")
                  .queued("q1", "What is the flamingo bug?")
                  .say("a3", "The flamingo bug is a stale price cache.")
                  .user("u2", "Thanks. Next question?")
                  .say("a4", "Ask away."))
    assert turns_of(transcript, tmp_path) == [
        ("u1", "Please run `sleep 8`.", "Let me run `sleep 8`.", ["Bash"]),
        ("q1", "What is the flamingo bug?", "The flamingo bug is a stale price cache.", []),
        ("u2", "Thanks. Next question?", "Ask away.", []),
    ]


def test_a_prompt_queued_while_text_streams_is_written_once_and_counted_once(tmp_path: Path) -> None:
    """The client writes it afterwards as a plain user line; the queue-operation lines repeat its text."""
    transcript = (Transcript()
                  .user("u1", "Explain slowly.")
                  .enqueue("Typed during the stream.").dequeue()
                  .say("a1", "A long answer.")
                  .user("u2", "Typed during the stream.")
                  .say("a2", "Answered."))
    assert turns_of(transcript, tmp_path) == [
        ("u1", "Explain slowly.", "A long answer.", []),
        ("u2", "Typed during the stream.", "Answered.", []),
    ]


def test_queued_commands_that_are_not_human_prompts_are_no_turns(tmp_path: Path) -> None:
    rewritten = Transcript().queued("q2", "rewritten")
    rewritten.lines[-1]["attachment"]["promptRewritten"] = True
    transcript = (Transcript()
                  .user("u1", "Run it.")
                  .call("a1", "Bash", "toolu_1", command="sleep 10")
                  .tool_result("r1", "toolu_1", "")
                  .queued("q1", notification_text("toolu_0"), mode="task-notification"))
    transcript.lines += rewritten.lines
    transcript.say("a2", "Done.")
    assert turns_of(transcript, tmp_path) == [("u1", "Run it.", "Done.", ["Bash"])]


# --- item 13: background task reports and bash mode ---------------------------------------------------

def test_the_report_of_a_background_task_goes_to_the_turn_that_launched_it(tmp_path: Path) -> None:
    transcript = (Transcript()
                  .user("u1", "Use a subagent to explore, then report.")
                  .call("a1", "Agent", "toolu_agent", description="Explore", prompt="List the files.")
                  .tool_result("r1", "toolu_agent", "Async agent launched successfully.")
                  .say("a2", "I'll report when it is done.")
                  .user("u2", "Meanwhile: what is in the Makefile?")
                  .say("a3", "A test target.")
                  .user("m1", "<system-reminder>\n<tools-used-before-summary>Bash</tools-used-before-summary>\n"
                              "</system-reminder>", isMeta=True)
                  .notification("n1", "toolu_agent")
                  .say("a4", "The sub-agent reports: three files.")
                  .user("u3", "Thanks.")
                  .say("a5", "You're welcome."))
    assert turns_of(transcript, tmp_path) == [
        ("u1", "Use a subagent to explore, then report.",
         "I'll report when it is done.\nThe sub-agent reports: three files.", ["Agent"]),
        ("u2", "Meanwhile: what is in the Makefile?", "A test target.", []),
        ("u3", "Thanks.", "You're welcome.", []),
    ]


def test_a_background_bash_call_reports_to_its_turn_too(tmp_path: Path) -> None:
    transcript = (Transcript()
                  .user("u1", "Build it in the background.")
                  .call("a1", "Bash", "toolu_bg", command="make", run_in_background=True)
                  .say("a2", "Started.")
                  .user("u2", "Other question.")
                  .say("a3", "Other answer.")
                  .notification("n1", "toolu_bg")
                  .say("a4", "The build finished."))
    assert [turn[2] for turn in turns_of(transcript, tmp_path)] == ["Started.\nThe build finished.", "Other answer."]


def test_a_report_for_an_unknown_task_goes_to_the_latest_turn(tmp_path: Path) -> None:
    transcript = (Transcript()
                  .user("u1", "First.").say("a1", "One.")
                  .user("u2", "Second.").say("a2", "Two.")
                  .notification("n1", "toolu_never_seen")
                  .say("a3", "A scheduled task reported."))
    assert [turn[2] for turn in turns_of(transcript, tmp_path)] == ["One.", "Two.\nA scheduled task reported."]


def test_a_notification_absorbed_mid_turn_leaves_the_text_in_the_running_turn(tmp_path: Path) -> None:
    transcript = (Transcript()
                  .user("u1", "Use a subagent.")
                  .call("a1", "Agent", "toolu_agent", description="Explore", prompt="List the files.")
                  .say("a2", "Started it.")
                  .user("u2", "Meanwhile, run `sleep 10`.")
                  .call("a3", "Bash", "toolu_sleep", command="sleep 10")
                  .tool_result("r1", "toolu_sleep", "")
                  .queued("q1", notification_text("toolu_agent"), mode="task-notification")
                  .say("a4", "The sleep is done, and the sub-agent found three files."))
    assert [turn[2] for turn in turns_of(transcript, tmp_path)] == [
        "Started it.", "The sleep is done, and the sub-agent found three files."]


def test_the_background_calls_remembered_are_bounded(tmp_path: Path) -> None:
    """A long session's saved state stays small: the oldest launches are forgotten first, and a
    report for a forgotten one goes to the latest turn (like any unknown task)."""
    transcript = Transcript().user("u0", "Launch the first.").call("c0", "Agent", "toolu_first", prompt="x")
    for n in range(1, MAX_BACKGROUND_CALLS + 1):
        transcript.user(f"u{n}", f"Launch {n}.").call(f"c{n}", "Agent", f"toolu_{n}", prompt="x")
    transcript.notification("n1", "toolu_first").say("a1", "First report.")
    transcript.notification("n2", "toolu_1").say("a2", "Second report.")
    turns = turns_of(transcript, tmp_path)
    assert turns[0][2] == "" and turns[1][2] == "Second report."
    assert turns[-1][2] == "First report."
    state = json.loads(connect(tmp_path / "memory.db").execute("SELECT state FROM pimem_files").fetchone()[0])
    assert len(state["background"]) == MAX_BACKGROUND_CALLS


def test_a_tool_call_with_a_malformed_name_costs_nothing(tmp_path: Path) -> None:
    """The launch check must not raise on an unhashable name (the line's text would be skipped)."""
    transcript = Transcript().user("u1", "Go.").say("a1", "Reply.")
    transcript.lines[-1]["message"]["content"].append(
        {"type": "tool_use", "id": "toolu_1", "name": ["Agent"], "input": {"run_in_background": "yes"}})
    assert turns_of(transcript, tmp_path) == [("u1", "Go.", "Reply.", [])]


def test_a_bash_mode_command_the_assistant_answers_is_a_turn(tmp_path: Path) -> None:
    transcript = (Transcript()
                  .user("u1", "Hello.").say("a1", "Hi.")
                  .user("b1", "<bash-input>ls</bash-input>")
                  .user("b2", "<bash-stdout>Makefile\nsrc</bash-stdout><bash-stderr></bash-stderr>")
                  .say("a2", "Your shell printed two names.")
                  .user("u2", "Next.").say("a3", "Sure."))
    assert turns_of(transcript, tmp_path) == [
        ("u1", "Hello.", "Hi.", []),
        ("b1", "!ls", "Your shell printed two names.", []),
        ("u2", "Next.", "Sure.", []),
    ]


def test_a_bash_mode_command_nobody_answers_is_no_turn(tmp_path: Path) -> None:
    """Older clients only ran the command; a synthetic assistant line (an API error) is no answer."""
    transcript = (Transcript()
                  .user("u1", "Hello.").say("a1", "Hi.")
                  .user("b1", "<bash-input>make test</bash-input>")
                  .user("b2", "<bash-stdout>ok</bash-stdout><bash-stderr></bash-stderr>")
                  .say("a2", "API Error: 500", model="<synthetic>")
                  .user("u2", "Next.").say("a3", "Sure."))
    assert turns_of(transcript, tmp_path) == [("u1", "Hello.", "Hi.", []), ("u2", "Next.", "Sure.", [])]


# --- every rule survives a resume at every line --------------------------------------------------------

INTERACTIVE_FILE = next(p for p in CLAUDE_INTERACTIVE.rglob("*.jsonl") if "subagents" not in p.parts)
NOTIFICATION_FILE = (SAMPLES / "claude" / "projects" / "-tmp-pimem-demo-----"
                     / "b3fac8d1-549b-497e-9601-94deb4a4bbff.jsonl")


# The minimal shapes: an opening assistant turn, no session_meta (Codex), resumed at every line.
MINIMAL_FILES = sorted(MINIMAL.rglob("*.jsonl"))


@pytest.mark.parametrize("fixture", [INTERACTIVE_FILE, NOTIFICATION_FILE, *MINIMAL_FILES],
                         ids=["interactive-c5", "zh-c3", *(f"minimal-{p.stem[:32]}" for p in MINIMAL_FILES)])
def test_a_sync_after_every_line_equals_one_full_import(fixture: Path, tmp_path: Path) -> None:
    base = next(root for root in (CLAUDE_INTERACTIVE, MINIMAL, SAMPLES) if root in fixture.parents)
    relative = fixture.relative_to(base)
    live, full = tmp_path / "live" / relative, tmp_path / "full" / relative
    live.parent.mkdir(parents=True)
    full.parent.mkdir(parents=True)
    shutil.copyfile(fixture, full)
    sync(tmp_path / "full", tmp_path / "full.db")
    with fixture.open("rb") as source, live.open("wb") as target:
        for line in source:
            target.write(line)
            target.flush()
            stats = run_sync(SyncRequest(db_path=str(tmp_path / "live.db"), roots=roots_under(tmp_path / "live")))
            assert not stats.issues, [issue.error for issue in stats.issues]
    assert snapshot(connect(tmp_path / "live.db")) == _rebase(snapshot(connect(tmp_path / "full.db")),
                                                             str(tmp_path / "full"), str(tmp_path / "live"))
