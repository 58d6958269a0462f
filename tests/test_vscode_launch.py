"""The VS Code extension starts its server without importing anything from a workspace (issue 10, item 1).

The server is launched exactly as the extension launches it: the command line of
client-vscode/src/serverLaunch.json (``<python> -I -u <extension>/launcher/launch.py serve``), which
src/launch.ts reads too. The workspace is booby-trapped: ``pimem/``, ``json.py``, ``uuid.py``, ``sqlite3.py``,
``watchdog/`` and others that the server imports, each writing a marker file outside the workspace when
imported. The server runs with that workspace as its working directory (the extension uses its own folder:
this is the worse case) and on PYTHONPATH, does a real session over the sample history, and no marker appears.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import psutil
import pytest

from support.history import SAMPLES, copy_samples
from support.jsonrpc import LspError, LspProcess

REPO = Path(__file__).resolve().parent.parent
CLIENT = REPO / "client-vscode"
SPEC = json.loads((CLIENT / "src" / "serverLaunch.json").read_text(encoding="utf-8"))
LAUNCHER = CLIENT / SPEC["script"]

# Modules the server imports (directly or through its dependencies), planted in the workspace.
TRAPS = (
    "pimem/__init__.py", "pimem/__main__.py", "pimem/cli.py", "json.py", "uuid.py", "sqlite3.py",
    "watchdog/__init__.py", "pygls/__init__.py", "lsprotocol/__init__.py", "attrs/__init__.py",
    "typing_extensions.py", "asyncio.py", "logging.py", "sitecustomize.py", "usercustomize.py",
    "multiprocessing/__init__.py", "concurrent/__init__.py", "platform.py", "sysconfig.py", "orjson.py",
    "zstandard/__init__.py",
)

pytestmark = pytest.mark.e2e


def plant_traps(workspace: Path, markers: Path) -> None:
    """Each trap writes ``<markers>/<its path>.ran`` when Python imports it (only built-ins: it imports nothing)."""
    for relative in TRAPS:
        trap = workspace / relative
        trap.parent.mkdir(parents=True, exist_ok=True)
        marker = markers / (relative.replace("/", "_") + ".ran")
        trap.write_text(f"open({str(marker)!r}, 'w').close()\n", encoding="utf-8")


def client_command(extension: Path) -> list[str]:
    """The server's command line, as src/launch.ts builds it from the same JSON."""
    return [sys.executable, *SPEC["flags"], str(extension / SPEC["script"]), *SPEC["args"]]


def make_extension(base: Path, *, bundled: bool) -> Path:
    """An extension folder: the launcher, and (``bundled``) bundled/libs/pimem, as the .vsix ships them. Without
    the bundle the launcher falls back to the interpreter's own pimem (this venv's)."""
    extension = base / "extension"
    (extension / "launcher").mkdir(parents=True)
    shutil.copy2(LAUNCHER, extension / SPEC["script"])
    if bundled:
        shutil.copytree(REPO / "server" / "pimem", extension / "bundled" / "libs" / "pimem",
                        ignore=shutil.ignore_patterns("__pycache__"))
    return extension


@pytest.mark.parametrize("bundled", [True, False], ids=["bundled-libs", "installed-pimem"])
def test_the_server_imports_nothing_from_the_workspace(tmp_path: Path, bundled: bool) -> None:
    workspace, markers = tmp_path / "workspace", tmp_path / "markers"
    markers.mkdir()
    plant_traps(workspace, markers)
    extension = make_extension(tmp_path, bundled=bundled)
    history = copy_samples(tmp_path / "history")
    env = {
        **os.environ,
        "HOME": str(history / "home"),
        "CLAUDE_CONFIG_DIR": str(history / "claude"),
        "CODEX_HOME": str(history / "codex"),
        "PI_CODING_AGENT_DIR": str(history / "pi" / "agent"),
        # what a workspace-relative PYTHONPATH (a .env file, a task) would do; isolated mode ignores it
        "PYTHONPATH": str(workspace),
    }
    stderr_path = tmp_path / "stderr.txt"
    server = LspProcess(env, stderr_path, command=client_command(extension), cwd=str(workspace))
    failure: AssertionError | LspError | None = None
    try:
        server.call("initialize", {
            "processId": None, "rootUri": workspace.as_uri(), "capabilities": {"window": {"workDoneProgress": True}},
            "initializationOptions": {"dbPath": str(tmp_path / "memory.db"), "autoSync": True},
            "workspaceFolders": [{"uri": workspace.as_uri(), "name": "workspace"}],
        })
        server.notify("initialized", {})
        server.wait_for(lambda message: message.get("method") == "pimem/indexChanged")
        status = server.call("pimem/status", {})
        recall = server.call("pimem/recall", {"entities": ["flamingo"], "limit": 5})
        server.call("shutdown", None)
        server.notify("exit")
        assert server.process.wait(30) == 0
    except (AssertionError, LspError) as error:
        failure = error
    finally:
        server.close()
    log = stderr_path.read_text(encoding="utf-8", errors="replace")
    # not one file of the workspace was imported...
    assert sorted(p.name for p in markers.iterdir()) == [], log
    if failure is not None:
        raise AssertionError(f"{failure}; server stderr: {log}")
    # ...and the server ran for real over the sample history
    assert status["dbPath"] == str(tmp_path / "memory.db"), status
    assert status["totalTurns"] >= 10, status
    assert {row["source"] for row in recall["results"]} >= {"pi", "claude"}, recall
    assert "Traceback" not in log, log


