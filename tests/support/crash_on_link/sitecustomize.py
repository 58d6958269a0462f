"""Test-only crash injection: SIGKILL this Python process at its Nth ``os.link()`` call.

tests/test_migrate.py puts this directory on PYTHONPATH of a ``python -m pimem migrate-codex``
subprocess, so Python imports it at start-up. With ``PIMEM_TEST_KILL_AT_LINK=N`` set, the Nth call
to ``os.link`` (the migration links a fully written temporary file into place) first records what it
was asked to link in ``$PIMEM_TEST_KILL_MARKER`` (JSON: src, dst, srcSize, dstExists) and then kills
the process with SIGKILL: no cleanup handler, no ``finally``, exactly like a power cut or ``kill -9``
between the write and the rename. Without the variable this module does nothing.
"""

from __future__ import annotations

import json
import os
import signal

_KILL_AT = int(os.environ.get("PIMEM_TEST_KILL_AT_LINK") or 0)

if _KILL_AT > 0:
    _real_link = os.link
    _calls = 0

    def _link(src, dst, *args, **kwargs):  # type: ignore[no-untyped-def]
        global _calls
        _calls += 1
        if _calls == _KILL_AT:
            record = {"src": os.fspath(src), "dst": os.fspath(dst), "srcSize": os.path.getsize(src),
                      "dstExists": os.path.lexists(dst)}
            with open(os.environ["PIMEM_TEST_KILL_MARKER"], "w", encoding="utf-8") as marker:
                json.dump(record, marker)
                marker.flush()
                os.fsync(marker.fileno())
            os.kill(os.getpid(), signal.SIGKILL)
        return _real_link(src, dst, *args, **kwargs)

    os.link = _link
