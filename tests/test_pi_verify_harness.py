"""The real-Pi verification harness (tests/pi_verify, tests/support/pi_real.py) works and can fail.

A small Pi v3 session is written by hand here (not by pimem's converter) into the per-cwd folder
that Pi 1.6.0 reads, and the harness must report what the real Pi SessionManager sees: listed by
/resume with its session name as title, opened with exactly its message sequence, file untouched,
and a continued message chained to the leaf. Negative cases show that the assertions catch
broken files. Needs the real Pi: scripts/setup-pi.sh installs it (npm registry access).
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from support.pi_real import ensure_pi_installed, pi_rpc_resume, verify_pi_sessions

pytestmark = pytest.mark.e2e

SESSION_NAME = "Harness check: Ünïcode & spaces"
EXCHANGES = [
    ("Please list the files.", "Here they are:\nREADME.md\nmain.py"),
    ("Now explain main.py\nin two lines.", "It prints hello.\nThat is all."),
]
HEADER_TS = "2026-11-20T10:00:00.000Z"
T0_MS = 1_795_000_000_000  # message timestamps are Unix milliseconds


def encode_cwd(cwd: str) -> str:
    """Pi's per-cwd folder name (formats.md 3.1): strip one leading / or \\, then / \\ : -> '-'."""
    return "--" + re.sub(r"[/\\:]", "-", re.sub(r"^[/\\]", "", cwd)) + "--"


def session_path(agent_dir: Path, cwd: Path, session_id: str, timestamp: str) -> Path:
    name = f"{timestamp.replace(':', '-').replace('.', '-')}_{session_id}.jsonl"
    return agent_dir / "sessions" / encode_cwd(str(cwd)) / name


def _usage() -> dict[str, Any]:
    zero = {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.0}
    return {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15, "cost": zero}


def build_entries(
    cwd: Path, session_id: str, *, name: str | None = SESSION_NAME, version: int | None = 3
) -> list[dict[str, Any]]:
    """Header + model/thinking settings + session_info + two user/assistant exchanges, chained."""
    header: dict[str, Any] = {"type": "session", "id": session_id, "timestamp": HEADER_TS, "cwd": str(cwd)}
    if version is not None:
        header = {"type": "session", "version": version, **{k: v for k, v in header.items() if k != "type"}}
    entries: list[dict[str, Any]] = [header]
    parent: str | None = None
    counter = 0

    def add(entry: dict[str, Any]) -> None:
        nonlocal parent, counter
        counter += 1
        entry_id = f"{counter:08x}"
        ts = f"2026-11-20T10:00:{counter:02d}.000Z"
        entries.append({"type": entry["type"], "id": entry_id, "parentId": parent, "timestamp": ts, **entry})
        parent = entry_id

    add({"type": "model_change", "provider": "openai", "modelId": "gpt-5.5"})
    add({"type": "thinking_level_change", "thinkingLevel": "medium"})
    if name is not None:
        add({"type": "session_info", "name": name})
    for i, (user_text, assistant_text) in enumerate(EXCHANGES):
        t = T0_MS + i * 60_000
        add(
            {
                "type": "message",
                "message": {"role": "user", "content": [{"type": "text", "text": user_text}], "timestamp": t},
            }
        )
        add(
            {
                "type": "message",
                "message": {
                    "role": "assistant",
                    "content": [{"type": "text", "text": assistant_text}],
                    "api": "openai-responses",
                    "provider": "openai",
                    "model": "gpt-5.5",
                    "usage": _usage(),
                    "stopReason": "stop",
                    "timestamp": t + 1_000,
                },
            }
        )
    return entries


