#!/usr/bin/env python3
"""A no-change sync of a large VS Code ``workspaceStorage`` (issue 22: "200 workspaces x 400 sessions sync
with no change in <= 1 s"), against the reference of the same run: a no-change sync of as many one-turn
Claude Code transcripts (the sync every pimem user has today).

Builds under ``--dir`` (default /tmp/pimem-bench-vscode):

* ``vscode/User/workspaceStorage/<ws>/``: ``chatSessions/<id>.jsonl`` (a small mutation log: snapshot,
  request push, response push), ``workspace.json``, ``state.vscdb`` (bytes only), and other extensions'
  folders that discovery must not walk (``redhat.java/jdt_ws`` with ``--noise`` files, ``ms-python.python``);
  and a ``GitHub.copilot-chat/transcripts`` folder with 20 transcripts per workspace;
* ``claude/projects/<p>/<id>.jsonl``: the same number of one-turn Claude transcripts;

imports both once, then times ``--runs`` no-change syncs of each (its own store), interleaved with a third
reference: a sync whose source is absent (its root a missing folder, its store empty: the fixed cost of a
sync: the store's opening, the rules row, the index's reconcile, the last_sync row). It prints the
medians, the ratios, and where the wall time went: CPU (user + system), waits the process asked for
(voluntary context switches: I/O, locks) and preemptions (involuntary ones: other processes on the cores).

    .venv/bin/python bench/experiments/vscode_workspace_storage.py [--workspaces 200 --sessions 400 --runs 5]
    .venv/bin/python bench/experiments/vscode_workspace_storage.py --reuse --runs 9   # time again
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "server"))

from pimem.paths import SourceRoots
from pimem.sync import SyncRequest, run_sync


def chat_log(session: str, n: int) -> str:
    request = {"requestId": f"request_{session}", "timestamp": 1_796_400_000_000 + n,
               "message": {"text": f"question {n} about flamingo"}, "response": [], "variableData": {"variables": []}}
    entries = [{"kind": 0, "v": {"version": 3, "sessionId": session, "creationDate": 1_796_400_000_000 + n,
                                 "requests": []}},
               {"kind": 2, "k": ["requests"], "v": [request]},
               {"kind": 2, "k": ["requests", 0, "response"], "v": [{"value": f"answer {n}"}]}]
    return "".join(json.dumps(entry) + "\n" for entry in entries)


def transcript(session: str, n: int) -> str:
    events = [{"type": "session.start", "data": {"sessionId": session, "copilotVersion": "0.41.2",
                                                   "startTime": "2026-12-04T08:00:00.000Z"},
               "id": f"{session}-1", "timestamp": "2026-12-04T08:00:00.000Z", "parentId": None},
              {"type": "user.message", "data": {"content": f"transcript question {n}"},
               "id": f"{session}-2", "timestamp": "2026-12-04T08:00:01.000Z", "parentId": None},
              {"type": "assistant.message", "data": {"messageId": "m", "content": f"transcript answer {n}",
                                                      "toolRequests": []},
               "id": f"{session}-3", "timestamp": "2026-12-04T08:00:02.000Z", "parentId": None}]
    return "".join(json.dumps(event) + "\n" for event in events)


def claude_line(session: str, n: int) -> str:
    user = {"type": "user", "uuid": f"u-{session}", "sessionId": session, "cwd": "/w",
            "timestamp": "2026-12-04T08:00:01.000Z", "message": {"role": "user", "content": f"question {n}"}}
    reply = {"type": "assistant", "uuid": f"a-{session}", "sessionId": session, "cwd": "/w",
             "timestamp": "2026-12-04T08:00:02.000Z",
             "message": {"role": "assistant", "content": [{"type": "text", "text": f"answer {n}"}]}}
    return json.dumps(user) + "\n" + json.dumps(reply) + "\n"


def build(base: Path, workspaces: int, sessions: int, transcripts: int, noise: int) -> int:
    shutil.rmtree(base, ignore_errors=True)
    storage = base / "vscode" / "User" / "workspaceStorage"
    count = 0
    for w in range(workspaces):
        ws = storage / f"{w:032x}"
        (ws / "chatSessions").mkdir(parents=True)
        (ws / "workspace.json").write_text(json.dumps({"folder": f"file:///w/project{w}"}))
        (ws / "state.vscdb").write_bytes(b"\0" * 4096)
        for s in range(sessions):
            session = f"{w:08x}-{s:04x}-4000-8000-000000000000"
            (ws / "chatSessions" / f"{session}.jsonl").write_text(chat_log(session, s))
            count += 1
        if transcripts:
            (ws / "GitHub.copilot-chat" / "transcripts").mkdir(parents=True)
            for t in range(transcripts):
                session = f"{w:08x}-{t:04x}-4000-9000-000000000000"
                (ws / "GitHub.copilot-chat" / "transcripts" / f"{session}.jsonl").write_text(transcript(session, t))
                count += 1
        for extension in ("redhat.java/jdt_ws/.metadata", "ms-python.python"):
            (ws / extension).mkdir(parents=True)
        for i in range(noise):
            (ws / "redhat.java" / "jdt_ws" / ".metadata" / f"f{i}.json").write_text("{}")
    projects = base / "claude" / "projects"
    per_project = max(1, sessions)
    for i in range(count):
        project = projects / f"-w-project{i // per_project}"
        if i % per_project == 0:
            project.mkdir(parents=True)
        session = f"{i:08x}-0000-4000-8000-000000000000"
        (project / f"{session}.jsonl").write_text(claude_line(session, i))
    return count


def import_once(db: Path, roots: SourceRoots) -> None:
    first = run_sync(SyncRequest(db_path=str(db), roots=roots))
    assert not first.issues, [issue.error for issue in first.issues[:3]]


Run = tuple[float, float, int, int]


def no_change_sync(db: Path, roots: SourceRoots) -> Run:
    """Wall and CPU seconds (this process's user + system time: steadier than the wall on a shared machine),
    and the voluntary and involuntary context switches of the sync."""
    before = resource.getrusage(resource.RUSAGE_SELF)
    wall, cpu = time.perf_counter(), time.process_time()
    stats = run_sync(SyncRequest(db_path=str(db), roots=roots))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    after = resource.getrusage(resource.RUSAGE_SELF)
    assert stats.scanned_files == 0, stats.scanned_files
    return wall, cpu, after.ru_nvcsw - before.ru_nvcsw, after.ru_nivcsw - before.ru_nivcsw


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", type=Path, default=Path("/tmp/pimem-bench-vscode"))
    parser.add_argument("--workspaces", type=int, default=200)
    parser.add_argument("--sessions", type=int, default=400)
    parser.add_argument("--transcripts", type=int, default=20)
    parser.add_argument("--noise", type=int, default=50, help="files of another extension per workspace")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--reuse", action="store_true", help="keep the tree and stores built by an earlier run")
    args = parser.parse_args()
    user = args.dir / "vscode" / "User"
    chat_roots = SourceRoots(copilot_chat=(user / "workspaceStorage",
                                           user / "globalStorage" / "emptyWindowChatSessions"))
    claude_roots = SourceRoots(claude=(args.dir / "claude" / "projects",))
    absent_roots = SourceRoots(copilot_chat=(args.dir / "absent" / "workspaceStorage",))
    load = f"{os.getloadavg()[0]:.1f}"
    if args.reuse:
        files = args.workspaces * (args.sessions + args.transcripts)
        # stores built by an older pimem: a first sync re-parses what newer importer rules ask for
        import_once(args.dir / "chat.db", chat_roots)
        import_once(args.dir / "claude.db", claude_roots)
    else:
        started = time.perf_counter()
        files = build(args.dir, args.workspaces, args.sessions, args.transcripts, args.noise)
        print(f"built {files} chat files + {files} Claude files in {time.perf_counter() - started:.1f} s")
        import_once(args.dir / "chat.db", chat_roots)
        import_once(args.dir / "claude.db", claude_roots)
    if not (args.dir / "absent.db").exists():
        import_once(args.dir / "absent.db", absent_roots)   # a store that never saw the source
    # Interleaved, so that a busy period of the machine weighs on all alike.
    chat: list[Run] = []
    claude: list[Run] = []
    absent: list[Run] = []
    for _ in range(args.runs):
        chat.append(no_change_sync(args.dir / "chat.db", chat_roots))
        claude.append(no_change_sync(args.dir / "claude.db", claude_roots))
        absent.append(no_change_sync(args.dir / "absent.db", absent_roots))
    print(f"load average before/after: {load} / {os.getloadavg()[0]:.1f}")
    print(f"| no-change sync of {files:,} files | median wall s | median CPU s | waits (vol. switches) | "
          f"preemptions (invol. switches) | wall of each run |\n|---|---|---|---|---|---|")
    medians = []
    for label, runs in ((f"VS Code workspaceStorage ({args.workspaces} x ({args.sessions} logs + "
                         f"{args.transcripts} transcripts))", chat),
                        ("Claude Code, one-turn transcripts (reference)", claude),
                        ("workspaceStorage absent (reference: a sync's fixed cost)", absent)):
        wall, cpu = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
        medians.append((wall, cpu))
        print(f"| {label} | {wall:.3f} | {cpu:.3f} | {statistics.median(r[2] for r in runs):.0f} | "
              f"{statistics.median(r[3] for r in runs):.0f} | {', '.join(f'{r[0]:.3f}' for r in runs)} |")
    print(f"ratio (workspaceStorage / Claude reference): wall {medians[0][0] / medians[1][0]:.2f}, "
          f"CPU {medians[0][1] / medians[1][1]:.2f}")
    print(f"ratio (workspaceStorage / absent): wall {medians[0][0] / medians[2][0]:.1f}, "
          f"CPU {medians[0][1] / medians[2][1]:.1f}")

if __name__ == "__main__":
    main()
