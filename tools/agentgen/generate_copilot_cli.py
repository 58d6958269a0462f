#!/usr/bin/env python3
"""Real GitHub Copilot CLI sessions against the local mock model, for tests/fixtures/copilot-cli/.

Copilot CLI (npm ``@github/copilot``) runs offline with a custom provider: ``COPILOT_OFFLINE=true``,
``COPILOT_PROVIDER_BASE_URL`` (an OpenAI-compatible endpoint: the mock's ``/v1/chat/completions``) and a
``claude-*`` model id, for which the CLI offers its ``view``/``create``/``edit`` file tools (with a ``gpt-*``
id it offers ``apply_patch`` instead). No GitHub account is used.

    python3 tools/agentgen/generate_copilot_cli.py --copilot /path/to/node_modules/@github/copilot-linux-x64/copilot

Writes ``tests/fixtures/copilot-cli/copilot/session-state/<id>/{events.jsonl,workspace.yaml}`` (the other
sidecars, locks and snapshots are left out) and prints the session ids.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
OUT = REPO / "tests" / "fixtures" / "copilot-cli" / "copilot" / "session-state"
PORT = 18932


def run(copilot: str, home: Path, cwd: Path, prompt: str, resume: str | None = None,
        interrupt_after: float | None = None) -> str:
    """One ``copilot -p`` (``interrupt_after``: SIGINT after that many seconds, as Ctrl-C would) and the
    id of its session, from the state folder it wrote."""
    before = set((home / ".copilot" / "session-state").glob("*/events.jsonl"))
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "COPILOT_HOME": str(home / ".copilot"),
           "COPILOT_OFFLINE": "true", "COPILOT_PROVIDER_BASE_URL": f"http://127.0.0.1:{PORT}/v1",
           "COPILOT_PROVIDER_API_KEY": "mock", "COPILOT_MODEL": "claude-sonnet-4.5",
           "COPILOT_AUTO_UPDATE": "false", "COPILOT_ALLOW_ALL": "true", "TZ": "UTC", "NO_COLOR": "1"}
    args = [copilot, "-p", prompt, "--allow-all-tools", "--disable-client-telemetry"]
    if resume:
        args.append(f"--resume={resume}")
    if interrupt_after is not None:
        process = subprocess.Popen(args, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(interrupt_after)
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)
        new = set((home / ".copilot" / "session-state").glob("*/events.jsonl")) - before
        return new.pop().parent.name
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=True)
    match = re.search(r"copilot --resume=([0-9a-f-]{36})", done.stdout + done.stderr)
    if not match:
        raise SystemExit(f"no session id in the output:\n{done.stdout}\n{done.stderr}")
    return match.group(1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--copilot", required=True, help="the copilot binary")
    parser.add_argument("--projects", default="/tmp/pimem-demo")
    options = parser.parse_args()
    projects = Path(options.projects)
    lab = projects / "copilot-lab"
    zh = projects / "中文项目"
    for folder in (lab, zh):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        (folder / "README.md").write_text("# demo\n", encoding="utf-8")
    home = Path(tempfile.mkdtemp(prefix="pimem-copilot-home-"))
    mock = subprocess.Popen([sys.executable, str(HERE / "mock_llm_server.py"), "--port", str(PORT),
                             "--log", str(home / "mock.jsonl")])
    try:
        time.sleep(1.0)
        notes = lab / "notes.md"
        s1 = run(options.copilot, home, lab, "Please run `ls -la` and explain the flamingo cache invalidation bug")
        run(options.copilot, home, lab, f"Please create file `{notes}` with our notes", resume=s1)
        run(options.copilot, home, lab, f"Now edit file `{notes}` to mark flamingo as checked", resume=s1)
        run(options.copilot, home, lab, f"Please read file `{notes}` again", resume=s1)
        s2 = run(options.copilot, home, zh, "缓存 和 锁 有什么区别？")
        # interrupted while its tool runs (the first run in a fresh home unpacks the CLI: give it time)
        s3 = run(options.copilot, home, lab, "Please run `sleep 60` then tell me about flamingo", interrupt_after=20)
    finally:
        mock.terminate()
        mock.wait()
    OUT.mkdir(parents=True, exist_ok=True)
    for session in (s1, s2, s3):
        source = home / ".copilot" / "session-state" / session
        target = OUT / session
        target.mkdir(exist_ok=True)
        for name in ("events.jsonl", "workspace.yaml"):
            shutil.copyfile(source / name, target / name)
        print(session)
    shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
