"""pytest-lsp end-to-end fixtures: the real server over stdio, a temporary HOME with real transcripts."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from lsprotocol import types
from pytest_lsp import LanguageClient, make_test_lsp_client

from support.env import history_env


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