def write_session(path: Path, entries: list[dict[str, Any]], *, trailing_newline: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "\n".join(json.dumps(e, ensure_ascii=False, separators=(",", ":")) for e in entries)
    path.write_bytes((text + ("\n" if trailing_newline else "")).encode("utf-8"))
    return path


def expected_messages() -> list[dict[str, str]]:
    out = []
    for user_text, assistant_text in EXCHANGES:
        out += [{"role": "user", "text": user_text}, {"role": "assistant", "text": assistant_text}]
    return out


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def pi_install() -> Path:
    return ensure_pi_installed()


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, Path]:
    """(agent_dir, cwd); the cwd has a space, a dot, an underscore and non-ASCII in its name."""
    cwd = tmp_path / "work space" / "my.proj_ü"
    cwd.mkdir(parents=True)
    return tmp_path / "agent", cwd


def test_harness_lists_opens_and_keeps_a_valid_session(pi_install: Path, project: tuple[Path, Path]) -> None:
    agent_dir, cwd = project
    sid = str(uuid.uuid4())
    entries = build_entries(cwd, sid)
    path = write_session(session_path(agent_dir, cwd, sid, HEADER_TS), entries)
    digest = sha256(path)

    report = verify_pi_sessions(agent_dir, cwd, [path])

    assert report["pi"]["version"] == "1.6.0"
    assert report["pi"]["node"].startswith("v22.")
    assert report["listError"] is None
    assert len(report["list"]) == 1
    listed = report["list"][0]
    assert listed["path"] == str(path)
    assert listed["id"] == sid
    assert listed["title"] == SESSION_NAME
    assert listed["name"] == SESSION_NAME
    assert listed["firstMessage"] == EXCHANGES[0][0]
    assert listed["cwd"] == str(cwd)
    assert listed["messageCount"] == 4
    # /resume's sort key: the newest user/assistant message.timestamp (ms)
    newest = datetime.fromtimestamp((T0_MS + 61_000) / 1000, tz=UTC)
    assert listed["modified"] == newest.isoformat(timespec="milliseconds").replace("+00:00", "Z")

    (result,) = report["files"]
    assert result["error"] is None
    assert result["unchanged"] is True
    assert sha256(path) == digest
    opened = result["open"]
    assert opened["messages"] == expected_messages()
    assert opened["contextRoles"] == ["user", "assistant", "user", "assistant"]
    assert opened["sessionId"] == sid
    assert opened["cwd"] == str(cwd)
    assert opened["sessionName"] == SESSION_NAME
    assert opened["leafId"] == entries[-1]["id"]
    assert opened["treeRoots"] == 1
    assert opened["branchLength"] == len(entries) - 1
    assert opened["model"] == {"provider": "openai", "modelId": "gpt-5.5"}
    assert opened["thinkingLevel"] == "medium"
    assert opened["assistantWithoutUsage"] == 0


def test_title_falls_back_to_first_user_message(pi_install: Path, project: tuple[Path, Path]) -> None:
    agent_dir, cwd = project
    sid = str(uuid.uuid4())
    path = write_session(session_path(agent_dir, cwd, sid, HEADER_TS), build_entries(cwd, sid, name=None))

    report = verify_pi_sessions(agent_dir, cwd, [path])

    (listed,) = report["list"]
    assert listed["name"] is None
    assert listed["title"] == EXCHANGES[0][0]
    # the picker replaces control characters (the newline of the 2nd prompt would be one) by spaces
    assert listed["titleDisplayed"] == EXCHANGES[0][0]
    assert report["files"][0]["open"]["sessionName"] is None


def test_continuing_appends_a_user_message_chained_to_the_leaf(
    pi_install: Path, project: tuple[Path, Path]
) -> None:
    agent_dir, cwd = project
    sid = str(uuid.uuid4())
    entries = build_entries(cwd, sid)
    path = write_session(session_path(agent_dir, cwd, sid, HEADER_TS), entries)
    old_bytes = path.read_bytes()

    report = verify_pi_sessions(agent_dir, cwd, [path], append_user_message="And now the tests, please.")

    (result,) = report["files"]
    assert result["unchanged"] is True  # opening alone did not touch it
    append = result["append"]
    assert "error" not in append
    assert append["previousLeafId"] == entries[-1]["id"]
    assert append["parentId"] == entries[-1]["id"]
    assert append["chainsToPreviousLeaf"] is True
    assert append["lastLineIsNewEntry"] is True
    assert append["reopened"]["leafId"] == append["entryId"]
    assert append["reopened"]["messageCount"] == 5
    assert append["reopened"]["lastMessage"] == {"role": "user", "text": "And now the tests, please."}
    # Pi appended exactly one line and kept the rest byte for byte
    new_bytes = path.read_bytes()
    assert new_bytes.startswith(old_bytes)
    new_line = json.loads(new_bytes[len(old_bytes) :].decode("utf-8"))
    assert new_line["type"] == "message" and new_line["parentId"] == entries[-1]["id"]


