"""pytest-lsp end-to-end fixtures: the real server over stdio, a temporary HOME with real transcripts."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from lsprotocol import types
from pytest_lsp import LanguageClient, make_test_lsp_client

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples" / "history"


class Recorder:
    """Custom notifications the server sent, and a way to wait for the next one."""

    def __init__(self) -> None:
        self.index_changed: list[Any] = []
        self.sync_status: list[Any] = []
        self.events: dict[str, asyncio.Event] = {}

    def note(self, method: str, params: Any) -> None:
        (self.index_changed if method == "pimem/indexChanged" else self.sync_status).append(params)
        self.events.setdefault(method, asyncio.Event()).set()

    async def wait(self, method: str, timeout: float) -> Any:
        event = self.events.setdefault(method, asyncio.Event())
        await asyncio.wait_for(event.wait(), timeout)
        event.clear()
        return (self.index_changed if method == "pimem/indexChanged" else self.sync_status)[-1]


def make_client() -> tuple[LanguageClient, Recorder]:
    client = make_test_lsp_client()
    recorder = Recorder()
    client.registrations = []  # type: ignore[attr-defined]

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def _register(params: types.RegistrationParams) -> None:
        client.registrations.extend(params.registrations)  # type: ignore[attr-defined]

    @client.feature("pimem/indexChanged")
    def _index_changed(params: Any) -> None:
        recorder.note("pimem/indexChanged", params)

    @client.feature("pimem/syncStatus")
    def _sync_status(params: Any) -> None:
        recorder.note("pimem/syncStatus", params)

    return client, recorder


def history_env(base: Path) -> dict[str, str]:
    return {
        **os.environ,
        "HOME": str(base / "home"),
        "CLAUDE_CONFIG_DIR": str(base / "claude"),
        "CODEX_HOME": str(base / "codex"),
        "PI_CODING_AGENT_DIR": str(base / "pi" / "agent"),
        "MEMORY_DB_PATH": str(base / "memory.db"),
        "PIMEM_LOG_LEVEL": "WARNING",
    }


def copy_samples(base: Path) -> Path:
    shutil.copytree(SAMPLES, base, dirs_exist_ok=True, ignore=shutil.ignore_patterns("MANIFEST.md"))
    (base / "home").mkdir(exist_ok=True)
    return base


_IDS = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def grow_history(base: Path, copies: int) -> int:
    """Copies of every sample transcript with fresh session ids: a history big enough for a sync
    to take seconds (so it can be watched, cancelled and raced)."""
    count = 0
    for source in sorted(SAMPLES.rglob("*.jsonl")):
        if "subagents" in source.parts:
            continue
        text = source.read_text(encoding="utf-8")
        for copy in range(copies):
            mapping = {old: str(uuid.UUID(int=uuid.UUID(old).int ^ (copy + 1))) for old in set(_IDS.findall(text))}
            new_text = _IDS.sub(lambda match, ids=mapping: ids[match.group(0)], text)  # type: ignore[misc]
            name = _IDS.sub(lambda match, ids=mapping: ids.get(match.group(0), match.group(0)),  # type: ignore[misc]
                            source.name)
            target = base / source.relative_to(SAMPLES).parent / f"{copy:04d}" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(new_text, encoding="utf-8")
            count += 1
    return count


def init_params(*, options: dict[str, Any] | None = None, folders: list[Path] | None = None,
                progress: bool = True) -> types.InitializeParams:
    return types.InitializeParams(
        capabilities=types.ClientCapabilities(
            window=types.WindowClientCapabilities(work_done_progress=progress),
            workspace=types.WorkspaceClientCapabilities(workspace_folders=True),
        ),
        initialization_options=options,
        workspace_folders=[types.WorkspaceFolder(uri=folder.as_uri(), name=folder.name) for folder in folders or []],
    )


@contextlib.asynccontextmanager
async def session(base: Path, *, options: dict[str, Any] | None = None, folders: list[Path] | None = None,
                  progress: bool = True) -> AsyncIterator[tuple[LanguageClient, Recorder]]:
    client, recorder = make_client()
    await client.start_io(sys.executable, "-m", "pimem", "serve", "--stdio", env=history_env(base))
    try:
        await client.initialize_session(init_params(options=options, folders=folders, progress=progress))
        yield client, recorder
    finally:
        await asyncio.wait_for(client.shutdown_session(), 20)
        await client.stop()


async def request(client: LanguageClient, method: str, params: Any, timeout: float = 60) -> Any:
    return await asyncio.wait_for(client.protocol.send_request_async(method, params), timeout)
