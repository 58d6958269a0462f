"""The push's write path on layout 7 (one GIN over both lowered texts and the grams) against layout 6's
entity indexes (a pg_trgm GIN per lowered text and one on the grams), alternated in one run.

    nice -n 10 .venv/bin/python bench/share_layout7_push.py --turns 5000 --runs 3

bench/share_push.py's ``part_costs``: as member ``alice`` on a fresh store each, binary ``COPY`` into the
push's staging table and its upsert, 2,000 rows a transaction, triggers on; the pushing backend's CPU per
turn, then the admin's to clean every GIN's pending list (work deferred, not saved). The two layouts run
alternately (which goes first flips each round); medians of ``--runs`` rounds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from share.pgserver import running_server
from share_push import _LAYOUT_6_GINS, _LAYOUT_7_GIN, corpus, part_costs

# Both made from the current layout's schema (layout 8: its narrow table dropped first).
LAYOUTS = (("layout 7 (turns_lowered)", _LAYOUT_7_GIN, (), True),
           ("layout 6's three entity GINs", _LAYOUT_6_GINS, (), True))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=5_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    turns = corpus(args.turns, args.seed)
    totals: dict[str, list[float]] = {label: [] for label, *_ in LAYOUTS}
    with tempfile.TemporaryDirectory(prefix="pimem-bench-") as tmp:
        Path(tmp).chmod(0o755)
        with running_server(Path(tmp) / "pg") as server:
            for run in range(args.runs):
                chosen = LAYOUTS if run % 2 == 0 else LAYOUTS[::-1]
                for label, pushed, deferred in part_costs(server, turns, chosen=chosen):
                    totals[label].append((pushed + deferred) * 1000)
                    print(f"round {run + 1}: {label}: push {pushed * 1000:.3f} + deferred "
                          f"{deferred * 1000:.3f} ms/turn", flush=True)
    print("| store | server ms per turn (push + deferred), each round | median |")
    print("|---|---|---|")
    for label, values in totals.items():
        print(f"| {label} | {' / '.join(f'{v:.3f}' for v in values)} | {statistics.median(values):.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
