"""Fresh session ids for copies of real transcripts."""

from __future__ import annotations

import re
import uuid

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def fresh_ids(text: str, salt: int) -> str:
    """Every UUID in ``text`` replaced by another one (deterministic per ``salt``), so a copy of a
    transcript is a session of its own and cannot touch the original's rows. The same UUID gets the
    same replacement wherever it is (in the records and in the file name)."""
    mask = (salt << 64) | salt | 1
    return _UUID.sub(lambda match: str(uuid.UUID(int=uuid.UUID(match.group(0)).int ^ mask)), text)
