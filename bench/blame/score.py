#!/usr/bin/env python3
"""Score line attribution (``pimem blame``) against the ground truth of a generated history (issue 23).

    python bench/blame/score.py --fixture bench/blame/fixtures/real --work /tmp/blame-work [--json FILE]

Rebuilds the fixture's projects at the absolute root its transcripts name (``script.json`` ``root``),
as git repositories committed at the script's steps and times; syncs the transcripts into
``WORK/memory.db``; asks ``pimem blame FILE --json`` for every final file, once with the repositories'
``.git`` in place and once with it moved aside (outside git); scores each run, plus two references in
the same run: the truth itself (an oracle: 1.0 everywhere, the scorer's own check) and a naive rule,
"every line of a file belongs to the last agent turn that edited the file" (the same-file/time-window
rule deja-vu found wrong), which the targets must reject.

A line is attributed right when the turn ``pimem blame`` names has the truth's turn tag as the first
word of its prompt (every scripted prompt starts ``T0001:``). Figures (per agent too):

- precision: attributed lines naming the right turn / attributed lines (a human line attributed is wrong);
- recall: agent-written lines still as written that are attributed to the right turn / such lines
  (also without trivial lines: punctuation only, where the evidence is weak by nature);

blank lines are left out of every figure (they carry no evidence of who wrote them);
- human attributed: human-written lines attributed to some conversation / human-written lines (also
  the lines a person rewrote after an agent, and the files no agent touched);
- by case: moved and reindented agent lines, recall of each.

Targets (issue 23): precision >= 0.98, recall >= 0.90, human attributed <= 0.01.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generate_real import build_repos

REPO = Path(__file__).resolve().parents[2]
TAG = re.compile(r"^\s*(T\d{4,}):")
TARGETS = {"precision": 0.98, "recall": 0.90, "humanAttributed": 0.01}
TRIVIAL = re.compile(r"^[\s{}()\[\];,]*$")  # a blank or punctuation-only line

# path -> line -> (turn tag or None when the turn is not one of the script's, agent source)
Attribution = dict[str, dict[int, tuple[str | None, str]]]


def load(fixture: Path) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    script = json.loads((fixture / "script.json").read_text())
    truth = json.loads((fixture / "truth.json").read_text())
    return script, truth


def score(truth: dict[str, list[dict[str, Any]]], got: Attribution) -> dict[str, Any]:
    """The figures of one attribution against the truth (see the module docstring)."""
    agents = sorted({r["agent"] for rows in truth.values() for r in rows if r["agent"]})
    n: dict[str, int] = {}

    def add(key: str, value: bool = True) -> None:
        n[key] = n.get(key, 0) + int(value)

    for path, rows in truth.items():
        for row in rows:
            if not row["text"].strip():
                continue  # a blank line carries no evidence of who wrote it: neither counted nor attributable
            tag, source = got.get(path, {}).get(row["line"], (None, ""))
            attributed = row["line"] in got.get(path, {})
            right = attributed and tag is not None and tag == row["turn"]
            if attributed:
                add("attributed")
                add("right", right)
                add(f"attributed:{source}")
                add(f"right:{source}", right)
            if row["turn"]:
                trivial = bool(TRIVIAL.match(row["text"]))
                for key in ("agent", f"agent:{row['agent']}", *(["agentNontrivial"] if not trivial else []),
                            *(["moved"] if row["moved"] else []), *(["reindented"] if row["reindented"] else [])):
                    add(key)
                    add(key + ":right", right)
            else:
                for key in ("human", *(["overAgent"] if row.get("overAgent") else []),
                            *(["untouched"] if path in untouched_files(truth) else [])):
                    add(key)
                    add(key + ":attributed", attributed)

    def ratio(a: str, b: str) -> float | None:
        return round(n.get(a, 0) / n[b], 4) if n.get(b) else None

    out: dict[str, Any] = {
        "precision": ratio("right", "attributed"), "recall": ratio("agent:right", "agent"),
        "recallNontrivial": ratio("agentNontrivial:right", "agentNontrivial"),
        "humanAttributed": ratio("human:attributed", "human"),
        "overAgentAttributed": ratio("overAgent:attributed", "overAgent"),
        "untouchedAttributed": ratio("untouched:attributed", "untouched"),
        "movedRecall": ratio("moved:right", "moved"), "reindentedRecall": ratio("reindented:right", "reindented"),
        "lines": {k: n.get(k, 0) for k in ("agent", "human", "attributed", "moved", "reindented", "overAgent")},
        "perAgent": {a: {"precision": ratio(f"right:{a}", f"attributed:{a}"), "recall": ratio(f"agent:{a}:right",
                                                                                              f"agent:{a}"),
                         "lines": n.get(f"agent:{a}", 0)} for a in agents},
    }
    out["pass"] = bool(out["precision"] is not None and out["precision"] >= TARGETS["precision"]
                       and (out["recall"] or 0) >= TARGETS["recall"]
                       and (out["humanAttributed"] or 0) <= TARGETS["humanAttributed"])
    return out


def untouched_files(truth: dict[str, list[dict[str, Any]]]) -> set[str]:
    return {p for p, rows in truth.items() if not any(r["turn"] for r in rows)}


# --- attributions -------------------------------------------------------------------------------------

def oracle(truth: dict[str, list[dict[str, Any]]]) -> Attribution:
    return {p: {r["line"]: (r["turn"], r["agent"]) for r in rows if r["turn"]} for p, rows in truth.items()}


def last_turn_of_file(script: dict[str, Any], truth: dict[str, list[dict[str, Any]]]) -> Attribution:
    """The naive rule: every line of a file goes to the last agent turn that edited the file."""
    last: dict[str, tuple[str, str]] = {}
    for step in script["steps"]:
        if step["kind"] == "agent":
            for e in step["edits"]:
                last[e["path"]] = (step["tag"], step["agent"])
    return {p: {r["line"]: last[p] for r in rows} for p, rows in truth.items() if p in last}


SOURCES = {"claude": "claude", "claude-code": "claude", "pi": "pi", "codex": "codex"}


def pimem_blame(root: Path, paths: list[str], env: dict[str, str]) -> tuple[Attribution, bool]:
    """``pimem blame FILE --json`` for each file (the CLI contract of issue 23): (attribution, git used)."""
    got: Attribution = {}
    git_used = False
    for rel in paths:
        proc = subprocess.run([sys.executable, "-m", "pimem", "blame", str(root / rel), "--json"], env=env,
                              capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            raise SystemExit(f"score: pimem blame {rel} failed: {proc.stderr.strip()[-400:]}")
        answer = json.loads(proc.stdout)
        git_used = git_used or bool(answer.get("gitUsed"))
        rows: dict[int, tuple[str | None, str]] = {}
        for line in answer.get("lines", []):
            m = TAG.match(line.get("prompt") or "")
            rows[int(line["line"])] = (m.group(1) if m else None, SOURCES.get(str(line.get("source")),
                                                                                str(line.get("source"))))
        got[rel] = rows
    return got, git_used


def service_blame(root: Path, paths: list[str], env: dict[str, str], git: bool) -> tuple[Attribution, bool]:
    """The same through the service in this process (pimem.lineblame.line_history on a reader
    connection, what ``pimem blame`` runs), for histories too large for a process per file."""
    sys.path.insert(0, str(REPO / "server"))
    from pimem.lineblame import line_history
    from pimem.store import connect

    conn = connect(Path(env["MEMORY_DB_PATH"]), create=False, for_writing=False)
    got: Attribution = {}
    git_used = False
    try:
        for rel in paths:
            answer = line_history(conn, str(root / rel), (root / rel).read_text(encoding="utf-8"), git=git)
            git_used = git_used or answer.git_used
            got[rel] = {}
            for line in answer.lines:
                m = TAG.match(line.prompt or "")
                got[rel][line.line] = (m.group(1) if m else None, SOURCES.get(line.source, line.source))
    finally:
        conn.close()
    return got, git_used


def store_env(fixture: Path, work: Path) -> dict[str, str]:
    home = work / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_HOME", "_DIR")) and k != "MEMORY_DB_PATH"}
    env.update(HOME=str(home), MEMORY_DB_PATH=str(work / "memory.db"),
               CLAUDE_CONFIG_DIR=str(fixture.resolve() / "claude"), CODEX_HOME=str(fixture.resolve() / "codex"),
               PI_CODING_AGENT_DIR=str(fixture.resolve() / "pi" / "agent"),
               PYTHONPATH=str(REPO / "server"))
    return env


def without_git(root: Path, run: Callable[[], Any]) -> Any:
    """Run with every project's ``.git`` moved aside (the files outside any repository), then put back."""
    moved = []
    for git_dir in sorted([*root.glob("*/.git"), *root.glob("*/*/.git")]):
        git_dir.rename(git_dir.with_name(".git-aside"))
        moved.append(git_dir)
    try:
        return run()
    finally:
        for git_dir in moved:
            git_dir.with_name(".git-aside").rename(git_dir)


