"""The line-memory benchmark (bench/blame/, issue 23) at CI size: the committed history the real agents
wrote (bench/blame/fixtures/real: 36 turns of Claude Code, Pi and Codex with people editing in
between), its ground truth, the scorer's own references, and ``pimem blame`` scored against the
targets (precision >= 0.98, recall >= 0.90, <= 1% of human lines attributed). Figures, not time."""

from __future__ import annotations

import json
import re
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


def test_pimem_blame_precision_holds_on_the_fixture(measured: dict[str, Any]) -> None:
    # the whole-file write fix (l3-blamefix): before it 0.79 precision and 26% of human lines attributed
    for name in ("pimemGit", "pimemNoGit"):
        figures = measured[name]
        assert figures["precision"] >= score.TARGETS["precision"], (name, figures)
        assert figures["humanAttributed"] <= 0.03, (name, figures)   # was 1 of 34 before the idiom rule
        # a Pi write that created its file (l4-blame): recall 0.77 before, its lines unconfirmed
        assert figures["recall"] >= 0.90, (name, figures)


# Met since the idiom rule (l5-blame; docs/benchmarks.md "Memory of each line"): the one human line
# attributed before (a person's `return result;` where an agent's single-line edit wrote the same text,
# the agent's copy since deleted) is a line calls also wrote in other files, attributed only in a block.
def test_pimem_blame_meets_the_targets(measured: dict[str, Any]) -> None:
    for name in ("pimemGit", "pimemNoGit"):
        figures = measured[name]
        assert figures["precision"] >= score.TARGETS["precision"], (name, figures)
        assert figures["recall"] >= score.TARGETS["recall"], (name, figures)
        assert figures["humanAttributed"] <= score.TARGETS["humanAttributed"], (name, figures)


def test_synthetic_copies_are_independent_histories(tmp_path: Path) -> None:
    import subprocess

    out = tmp_path / "syn"
    subprocess.run([sys.executable, str(BLAME / "synthetic.py"), "--out", str(out), "--copies", "2"], check=True,
                   capture_output=True)
    script = json.loads((out / "script.json").read_text())
    truth = json.loads((out / "truth.json").read_text())
    _, original = score.load(FIXTURE)
    assert truth == {f"c{k:05d}/{p}": rows for k in range(2) for p, rows in original.items()}
    texts = {p: p.read_text(encoding="utf-8") for p in out.rglob("*.jsonl")}
    assert len(texts) == 2 * len(list(FIXTURE.rglob("*.jsonl")))
    joined = "".join(texts.values())
    assert "/tmp/pimem-blamebench/projects/" not in joined and "[pimem-edit:" not in joined
    ids = [set(re.findall(r'"sessionId":"([0-9a-f-]{36})"', t)) for p, t in texts.items() if "/claude/" in str(p)]
    assert all(ids) and len(set().union(*ids)) == len(ids)  # every Claude session has its own id
    times = [s["time"] for s in script["steps"] if s.get("time")]
    one = [s["time"] for s in json.loads((FIXTURE / "script.json").read_text())["steps"]]
    assert (max(times[: len(one)]) - min(times[: len(one)])) > 500 * (max(one) - min(one))  # stretched 600x
    assert min(times[len(one):]) - min(times) >= 86_400  # the second copy a day later


def test_the_hot_file_truth_is_what_its_edits_replay_to(tmp_path: Path) -> None:
    import perf

    big = perf.hot_file(tmp_path, tmp_path / "sessions", 60, 25, 3)
    truth = json.loads((big.parent / "truth.json").read_text())
    text = ""
    for session in sorted((tmp_path / "sessions").rglob("*.jsonl")):
        for line in session.read_text().splitlines():
            msg = json.loads(line).get("message") or {}
            for block in msg.get("content") or []:
                if isinstance(block, dict) and block.get("type") == "toolCall":
                    args = block["arguments"]
                    if block["name"] == "write":
                        text = args["content"]
                    else:
                        edit = args["edits"][0]
                        assert text.count(edit["oldText"]) == 1
                        text = text.replace(edit["oldText"], edit["newText"])
    assert text == big.read_text()
    assert len(truth) == text.count("\n") and truth.count("H0000") < 60


def test_a_batch_is_scored_on_the_lines_of_all_its_histories_not_the_mean_of_their_ratios() -> None:
    """bench/blame/aggregate.py: the counts of each report recovered from its ratios, summed, then divided."""
    from aggregate import summed

    def report(attributed: int, right: int, agent: int, agent_right: int, human: int, human_att: int) -> Any:
        r = score.score({}, {})   # the shape; the figures set below
        r.update(precision=right / attributed, recall=agent_right / agent, humanAttributed=human_att / human,
                 lines=dict(r["lines"], attributed=attributed, agent=agent, human=human))
        r["pass"] = right / attributed >= 0.98 and agent_right / agent >= 0.9 and human_att / human <= 0.01
        return {"pimemNoGit": r}

    # a small history with one wrong line among 4 fails; the batch's lines meet every target
    batch = {"small": report(4, 3, 4, 3, 10, 0), "large": report(400, 400, 410, 400, 300, 1)}
    s = summed(batch, "pimemNoGit")
    assert (s["attributed"], s["right"], s["agent"], s["agentRight"], s["human"], s["humanAttributed"]) == (
        404, 403, 414, 403, 310, 1)
    assert s["precision"] == round(403 / 404, 4) and s["recall"] == round(403 / 414, 4)
    assert s["failing"] == ["small"] and s["passing"] == 1 and s["pass"]
