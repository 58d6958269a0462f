"""Tests of pimem/importers/: every fixture transcript against its expected turns, and per-agent rules."""
