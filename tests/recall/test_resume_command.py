"""Issue 10, item 3: a resume command built from stored data never injects an option or a command.

Session ids and paths come from transcripts. The command is only built from an id of its agent's
real shape (Claude Code: UUID; Codex: UUID, v7 now; Pi: Pi's own session-id rule) and from absolute
paths without control characters; ``cd`` gets ``--``. The proof that nothing is injected is to run
the produced command in ``sh`` with stub agents on PATH that record the argv they receive.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pimem.recall import RecallRow
from pimem.recall.format import resume_command
from support.env import env_for
from support.history import SAMPLES

CLAUDE_ID = "1ed4dd9a-5989-4487-9ac3-d2b870816ee8"   # samples/history/claude (a v4 UUID)
CODEX_ID = "01a22bd8-8c34-7e91-9282-79d4f5ad872f"    # samples/history/codex (a v7 UUID)
CODEX_V4_ID = "4a3b2c1d-0e9f-4a8b-b7c6-d5e4f3a2b1c0"  # tests/fixtures/legacy/codex, an older rollout
PI_ID = "01a22bd8-a83c-7278-b6dd-f7b4c2b178a9"       # samples/history/pi (a v7 UUID)

HOSTILE_IDS = [
    "--dangerously-skip-permissions",
    "-c",
    f"-{CLAUDE_ID}",
    f"{CLAUDE_ID}\n",
    f"{CLAUDE_ID}\nrm -rf ~",
    f"{CLAUDE_ID} --dangerously-skip-permissions",
    f"{CLAUDE_ID};touch pwned",
    f"$(touch pwned){CLAUDE_ID}",
    f"`touch pwned`{CLAUDE_ID}",
    f"'{CLAUDE_ID}'",
    f"{CLAUDE_ID}\x1b]0;title\x07",
    CLAUDE_ID.replace("-", ""),
    CLAUDE_ID[:-1] + "g",
    "",
]


def row(source: str, native: str, *, cwd: str = "/home/me/alpha", path: str = "/home/me/s.jsonl") -> RecallRow:
    return RecallRow(turn_id=f"{source}:{native}:m1", session_id=f"{source}:{native}", source=source, cwd=cwd,
                     ts=0, user_text="u", reply_text="r", tool_names=[], hits=1, jsonl_path=path, line=1)


def test_real_ids_give_their_agents_commands() -> None:
    assert resume_command(row("claude", CLAUDE_ID)) == f"cd -- /home/me/alpha && claude --resume {CLAUDE_ID}"
    assert resume_command(row("claude", CLAUDE_ID, cwd="")) == f"claude --resume {CLAUDE_ID}"
    assert resume_command(row("codex", CODEX_ID)) == f"codex resume {CODEX_ID}"
    assert resume_command(row("codex", CODEX_V4_ID)) == f"codex resume {CODEX_V4_ID}"
    assert resume_command(row("pi", PI_ID)) == "pi --session /home/me/s.jsonl"
    assert resume_command(row("pi", "my-session.2")) == "pi --session /home/me/s.jsonl"  # a custom Pi id


@pytest.mark.parametrize("native", HOSTILE_IDS)
@pytest.mark.parametrize("source", ["claude", "codex"])
def test_an_id_not_shaped_like_a_uuid_gets_no_command(source: str, native: str) -> None:
    assert resume_command(row(source, native)) is None


PI_VALID_CUSTOM_IDS = {CLAUDE_ID.replace("-", ""), CLAUDE_ID[:-1] + "g"}  # Pi accepts any such name


@pytest.mark.parametrize("native", [i for i in HOSTILE_IDS if i not in PI_VALID_CUSTOM_IDS] + ["-x", "a.", "x\n"])
def test_a_pi_session_whose_id_pi_would_refuse_gets_no_command(native: str) -> None:
    assert resume_command(row("pi", native)) is None


@pytest.mark.parametrize("path", ["", "s.jsonl", "-rf", "--session=x", "./-x", "~/s.jsonl",
                                  "/home/me/a\nb.jsonl", "/home/me/\x1b]52;c;eA==\x07.jsonl", "/home/\u202es.jsonl",
                                  "/home/" + "x" * 5000])
def test_a_path_that_is_not_a_plain_absolute_path_gets_no_command(path: str) -> None:
    assert resume_command(row("pi", PI_ID, path=path)) is None
    assert resume_command(row("claude", CLAUDE_ID, cwd=path)) is None if path else True


# ---------------------------------------------------------------------------------------------
# The produced command, run by a real shell with stub agents that record their argv
# ---------------------------------------------------------------------------------------------

STUB = """#!/bin/sh
# Records how it was called: its name, the working directory, then each argument, NUL-separated.
{ printf '%s\\0' "$(basename "$0")" "$PWD"; for arg in "$@"; do printf '%s\\0' "$arg"; done; } > "$PIMEM_STUB_LOG"
"""

AWKWARD_NAMES = ["a b", "it's", "$(touch pwned)", "`touch pwned`", "-rf", "--dangerously-skip-permissions",
                 "semi;colon && x", "*", "中文项目", "back\\slash"]


@pytest.fixture
def stub_bin(tmp_path: Path) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir()
    for name in ("claude", "codex", "pi", "gemini", "opencode", "copilot"):
        stub = folder / name
        stub.write_text(STUB, encoding="utf-8")
        stub.chmod(0o755)
    return folder


def run_in_shell(command: str, stub_bin: Path, tmp_path: Path, cwd: Path) -> list[str]:
    """Check the command's syntax with ``sh -n``, run it, return the recorded [name, pwd, *args]."""
    shell = shutil.which("sh")
    assert shell is not None
    assert subprocess.run([shell, "-n", "-c", command], capture_output=True, check=False).returncode == 0, command
    log = tmp_path / "argv.log"
    env = {"PATH": f"{stub_bin}{os.pathsep}{os.environ['PATH']}", "PIMEM_STUB_LOG": str(log), "HOME": str(tmp_path)}
    done = subprocess.run([shell, "-c", command], cwd=cwd, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, (command, done.stderr)
    return log.read_bytes().decode("utf-8").split("\0")[:-1]


@pytest.mark.parametrize("name", AWKWARD_NAMES)
def test_claude_command_reaches_claude_with_exactly_resume_and_the_id(
        name: str, stub_bin: Path, tmp_path: Path) -> None:
    project = tmp_path / "projects" / name / "-x"
    project.mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    command = resume_command(row("claude", CLAUDE_ID, cwd=str(project)))
    assert command is not None
    assert run_in_shell(command, stub_bin, tmp_path, elsewhere) == ["claude", str(project), "--resume", CLAUDE_ID]
    assert not list(tmp_path.rglob("pwned"))


@pytest.mark.parametrize("name", AWKWARD_NAMES)
def test_pi_command_reaches_pi_with_exactly_the_session_path(name: str, stub_bin: Path, tmp_path: Path) -> None:
    session = tmp_path / "sessions" / name / f"-{name}.jsonl"
    command = resume_command(row("pi", PI_ID, path=str(session)))
    assert command is not None
    assert run_in_shell(command, stub_bin, tmp_path, tmp_path) == ["pi", str(tmp_path), "--session", str(session)]
    assert not list(tmp_path.rglob("pwned"))


@pytest.mark.parametrize("name", AWKWARD_NAMES)
@pytest.mark.parametrize(("source", "native", "argv"), [
    ("gemini", CLAUDE_ID, ["gemini", "--resume", CLAUDE_ID]),
    ("opencode", "ses_db3cc199bffeqUVIlffB7rLM8o", ["opencode", "--session", "ses_db3cc199bffeqUVIlffB7rLM8o"]),
    ("copilot-cli", CLAUDE_ID, ["copilot", f"--resume={CLAUDE_ID}"]),
])
def test_gemini_opencode_and_copilot_commands_reach_their_agent_in_the_sessions_folder(
        source: str, native: str, argv: list[str], name: str, stub_bin: Path, tmp_path: Path) -> None:
    project = tmp_path / "projects" / name
    project.mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    command = resume_command(row(source, native, cwd=str(project), path="/home/me/store.db"))
    assert command is not None
    recorded = run_in_shell(command, stub_bin, tmp_path, elsewhere)
    assert recorded == [argv[0], str(project), *argv[1:]]
    assert not list(tmp_path.rglob("pwned"))


@pytest.mark.parametrize("native", HOSTILE_IDS)
@pytest.mark.parametrize("source", ["gemini", "copilot-cli", "opencode"])
def test_a_gemini_opencode_or_copilot_id_not_of_the_agents_shape_gets_no_command(source: str, native: str) -> None:
    assert resume_command(row(source, native)) is None


def test_gemini_without_its_project_folder_and_copilot_chat_or_cursor_get_no_command() -> None:
    assert resume_command(row("gemini", CLAUDE_ID, cwd="")) is None    # found only from its project folder
    assert resume_command(row("gemini", CLAUDE_ID, cwd="rel/dir")) is None
    assert resume_command(row("copilot-chat", CLAUDE_ID)) is None     # no command line resumes them
    assert resume_command(row("cursor", CLAUDE_ID)) is None


def test_codex_command_reaches_codex_with_exactly_resume_and_the_id(stub_bin: Path, tmp_path: Path) -> None:
    command = resume_command(row("codex", CODEX_ID))
    assert command is not None
    assert run_in_shell(command, stub_bin, tmp_path, tmp_path) == ["codex", str(tmp_path), "resume", CODEX_ID]


# ---------------------------------------------------------------------------------------------
# End to end: a crafted transcript imported by `pimem sync`, then `pimem recall --json`
# ---------------------------------------------------------------------------------------------

def test_a_crafted_claude_session_id_gets_no_resume_command_through_sync_and_recall(tmp_path: Path) -> None:
    base = tmp_path / "history"
    source = SAMPLES / "claude" / "projects" / "-tmp-pimem-demo-webshop" / f"{CLAUDE_ID}.jsonl"
    folder = base / "claude" / "projects" / "-tmp-pimem-demo-webshop"
    folder.mkdir(parents=True)
    hostile = "--dangerously-skip-permissions"
    records = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
    for record in records:
        if record.get("sessionId") == CLAUDE_ID:
            record["sessionId"] = hostile
    (folder / f"{hostile}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    env = env_for(base, tmp_path / "memory.db")

    def pimem(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "pimem", *args], env=env, capture_output=True, text=True,
                              timeout=120, check=False)

    assert pimem("sync").returncode == 0
    found = pimem("recall", "flamingo", "--limit", "50", "--json")
    assert found.returncode == 0, found.stderr
    commands = {row["sessionId"]: row["resumeCommand"] for row in json.loads(found.stdout)}
    assert commands == {f"claude:{hostile}": None}
    human = pimem("recall", "flamingo", "--limit", "50")
    assert human.returncode == 0 and "You: " in human.stdout and "Resume:" not in human.stdout
