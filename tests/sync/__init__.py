"""Tests of pimem/sync/: incremental sync, crash safety, robustness of the parse-and-commit engine."""
