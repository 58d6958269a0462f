"""The server's reads (pimem.lsp.server.PimemServer.read): one after another they run on one thread (its
connection's page cache stays warm), several at once still run at once, and a cancelled read frees the
thread only when it has ended."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator

import pytest

from pimem.lsp.server import PimemServer


@pytest.fixture
def server() -> Iterator[PimemServer]:
    server = PimemServer()
    yield server
    server.close()


def _blocking_read() -> tuple[threading.Event, threading.Event, Callable[[], int]]:
    """(started, release, slow): ``slow`` sets ``started``, waits for ``release``, gives its thread's id."""
    started, release = threading.Event(), threading.Event()

    def slow() -> int:
        started.set()
        release.wait(10)
        return threading.get_ident()

    return started, release, slow


def test_reads_one_after_another_share_a_thread(server: PimemServer) -> None:
    async def main() -> set[int]:
        return {await server.read(threading.get_ident) for _ in range(50)}

    assert len(asyncio.run(main())) == 1


def test_a_read_while_another_runs_does_not_wait_for_it(server: PimemServer) -> None:
    started, release, slow = _blocking_read()

    async def main() -> tuple[int, int, int]:
        first = asyncio.ensure_future(server.read(slow))
        assert await asyncio.get_running_loop().run_in_executor(None, started.wait, 10)
        second = await asyncio.wait_for(server.read(threading.get_ident), 5)   # the slow one still runs
        release.set()
        ident = await first
        return ident, second, await server.read(threading.get_ident)

    slow_ident, other, after = asyncio.run(main())
    assert other != slow_ident and after == slow_ident


def test_a_cancelled_read_frees_its_thread_when_it_ends(server: PimemServer) -> None:
    started, release, slow = _blocking_read()

    async def main() -> tuple[int, int, int]:
        home = await server.read(threading.get_ident)
        first = asyncio.ensure_future(server.read(slow))
        assert await asyncio.get_running_loop().run_in_executor(None, started.wait, 10)
        first.cancel()
        elsewhere = await asyncio.wait_for(server.read(threading.get_ident), 5)   # slow() has not ended
        release.set()
        for _ in range(100):   # slow() ends on its own thread, then that thread takes reads again
            if (ident := await server.read(threading.get_ident)) == home:
                return home, elsewhere, ident
            await asyncio.sleep(0.01)
        return home, elsewhere, -1

    home, elsewhere, again = asyncio.run(main())
    assert elsewhere != home and again == home
