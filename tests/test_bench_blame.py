"""The line-memory benchmark (bench/blame/, issue 23) at CI size: the committed history the real agents
wrote (bench/blame/fixtures/real: 36 turns of Claude Code, Pi and Codex with people editing in
between), its ground truth, the scorer's own references, and ``pimem blame`` scored against the
targets (precision >= 0.98, recall >= 0.90, <= 1% of human lines attributed). Figures, not time."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
BLAME = REPO / "bench" / "blame"
FIXTURE = BLAME / "fixtures" / "real"
sys.path.insert(0, str(BLAME))

import score  # noqa: E402
from history import Script, apply_step, initial_files  # noqa: E402


@pytest.fixture(scope="module")
def fixture() -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    return score.load(FIXTURE)


def test_the_truth_describes_the_files_the_steps_lead_to(fixture: Any) -> None:
    script, truth = fixture
    files = initial_files()
    for step in script["steps"]:
        apply_step(files, step)
    assert {p: "".join(r["text"] + "\n" for r in rows) for p, rows in truth.items()} == {
        p: files[p] for p in truth}
    # the committed truth is the one the script's model computes (same seed, same sizes)
    replayed = Script(script["seed"], 3, 4)
    assert replayed.history.truth() == truth


def test_every_case_of_the_issue_is_in_the_fixture(fixture: Any) -> None:
    script, truth = fixture
    rows = [r for rs in truth.values() for r in rs if r["text"].strip()]
    agents = {r["agent"] for r in rows if r["turn"]}
    assert agents == {"claude", "pi", "codex"}
    assert sum(r["turn"] is not None and r["moved"] for r in rows) >= 5
    assert sum(r["turn"] is not None and r["reindented"] for r in rows) >= 5
    assert sum(r["overAgent"] for r in rows) >= 3
    assert score.untouched_files(truth) >= {"inventory/inventory/legacy.py", "webui/src/legacy.ts"}
    assert sum(s["kind"] == "commit" for s in script["steps"]) >= 5
    sessions = {(s["agent"], s["session"]) for s in script["steps"] if s["kind"] == "agent"}
    assert len(sessions) == 9


def test_the_transcripts_hold_each_agents_own_edit_tool_calls() -> None:
    names: dict[str, set[str]] = {"claude": set(), "pi": set(), "codex": set()}
    for agent in names:
        for path in (FIXTURE / agent).rglob("*.jsonl"):
            for line in path.read_text(encoding="utf-8").splitlines():
                record = json.loads(line)
                text = json.dumps(record)
                for name in ("Edit", "Write", "edit", "write", "apply_patch"):
                    if f'"name": "{name}"' in text:
                        names[agent].add(name)
    assert {"Edit"} <= names["claude"]
    assert {"edit", "write"} <= names["pi"]
    assert {"apply_patch"} <= names["codex"]


def test_the_scorer_passes_the_truth_and_fails_the_same_file_rule(fixture: Any) -> None:
    script, truth = fixture
    perfect = score.score(truth, score.oracle(truth))
    assert perfect["pass"] and perfect["precision"] == perfect["recall"] == 1.0
    assert perfect["humanAttributed"] == 0.0
    naive = score.score(truth, score.last_turn_of_file(script, truth))
    assert not naive["pass"]
    assert naive["precision"] < 0.5 and naive["humanAttributed"] > 0.2


def test_one_wrong_turn_costs_precision_and_recall(fixture: Any) -> None:
    _, truth = fixture
    got = score.oracle(truth)
    path, line = next((p, r["line"]) for p, rs in truth.items() for r in rs if r["turn"] and r["text"].strip())
    got[path][line] = ("T9999", got[path][line][1])
    s = score.score(truth, got)
    assert s["precision"] < 1.0 and s["recall"] < 1.0 and s["humanAttributed"] == 0.0


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return score.run(FIXTURE, tmp_path_factory.mktemp("blame") / "work")


def test_pimem_blame_does_better_than_the_same_file_rule(measured: dict[str, Any]) -> None:
    naive = measured["lastTurnOfFile"]
    for name in ("pimemGit", "pimemNoGit"):
        figures = measured[name]
        assert figures["precision"] >= naive["precision"] + 0.3, (name, figures)
        assert figures["recall"] >= naive["recall"] + 0.3, (name, figures)
        assert figures["humanAttributed"] <= naive["humanAttributed"] / 2, (name, figures)
    assert measured["pimemGit"]["gitUsed"] and not measured["pimemNoGit"]["gitUsed"]


# Not met yet (docs/benchmarks.md "Memory of each line"): a whole-file write (Claude Write over an
# existing file, Pi write) is credited with every line it contains, also the lines it kept as they were
# (a person's lines, other turns' lines). Strict: when the rule meets the targets this test says so.
@pytest.mark.xfail(strict=True, reason="issue 23 targets not met yet: whole-file writes claim the lines they kept")
def test_pimem_blame_meets_the_targets(measured: dict[str, Any]) -> None:
    for name in ("pimemGit", "pimemNoGit"):
        figures = measured[name]
        assert figures["precision"] >= score.TARGETS["precision"], (name, figures)
        assert figures["recall"] >= score.TARGETS["recall"], (name, figures)
        assert figures["humanAttributed"] <= score.TARGETS["humanAttributed"], (name, figures)
