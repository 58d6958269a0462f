"""The benchmarks bench/run.py runs, one module each (docs/benchmarks.md):

* full_import: the full import, pimem against the seed (pi-session-memory 0.1.0), with peak RSS;
* recall: warm (``pimem serve``), cold (``pimem recall`` processes), in-process, the seed's LIKE scan;
* sync: the no-change sync (the corpus, the one-turn files), then append: one turn appended to each
  huge session until it is searchable;
* targets: the issue's targets evaluated on what the run measured;
* check: ``--check-only`` (CI): every query answered by the fast path exactly as by the oracle.

context.Bench is what they share (corpus, work folder, report, failures, the commands they time);
measure has the timing and memory sampling, report the Markdown and the machine description, seed
the seed's recall SQL. pinning and paths import no pimem: bench/run.py uses them to choose which
pimem to measure before anything imports it.
"""