def run(fixture: Path, work: Path, service: bool = False) -> dict[str, Any]:
    script, truth = load(fixture)
    root = Path(script["root"])
    build_repos(root, script["steps"], script.get("initial"), script.get("repoDepth", 1))
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    env = store_env(fixture, work)
    sync = subprocess.run([sys.executable, "-m", "pimem", "sync"], env=env, capture_output=True, text=True)
    if sync.returncode != 0:
        raise SystemExit(f"score: pimem sync failed: {sync.stderr.strip()[-400:]}")
    paths = sorted(truth)
    report: dict[str, Any] = {"fixture": str(fixture), "turns": sum(s["kind"] == "agent" for s in script["steps"]),
                              "oracle": score(truth, oracle(truth)),
                              "lastTurnOfFile": score(truth, last_turn_of_file(script, truth))}
    if service:
        got, used = service_blame(root, paths, env, git=True)
        report["pimemGit"] = dict(score(truth, got), gitUsed=used)
        got, used = service_blame(root, paths, env, git=False)
        report["pimemNoGit"] = dict(score(truth, got), gitUsed=used)
        return report
    got, used = pimem_blame(root, paths, env)
    report["pimemGit"] = dict(score(truth, got), gitUsed=used)
    got, used = without_git(root, lambda: pimem_blame(root, paths, env))
    report["pimemNoGit"] = dict(score(truth, got), gitUsed=used)
    return report


def markdown(report: dict[str, Any]) -> str:
    rows = ["| attribution | precision | recall | recall (non-trivial) | human attributed | moved | reindented "
            "| per agent (precision / recall) | targets |", "|---|---|---|---|---|---|---|---|---|"]
    for name in ("oracle", "lastTurnOfFile", "pimemGit", "pimemNoGit"):
        if name not in report:
            continue
        s = report[name]
        agents = ", ".join(f"{a} {v['precision']} / {v['recall']}" for a, v in s["perAgent"].items())
        rows.append(f"| {name} | {s['precision']} | {s['recall']} | {s['recallNontrivial']} | {s['humanAttributed']} "
                    f"| {s['movedRecall']} | {s['reindentedRecall']} | {agents} | {'pass' if s['pass'] else 'FAIL'} |")
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fixture", type=Path, default=Path(__file__).resolve().parent / "fixtures" / "real")
    parser.add_argument("--work", type=Path, default=Path("/tmp/pimem-blamebench/work"))
    parser.add_argument("--json", type=Path)
    parser.add_argument("--service", action="store_true",
                        help="ask the service in this process (git=True/False) instead of a pimem blame per file")
    args = parser.parse_args()
    report = run(args.fixture, args.work, args.service)
    print(markdown(report))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