def test_negative_cases_are_detected(pi_install: Path, project: tuple[Path, Path]) -> None:
    """Each broken file must make at least one of the assertions above fail."""
    agent_dir, cwd = project
    sdir = agent_dir / "sessions" / encode_cwd(str(cwd))

    # 1. first line is not a session header: not listed, not openable, not modified
    sid1 = str(uuid.uuid4())
    good = build_entries(cwd, sid1)
    no_header = write_session(sdir / f"2026-11-20T10-00-01-000Z_{sid1}.jsonl", [*good[1:], good[0]])
    # 2. a v2 file: listed, but Pi migrates and REWRITES it in place when it is opened
    sid2 = str(uuid.uuid4())
    v2 = write_session(sdir / f"2026-11-20T10-00-02-000Z_{sid2}.jsonl", build_entries(cwd, sid2, version=2))
    # 3. no trailing newline: Pi appends "\n" on open
    sid3 = str(uuid.uuid4())
    no_nl = write_session(
        sdir / f"2026-11-20T10-00-03-000Z_{sid3}.jsonl", build_entries(cwd, sid3), trailing_newline=False
    )
    # 4. broken parentId chain: the context loses everything above the break
    sid4 = str(uuid.uuid4())
    broken = build_entries(cwd, sid4)
    broken[-2] = {**broken[-2], "parentId": "deadbeef"}
    broken_path = write_session(sdir / f"2026-11-20T10-00-04-000Z_{sid4}.jsonl", broken)
    # 5. the right content in the wrong folder (cwd encoded without the leading-slash rule)
    sid5 = str(uuid.uuid4())
    wrong_dir = agent_dir / "sessions" / ("-" + encode_cwd(str(cwd)))
    misplaced = write_session(wrong_dir / f"2026-11-20T10-00-05-000Z_{sid5}.jsonl", build_entries(cwd, sid5))

    files = [no_header, v2, no_nl, broken_path, misplaced]
    report = verify_pi_sessions(agent_dir, cwd, files)
    listed = {Path(e["path"]).name for e in report["list"]}
    by_path = {r["path"]: r for r in report["files"]}

    r1 = by_path[str(no_header)]
    assert no_header.name not in listed
    assert r1["open"] is None and "not a valid pi session" in r1["error"]["message"]
    assert r1["unchanged"] is True

    r2 = by_path[str(v2)]
    assert v2.name in listed
    assert r2["unchanged"] is False
    assert r2["before"]["sha256"] != r2["after"]["sha256"]
    assert json.loads(v2.read_text(encoding="utf-8").splitlines()[0])["version"] == 3
    assert r2["open"]["messages"] == expected_messages()  # content survives, bytes do not

    r3 = by_path[str(no_nl)]
    assert r3["unchanged"] is False
    assert r3["after"]["size"] == r3["before"]["size"] + 1 and no_nl.read_bytes().endswith(b"}\n")

    r4 = by_path[str(broken_path)]
    assert r4["unchanged"] is True
    assert r4["open"]["treeRoots"] == 2
    assert r4["open"]["messages"] != expected_messages()
    assert r4["open"]["messages"] == expected_messages()[2:]  # only the 2nd exchange is left

    r5 = by_path[str(misplaced)]
    assert misplaced.name not in listed  # openable by path, but /resume does not show it
    assert r5["open"]["messages"] == expected_messages()
    assert listed == {v2.name, no_nl.name, broken_path.name}


