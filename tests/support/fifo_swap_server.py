"""``pimem serve --stdio`` in which a live update meets a FIFO between its stat and its open.

    PIMEM_TEST_FIFO_NAME=<file name> python tests/support/fifo_swap_server.py

The first time a live update stats a transcript with that file name as a regular file, the file is
replaced by a FIFO right after the stat (the race issue 10 item 17 describes, made certain). Only for
tests/lsp/test_fifo_live_update.py.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import pimem.sync as sync_module
from pimem.cli import main

NAME = os.environ["PIMEM_TEST_FIFO_NAME"]
_swapped: list[str] = []
_real_stat_paths = sync_module.stat_paths


def _stat_then_swap(*args: Any, **kwargs: Any) -> Any:
    files = _real_stat_paths(*args, **kwargs)
    for found in files:
        if os.path.basename(found.path) == NAME and not _swapped:
            os.unlink(found.path)
            os.mkfifo(found.path)
            _swapped.append(found.path)
    return files


if __name__ == "__main__":   # sync's worker processes (spawn) import this module as __mp_main__
    sync_module.stat_paths = _stat_then_swap  # type: ignore[assignment]
    sys.exit(main(["serve", "--stdio"]))
