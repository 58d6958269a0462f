"""A small history with planted secrets, written as a real Pi v3 session file, for the tests of
what agents get (the secrets must never reach them, the rest of the turn must)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from . import secrets

CWD = "/tmp/pimem-mcp-demo/zephyr"
SESSION_ID = "01a2f000-0000-7000-8000-00000000a001"
ENTITY = "zephyr_cache"
TRIGGER = f"Didn't we fix the `{ENTITY}` deploy before?"

# The turns of the session, in order: (user text, reply text). Turn 2 is the one about ENTITY.
TURNS = [
    ("Set up the deploy pipeline for the zephyr service.",
     "Added a GitHub Actions workflow that builds and deploys zephyr on every push to main."),
    (f"The {ENTITY} deploy fails with 403 Forbidden. The CI log shows AWS_ACCESS_KEY_ID={secrets.AWS_KEY_ID} "
     f"and GITHUB_TOKEN={secrets.GITHUB_CLASSIC}; the deploy key is:\n{secrets.PEM}\nWhat is wrong?",
     f"The {ENTITY} deploy used an expired key. Rotate {secrets.AWS_KEY_ID}, put the new one in the "
     f"repository secrets, and set password={secrets.PASSWORD} only in the vault, then connect with "
     f"postgres://deploy:{secrets.PASSWORD}@db.internal/zephyr. Call the API with "
     f"Authorization: Bearer {secrets.JWT} and OPENAI_API_KEY={secrets.OPENAI_PROJECT}. Fixed: the 403 is gone."),
    ("Does the zephyr deploy need a cache warm-up afterwards?",
     "Yes: run `make warm` once after each deploy so the first requests do not hit a cold cache."),
]
PLANTED_SECRETS = (secrets.AWS_KEY_ID, secrets.GITHUB_CLASSIC, secrets.PASSWORD, secrets.JWT, secrets.OPENAI_PROJECT,
                   *secrets.PEM_BODY.splitlines())


@dataclass(frozen=True)
class Planted:
    pi_agent_dir: Path      # PI_CODING_AGENT_DIR of the history
    session_file: Path
    session_id: str         # pimem's id: "pi:<native id>"
    turn_ids: list[str]     # pimem's turn ids, in session order


def write_history(base: Path) -> Planted:
    """Write the session under ``base/pi/agent/sessions`` (the layout of samples/history)."""
    agent_dir = base / "pi" / "agent"
    folder = agent_dir / "sessions" / ("--" + CWD.strip("/").replace("/", "-") + "--")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"2026-06-01T10-00-00-000Z_{SESSION_ID}.jsonl"
    start_ms = 1_780_308_000_000  # 2026-06-01T10:00:00Z
    records: list[dict[str, object]] = [
        {"type": "session", "version": 3, "id": SESSION_ID, "timestamp": "2026-06-01T10:00:00.000Z", "cwd": CWD}]
    parent: str | None = None
    turn_ids = []
    for number, (user, reply) in enumerate(TURNS):
        for role, text, offset in (("user", user, 0), ("assistant", reply, 1)):
            entry_id = f"{role[0]}{number:07d}"
            ts = start_ms + number * 60_000 + offset * 1000
            message: dict[str, object] = {"role": role, "content": [{"type": "text", "text": text}], "timestamp": ts}
            if role == "assistant":
                message.update({"provider": "mock", "model": "mock-gpt", "stopReason": "stop"})
            iso = f"2026-06-01T10:{number:02d}:{offset:02d}.000Z"
            records.append({"type": "message", "id": entry_id, "parentId": parent, "timestamp": iso,
                            "message": message})
            parent = entry_id
            if role == "user":
                turn_ids.append(f"pi:{SESSION_ID}:{entry_id}")
    path.write_text("".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records), encoding="utf-8")
    return Planted(agent_dir, path, f"pi:{SESSION_ID}", turn_ids)
