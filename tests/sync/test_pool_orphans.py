"""A sync's worker processes end with the process that started them, even when it is killed with SIGKILL
(an editor ending its language server, ``kill -9``): they would otherwise wait on their queue forever."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from support.processes import alive

# A parent that starts the pool as pimem.sync.pool does (spawn, the same initializer) and prints the
# pids of its workers once they run.
PARENT = textwrap.dedent("""
    import concurrent.futures, multiprocessing, os, sys, time
    from pimem.sync import pool
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=context, initializer=pool._worker_init,
                                                initargs=(sys.argv[1], context.Event())) as executor:
        pids = {executor.submit(os.getpid).result() for _ in range(8)}
        print(" ".join(map(str, sorted(pids))), flush=True)
        time.sleep(120)
""")



@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_workers_end_when_their_parent_is_killed(tmp_path: Path) -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(tmp_path / "memory.db")], stdout=subprocess.PIPE,
                              text=True, start_new_session=True)
    try:
        assert parent.stdout is not None
        workers = [int(pid) for pid in parent.stdout.readline().split()]
        assert workers and all(alive(pid) for pid in workers)
        parent.send_signal(signal.SIGKILL)   # the parent only, not its process group
        parent.wait()
        deadline = time.monotonic() + 15
        while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [pid for pid in workers if alive(pid)]
    finally:
        parent.kill()
        with contextlib.suppress(ProcessLookupError):   # whatever is left of its group (a failed run)
            os.killpg(parent.pid, signal.SIGKILL)
