"""A row another program wrote with text that is not valid UTF-8 (issue 20.9): ``pimem recall`` and the
language server's requests leave that turn out, say so once, never quote it, and answer everything
else as a store without that turn would."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

from support.env import env_for
from support.jsonrpc import LspProcess
from support.sync import sync
from support.undecodable import QUERIES, corrupt, expected, quoted_texts


def test_the_cli_and_the_language_server_leave_the_bad_row_out(base: Path, db: Path, work: Path) -> None:
    sync(base, db, workers=1)
    clean = work / "clean.db"
    victims = corrupt(db, clean)
    texts = quoted_texts(db, clean, victims)
    assert texts
    env = env_for(base, db, HOME=str(work))

    for entities in QUERIES:
        done = subprocess.run([sys.executable, "-m", "pimem", "recall", *entities, "--limit", "10", "--json"],
                              env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        rows = json.loads(done.stdout)
        assert [row["turnId"] for row in rows] == [row["turnId"] for row in expected(clean, entities, 10)]
        # said once by a process that met the rows (at least the queries they answer do), never quoted
        assert done.stderr.count("not valid UTF-8") == 1 or (entities not in QUERIES[:2] and \
            done.stderr.count("not valid UTF-8") == 0), done.stderr
        assert not any(text in done.stderr for text in texts)

    # the turn itself, asked for by id: one line that says why, quoting nothing
    shown = subprocess.run([sys.executable, "-m", "pimem", "show", victims[0]], env=env, capture_output=True,
                           text=True, timeout=120)
    assert shown.returncode == 1 and shown.stderr.count("\n") == 1 and "not valid UTF-8" in shown.stderr
    assert not any(text in shown.stderr for text in texts)

    lsp = LspProcess(env, work / "stderr.log")
    try:
        lsp.initialize(options={"autoSync": False})
        for _ in range(2):               # the second time from the lists the server keeps
            for entities in QUERIES:
                for limit in (1, 5, 20):
                    result = lsp.call("pimem/recall", {"entities": entities, "limit": limit})
                    assert result["results"] == expected(clean, entities, limit), (entities, limit)
        raw = sqlite3.connect(db)
        session_id = raw.execute("SELECT session_id FROM turns WHERE turn_id = ?", (victims[0],)).fetchone()[0]
        raw.close()
        view = lsp.call("pimem/session", {"sessionId": session_id, "after": 50})
        shown = [turn["turnId"] for turn in view["turns"]]
        assert shown and victims[0] not in shown
        # the sidebar's lists: every session, a bad first prompt shown empty; a file's sessions likewise
        for victim in victims:
            raw = sqlite3.connect(db)
            raw.execute("UPDATE turns SET turn_index = -1 WHERE turn_id = ?", (victim,))   # its session's first
            raw.commit()
            touched = raw.execute("SELECT path FROM pimem_touches ORDER BY turn_id = ? DESC LIMIT 1",
                                  (victims[0],)).fetchone()
            raw.close()
        listed = lsp.call("pimem/sessions", {"limit": 500})
        assert listed["total"] == len(listed["sessions"]) > 0
        assert touched is not None
        history = lsp.call("pimem/fileHistory", {"path": touched[0]})
        assert history["sessions"]
        bad = quoted_texts(db, clean, victims, invalid_only=True)
        assert bad and not any(
            text in json.dumps(listed, ensure_ascii=False) + json.dumps(history, ensure_ascii=False) for text in bad)
    finally:
        assert lsp.close() == 0
    log = lsp.stderr()
    assert log.count("not valid UTF-8") == 1 and not any(text in log for text in texts), log[-2000:]
