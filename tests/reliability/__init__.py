"""Reliability and privacy tests: hostile files, fuzzing, memory bounds, logs, network (docs/reliability.md)."""
