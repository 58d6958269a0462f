"""What a run prints: Markdown tables, figures, and the machine and corpus it ran on."""

from __future__ import annotations

import contextlib
import os
import platform
import sqlite3
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import generate

from .paths import NODE_DEFAULT, REPO


def mb(value: float) -> str:
    return f"{value / 1e6:,.0f} MB" if value >= 10e6 else f"{value / 1e6:,.1f} MB"


def ratio_text(value: float) -> str:
    return f"{value:,.1f}x" if value < 10 else f"{value:,.0f}x"


def ms(value: float) -> str:
    return f"{value * 1000:,.1f}" if value < 10 else f"{value * 1000:,.0f}"



def machine_info(pimem_src: Path | None, pimem_sha: str | None) -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    ram = 0
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                ram = int(line.split()[1]) * 1024
    node = None
    if NODE_DEFAULT.exists():
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            node = subprocess.run([str(NODE_DEFAULT), "--version"], capture_output=True, text=True,
                                  timeout=30).stdout.strip()
    commit = None
    if pimem_sha is not None:
        commit = f"{pimem_sha[:10]} (--pimem-rev, from {pimem_src})"
    else:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short=10", "HEAD"], capture_output=True,
                                    text=True, timeout=30).stdout.strip()
            dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "server"],
                                   capture_output=True, text=True, timeout=30).stdout.strip()
            if dirty:
                commit += " + uncommitted changes in server/"
    return {"cpu": cpu, "cores": os.cpu_count(), "ram_bytes": ram, "os": platform.platform(),
            "python": platform.python_version(), "sqlite": sqlite3.sqlite_version, "node": node,
            "pimem_commit": commit}


def load_average() -> str:
    """Other programs share the machine: every section says how busy it was."""
    try:
        return " / ".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:
        return "unknown"


def describe_machine(info: dict[str, Any]) -> str:
    return (f"{info['cpu']}, {info['cores']} cores, {info['ram_bytes'] / 2**30:.0f} GiB RAM; {info['os']}; "
            f"Python {info['python']}, SQLite {info['sqlite']}, Node {info['node'] or 'n/a'}; "
            f"pimem at {info['pimem_commit']}")


def describe_corpus(manifest: dict[str, Any]) -> str:
    totals = manifest["totals"]
    agents = manifest["agents"]
    huge = manifest.get("huge") or []
    huge_text = f", incl. {len(huge)} huge sessions of {manifest['huge_mb']} MB" if huge else ""
    per_agent = ", ".join(f"{agent} {agents[agent]['turns']:,}" for agent in generate.AGENTS)
    return (f"{totals['turns']:,} turns ({per_agent}) in "
            f"{totals['files']:,} files, {totals['bytes'] / 1e9:.2f} GB on disk{huge_text}, turn text "
            f"{totals['text_bytes'] / 1e6:,.0f} MB (seed {manifest['seed']}, "
            f"generator v{manifest['generator_version']})")



class Report:
    """Prints and keeps everything printed (for --log) plus structured results (for --results)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.results: dict[str, Any] = {}

    def say(self, text: str = "") -> None:
        print(text, flush=True)
        self.lines.append(text)

    def table(self, header: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
        self.say("| " + " | ".join(header) + " |")
        self.say("|" + "|".join("---" for _ in header) + "|")
        for row in rows:
            self.say("| " + " | ".join(str(cell) for cell in row) + " |")
        self.say()
