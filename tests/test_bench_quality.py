"""The recall-quality benchmark (bench/quality/) at CI size: a 5,000-turn generated history plus the
labelled conversations, every labelled query asked through ``pimem serve``; the quality targets of
free-text recall (hit@1, hit@5 per kind, overall MRR) must hold. Figures, not time, are asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
RUN = REPO / "bench" / "quality" / "run.py"


@pytest.mark.slow
def test_quality_targets_hold_on_a_small_history(tmp_path: Path) -> None:
    results = tmp_path / "results.json"
    command = [sys.executable, str(RUN), "--turns", "5000", "--dir", str(tmp_path / "history"), "--runs", "0",
               "--check", "--results", str(results)]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=REPO)
    assert completed.returncode == 0, completed.stdout[-4000:] + completed.stderr[-3000:]
    figures = json.loads(results.read_text(encoding="utf-8"))["figures"]
    # The text kinds were found far less often before (today's first-eight-words extraction).
    for kind in ("question", "code", "error"):
        assert figures[kind]["after"]["hit5"] > figures[kind]["before"]["hit5"] + 0.3, kind
    assert figures["entities"]["after"] == figures["entities"]["before"]   # that path is unchanged
    assert figures["all"]["after"]["n"] >= 100
