"""What the writers share: timestamps, cheap deterministic ids, and the turn and session to write."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field

# Pi's tool names (Codex uses them too: only bash, a command, versus the others, a path, matters there).
SHELL_AND_FILE_TOOLS = ("bash", "read", "edit", "write")

_ISO_CACHE: dict[int, str] = {}


def iso(ms: int) -> str:
    """Unix ms -> ``2026-11-30T09:45:41.725Z``."""
    seconds, millis = divmod(ms, 1000)
    prefix = _ISO_CACHE.get(seconds)
    if prefix is None:
        t = time.gmtime(seconds)
        prefix = (f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T{t.tm_hour:02d}:{t.tm_min:02d}:"
                  f"{t.tm_sec:02d}")
        if len(_ISO_CACHE) > 4096:
            _ISO_CACHE.clear()
        _ISO_CACHE[seconds] = prefix
    return f"{prefix}.{millis:03d}Z"


class Ids:
    """Deterministic, cheap, UUID-shaped ids: a random per-session prefix plus a counter."""

    def __init__(self, rng: random.Random) -> None:
        self.base = f"{rng.getrandbits(128):032x}"
        self.n = rng.getrandbits(20)

    def uuid(self) -> str:
        self.n += 1
        b = self.base
        return f"{b[:8]}-{b[8:12]}-4{b[13:16]}-a{b[17:20]}-{self.n:012x}"

    def hex(self, width: int) -> str:
        self.n += 1
        return (self.base + f"{self.n:012x}")[-width:]

    def short(self) -> str:
        self.n += 1
        return f"{(int(self.base[:8], 16) + self.n * 2654435761) & 0xFFFFFFFF:08x}"


def uuid7(rng: random.Random, ms: int) -> str:
    r = f"{rng.getrandbits(80):020x}"
    h = f"{ms:012x}"
    return f"{h[:8]}-{h[8:12]}-7{r[:3]}-{'89ab'[rng.getrandbits(2)]}{r[3:6]}-{r[6:18]}"


@dataclass
class Turn:
    user: str
    replies: list[str]        # assistant text parts (the stored reply is "\n".join of the non-empty ones)
    tools: list[tuple[str, str, int]]   # (tool name, command/path, index into pool.outputs), one per call
    ts: int                   # user message time, ms
    thinking: int = -1        # index into pool.thinking, or -1

    @property
    def text_bytes(self) -> int:
        reply = "\n".join(part for part in self.replies if part)
        return len(self.user.encode()) + len(reply.encode())


@dataclass
class SessionSpec:
    agent: str
    index: int
    turns: int
    start_ms: int
    cwd: str
    plants: dict[int, list[tuple[str, str, bool]]] = field(default_factory=dict)  # turn -> (spelling, where, cjk)
    huge_bytes: int = 0
    tiny: bool = False
