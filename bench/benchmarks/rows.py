"""The JSON view of a recall row, compared between the engine and the oracle."""

from __future__ import annotations

from typing import Any

try:
    from pimem.wire import recall_row
except ImportError:  # --pimem-rev of a pimem before pimem.wire: its rows had their JSON view themselves
    def recall_row(row: Any) -> dict[str, Any]:
        view: dict[str, Any] = row.to_dict()
        return view

__all__ = ["recall_row"]
