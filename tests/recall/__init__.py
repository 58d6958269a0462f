"""Tests of pimem/recall/: the oracle and the indexed path, weights, free text, limits, formatting."""
