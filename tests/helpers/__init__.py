"""Helpers shared by the test suite (standard library only)."""