def test_sync_worker_processes_import_nothing_from_the_workspace(tmp_path: Path) -> None:
    """The server's sync starts worker processes (multiprocessing "spawn") for large imports: they inherit the
    isolated mode and the server's sys.path. Run through the launcher (its ``sync`` command, the same code as a
    sync in ``serve``) with 4 files of 12.5 MB, enough for the pool, from a booby-trapped working directory."""
    workspace, markers = tmp_path / "workspace", tmp_path / "markers"
    markers.mkdir()
    plant_traps(workspace, markers)
    projects = tmp_path / "claude" / "projects" / "-tmp-big"
    projects.mkdir(parents=True)
    sample = SAMPLES / "claude/projects/-tmp-pimem-demo-webshop/1ed4dd9a-5989-4487-9ac3-d2b870816ee8.jsonl"
    padding = json.dumps({"type": "x-padding", "data": "a" * 16000}) + "\n"   # a record type importers skip
    for _ in range(4):
        session = str(uuid.uuid4())
        text = sample.read_text(encoding="utf-8").replace("1ed4dd9a-5989-4487-9ac3-d2b870816ee8", session)
        (projects / f"{session}.jsonl").write_text(text + padding * 800, encoding="utf-8")
    env = {**os.environ, "HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
           "CODEX_HOME": str(tmp_path / "codex"), "PI_CODING_AGENT_DIR": str(tmp_path / "pi"),
           "MEMORY_DB_PATH": str(tmp_path / "memory.db"), "PYTHONPATH": str(workspace)}
    extension = make_extension(tmp_path, bundled=True)
    command = [*client_command(extension)[:-len(SPEC["args"])], "sync", "--workers", "2"]
    process = subprocess.Popen(command, cwd=workspace, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    children: dict[int, list[str]] = {}
    parent = psutil.Process(process.pid)
    while process.poll() is None:
        with contextlib.suppress(psutil.Error):   # a process that exits while it is looked at
            for child in parent.children(recursive=True):
                children.setdefault(child.pid, child.cmdline())
        time.sleep(0.02)
    output = process.stdout.read() if process.stdout else ""
    assert sorted(p.name for p in markers.iterdir()) == [], output
    assert process.returncode == 0, output
    assert "imported 16 turns" in output and "0 issues" in output, output
    workers = [argv for argv in children.values() if "--multiprocessing-fork" in argv]
    assert workers, f"the pool was not used: {children}"
    assert all("-I" in argv for argv in workers), workers


def test_the_launcher_refuses_to_run_unisolated(tmp_path: Path) -> None:
    """Without -I the working directory and PYTHONPATH would be on sys.path: one line, exit status 2."""
    result = subprocess.run([sys.executable, str(LAUNCHER), "serve"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=60, stdin=subprocess.DEVNULL)
    assert result.returncode == 2
    assert result.stderr.strip() == "pimem: the VS Code launcher must run in isolated mode (python -I)"


def load_launcher() -> Any:
    spec = importlib.util.spec_from_file_location("pimem_vscode_launch", LAUNCHER)
    assert spec is not None and spec.loader is not None
    launcher = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(launcher)
    return launcher


def test_the_launcher_puts_only_the_bundle_before_the_interpreter_paths(tmp_path: Path) -> None:
    launcher = load_launcher()
    libs = tmp_path / "bundled" / "libs"
    current = ["", "relative/dir", ".", "/usr/lib/python3.11", str(libs)]
    # no bundle (a development checkout): the interpreter's paths, without '' and relative entries
    assert launcher.server_sys_path(current, str(libs)) == ["/usr/lib/python3.11", str(libs)]
    (libs / "pimem").mkdir(parents=True)
    (libs / "pimem" / "__init__.py").write_text("", encoding="utf-8")
    assert launcher.server_sys_path(current, str(libs)) == [str(libs), "/usr/lib/python3.11"]


@pytest.mark.parametrize(("system", "build", "machine", "target"), [
    ("linux", "linux-x86_64", "x86_64", "linux-x64"),
    ("linux", "linux-aarch64", "aarch64", "linux-arm64"),
    ("darwin", "macosx-11.0-arm64", "arm64", "darwin-arm64"),
    ("darwin", "macosx-10.13-x86_64", "arm64", "darwin-x64"),       # an Intel Python under Rosetta loads x64 wheels
    ("darwin", "macosx-10.9-universal2", "arm64", "darwin-arm64"),  # a universal2 Python runs as the machine
    ("win32", "win-amd64", "AMD64", "win32-x64"),
    ("win32", "win-arm64", "ARM64", "win32-arm64"),                 # no such package: finds no folder
    ("freebsd14", "freebsd-14.1-amd64", "amd64", None),
])
def test_the_launcher_names_the_running_interpreters_package_target(
        monkeypatch: pytest.MonkeyPatch, system: str, build: str, machine: str, target: str | None) -> None:
    launcher = load_launcher()
    monkeypatch.setattr(launcher.sys, "platform", system)
    monkeypatch.setattr(launcher.sysconfig, "get_platform", lambda: build)
    monkeypatch.setattr(launcher.platform, "machine", lambda: machine)
    assert launcher.running_target() == target


def test_the_launcher_targets_are_the_packages_built() -> None:
    """Every package target (scripts/bundle-server.mjs TARGETS) is one the launcher can name, so a package's
    platform folder is found by the interpreter it was built for."""
    script = (CLIENT / "scripts" / "bundle-server.mjs").read_text(encoding="utf-8")
    table = script[script.index("export const TARGETS"):]
    built = re.findall(r"'([a-z0-9]+-[a-z0-9]+)':", table[:table.index("};")])
    assert sorted(built) == ["darwin-arm64", "darwin-x64", "linux-arm64", "linux-x64", "win32-x64"]
    systems = {"linux": "linux", "darwin": "darwin", "win32": "win32"}
    arches = {"x64": "x86_64", "arm64": "arm64"}
    launcher = load_launcher()
    for name in built:
        system, arch = name.split("-")
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(launcher.sys, "platform", systems[system])
            patch.setattr(launcher.sysconfig, "get_platform", lambda arch=arch: f"x-{arches[arch]}")
            assert launcher.running_target() == name


def test_the_launcher_adds_the_platform_wheels_of_this_interpreter_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    launcher = load_launcher()
    bundled = tmp_path / "bundled"
    (bundled / "libs" / "pimem").mkdir(parents=True)
    (bundled / "libs" / "pimem" / "__init__.py").write_text("", encoding="utf-8")
    target = launcher.running_target()
    assert target is not None, "this test runs on a platform the extension has packages for"
    version = f"cp{sys.version_info.major}{sys.version_info.minor}"
    other_version = f"cp{sys.version_info.major}{sys.version_info.minor - 1}"
    # a package for another platform, or wheels for another Python version only: nothing is added
    (bundled / "platform" / "win32-arm64" / version).mkdir(parents=True)
    (bundled / "platform" / target / other_version).mkdir(parents=True)
    assert launcher.platform_libs(str(bundled)) is None
    (bundled / "platform" / target / version).mkdir(parents=True)
    folder = str(bundled / "platform" / target / version)
    assert launcher.platform_libs(str(bundled)) == folder
    libs = str(bundled / "libs")
    assert launcher.server_sys_path(["", "/usr/lib/python3"], libs, folder) == [libs, folder, "/usr/lib/python3"]
    # PyPy or a free-threaded build cannot load CPython's wheels
    monkeypatch.setattr(launcher.sys, "abiflags", "t", raising=False)
    assert launcher.platform_libs(str(bundled)) is None
