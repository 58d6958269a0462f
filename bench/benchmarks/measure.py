"""Timing and memory: percentiles, and a process run with the peak RSS of its whole process tree."""

from __future__ import annotations

import statistics
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .paths import REPO


def percentile(values: Sequence[float], share: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(1, min(len(ordered), int(-(-share * len(ordered) // 1))))
    return ordered[rank - 1]


def summary(values: Sequence[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "p50": percentile(values, 0.5), "p95": percentile(values, 0.95),
            "max": max(values), "min": min(values), "n": len(values)}


class TreeSampler:
    """RSS of a process and all its descendants, every ``interval`` seconds (psutil)."""

    def __init__(self, pid: int, interval: float = 0.05) -> None:
        import psutil

        self._psutil = psutil
        self.root = psutil.Process(pid)
        self.interval = interval
        self.peak_sum = 0
        self.peak_single = 0
        self.peak_hwm = 0
        self.samples = 0
        self._procs: dict[int, Any] = {pid: self.root}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        psutil = self._psutil
        while not self._stop.is_set():
            try:
                children = self.root.children(recursive=True)
            except psutil.Error:
                children = []
            alive = {self.root.pid: self.root}
            for child in children:
                alive[child.pid] = self._procs.get(child.pid, child)
            self._procs = alive
            total = 0
            for proc in alive.values():
                try:
                    rss = proc.memory_info().rss
                except psutil.Error:
                    continue
                total += rss
                self.peak_single = max(self.peak_single, rss)
                self.peak_hwm = max(self.peak_hwm, vm_hwm(proc.pid))
            self.peak_sum = max(self.peak_sum, total)
            self.samples += 1
            self._stop.wait(self.interval)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def vm_hwm(pid: int) -> int:
    """Peak RSS of a live process (``VmHWM``), bytes; 0 when unknown."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


@dataclass
class ProcessRun:
    command: list[str]
    seconds: float
    returncode: int
    stdout: str
    stderr: str
    peak_sum: int = 0
    peak_single: int = 0
    samples: int = 0


def run_measured(command: Sequence[str], env: dict[str, str], sample: bool = True) -> ProcessRun:
    started = time.perf_counter()
    process = subprocess.Popen(list(command), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    sampler = TreeSampler(process.pid) if sample else None
    stdout, stderr = process.communicate()
    seconds = time.perf_counter() - started
    if sampler is not None:
        sampler.stop()
    return ProcessRun(list(command), seconds, process.returncode, stdout.decode(errors="replace"),
                      stderr.decode(errors="replace"),
                      sampler.peak_sum if sampler else 0,
                      max(sampler.peak_single, sampler.peak_hwm) if sampler else 0,
                      sampler.samples if sampler else 0)