def test_errors_are_reported_per_file(pi_install: Path, project: tuple[Path, Path], tmp_path: Path) -> None:
    agent_dir, cwd = project
    missing = tmp_path / "nope" / "missing.jsonl"
    not_a_session = tmp_path / "notes.jsonl"
    not_a_session.write_text("hello\n", encoding="utf-8")

    report = verify_pi_sessions(agent_dir, cwd, [missing, not_a_session])

    assert report["list"] == []
    r_missing, r_notes = report["files"]
    assert r_missing["error"]["name"] == "FileNotFound" and r_missing["open"] is None
    assert not missing.parent.exists()  # the harness did not let Pi create a session there
    assert r_notes["error"]["stage"] == "open" and r_notes["unchanged"] is True


def test_real_cli_resume_loads_the_session_untouched(pi_install: Path, project: tuple[Path, Path]) -> None:
    """`pi --mode rpc` + switch_session = the code path of the interactive /resume picker."""
    agent_dir, cwd = project
    sid = str(uuid.uuid4())
    path = write_session(session_path(agent_dir, cwd, sid, HEADER_TS), build_entries(cwd, sid))

    result = pi_rpc_resume(agent_dir, cwd, path)

    assert result["failure"] is None, result["stderr"]
    assert result["responses"]["switch_session"]["success"] is True
    assert result["responses"]["switch_session"]["data"] == {"cancelled": False}
    state = result["responses"]["get_state"]["data"]
    assert state["sessionFile"] == str(path)
    assert state["sessionId"] == sid
    assert state["sessionName"] == SESSION_NAME
    assert state["messageCount"] == 4
    assert result["messages"] == expected_messages()
    stats = result["responses"]["get_session_stats"]
    assert stats["success"] is True and stats["data"]["userMessages"] == 2
    assert result["unchanged"] is True and result["appendedLines"] == []
    assert result["exitCode"] == 0


def test_real_cli_resume_detects_problems(
    pi_install: Path, project: tuple[Path, Path], tmp_path: Path
) -> None:
    agent_dir, cwd = project
    sdir = agent_dir / "sessions" / encode_cwd(str(cwd))

    # no thinking_level_change on the branch: Pi appends one when the session is resumed
    sid = str(uuid.uuid4())
    entries = [e for e in build_entries(cwd, sid) if e["type"] != "thinking_level_change"]
    for prev, entry in pairwise(entries[1:]):
        entry["parentId"] = prev["id"]
    no_thinking = write_session(sdir / f"2026-11-20T10-00-01-000Z_{sid}.jsonl", entries)
    r = pi_rpc_resume(agent_dir, cwd, no_thinking)
    assert r["responses"]["switch_session"]["success"] is True
    assert r["unchanged"] is False
    (appended,) = r["appendedLines"]
    assert appended["type"] == "thinking_level_change" and appended["parentId"] == entries[-1]["id"]

    # an assistant message without usage: resume works, session stats (and Pi's TUI footer) crash
    sid = str(uuid.uuid4())
    entries = build_entries(cwd, sid)
    del entries[-1]["message"]["usage"]
    no_usage = write_session(sdir / f"2026-11-20T10-00-02-000Z_{sid}.jsonl", entries)
    r = pi_rpc_resume(agent_dir, cwd, no_usage)
    assert r["responses"]["switch_session"]["success"] is True
    assert r["responses"]["get_session_stats"]["success"] is False
    assert "input" in r["responses"]["get_session_stats"]["error"]

    # header cwd that does not exist: /resume refuses (the TUI asks to continue elsewhere or fork)
    sid = str(uuid.uuid4())
    gone = write_session(
        sdir / f"2026-11-20T10-00-03-000Z_{sid}.jsonl", build_entries(tmp_path / "gone", sid)
    )
    r = pi_rpc_resume(agent_dir, cwd, gone)
    assert r["responses"]["switch_session"]["success"] is False
    assert "working directory does not exist" in r["responses"]["switch_session"]["error"]
    assert r["unchanged"] is True
