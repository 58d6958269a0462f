#!/usr/bin/env python3
"""Every line of scored histories that ``pimem blame`` gets wrong, misses or attributes to a person's line,
with what it has in common with the rest (round 12, docs/benchmarks.md).

    python bench/experiments/l12_classify.py [--git] [--lines] FIXTURE:WORK [FIXTURE:WORK ...]

FIXTURE is a ``bench/blame/synthetic.py`` (or ``generate_real.py``) output, WORK the ``--work`` folder
``bench/blame/score.py --service`` synced it into (its ``memory.db``; the projects are where score.py
rebuilt them, at the script's root). For each non-blank line: WRONG (an agent's line named to another
turn), HUMAN (a person's line attributed), MISS (an agent's line still as written, not attributed), with
its features: ``trivial`` (pimem.editspans.is_trivial), ``copies`` (the same normalized text elsewhere in
the file), ``idiom`` (some call wrote it in another file), ``moved`` / ``reindented`` / ``overAgent``
(the truth's marks), the writing call's agent and kind (``pi-write-blind``: a Pi ``write`` of a session that
does not read first, generate_real.reads_first; ``-new``: the write created the file) and, for an
attributed line, the named call's kind and the confidence. Counts by kind and features at the end.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench" / "blame"))
sys.path.insert(0, str(REPO / "server"))

import score  # noqa: E402
from generate_real import reads_first  # noqa: E402

from pimem import editspans  # noqa: E402
from pimem.lineblame import line_history  # noqa: E402
from pimem.store import connect  # noqa: E402
from pimem.store.edits import path_id, written_elsewhere  # noqa: E402


def call_kind(step: dict[str, Any], edit: dict[str, Any]) -> str:
    whole = edit["old"] is None
    kind = f"{step['agent']}-{'write' if whole else 'edit'}"
    if whole and step["agent"] == "pi":
        kind += "-read" if reads_first(step) else "-blind"
    if whole and str(edit.get("exists")) == "False":
        kind += "-new"
    return kind


def classify(fixture: Path, work: Path, git: bool, show: bool, total: Counter[tuple[str, str]]) -> None:
    script, truth = score.load(fixture)
    root = Path(script["root"])
    kinds: dict[tuple[str, str], list[str]] = {}   # a turn's calls of one file, in order
    for st in script["steps"]:
        for e in st["edits"] if st["kind"] == "agent" else []:
            kind = call_kind(st, e)
            if kind not in kinds.setdefault((st["tag"], e["path"]), []):
                kinds[(st["tag"], e["path"])].append(kind)
    conn = connect(work / "memory.db", create=False, for_writing=False)
    try:
        for rel in sorted(truth):
            text = (root / rel).read_text(encoding="utf-8")
            answers = {a.line: a for a in line_history(conn, str(root / rel), text, git=git).lines}
            fid = path_id(conn, str(root / rel))
            norms = [editspans.normalize(r["text"]) for r in truth[rel]]
            counts = Counter(norms)
            for row in truth[rel]:
                if not row["text"].strip():
                    continue
                got = answers.get(row["line"])
                m = score.TAG.match(got.prompt or "") if got else None
                tag = m.group(1) if m else None
                if (row["turn"] and tag == row["turn"]) or (not row["turn"] and got is None):
                    continue
                kind = "HUMAN" if not row["turn"] else ("WRONG" if got else "MISS")
                n = norms[row["line"]]
                feats = [f for f, on in (("trivial", editspans.is_trivial(n)), ("copies", counts[n] > 1)) if on]
                if counts[n] == 1 and fid is not None and written_elsewhere(conn, fid, [editspans.line_hash(n)]):
                    feats.append("idiom")
                feats += [f for f in ("moved", "reindented", "overAgent") if row.get(f)]
                if row["turn"]:
                    feats.append("+".join(kinds.get((row["turn"], rel), ["?"])))
                if got is not None:
                    feats += [f"got:{'+'.join(kinds.get((tag or '', rel), ['other']))}", f"conf:{got.confidence}"]
                total[(kind, " ".join(feats))] += 1
                if show:
                    print(kind, fixture.name, rel, row["line"] + 1, row["turn"], tag, " ".join(feats),
                          repr(row["text"]))
    finally:
        conn.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("histories", nargs="+", help="FIXTURE:WORK pairs")
    parser.add_argument("--git", action="store_true", help="with git blame (score.py's pimemGit)")
    parser.add_argument("--lines", action="store_true", help="print every line, not only the counts")
    args = parser.parse_args()
    total: Counter[tuple[str, str]] = Counter()
    for pair in args.histories:
        fixture, work = pair.split(":", 1)
        classify(Path(fixture), Path(work), args.git, args.lines, total)
    for (kind, feats), count in sorted(total.items(), key=lambda kv: (kv[0][0], -kv[1])):
        print(count, kind, feats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
