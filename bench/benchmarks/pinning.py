"""``--pimem-rev REV``: measure pimem as committed at REV, not the working tree (standard library only:
it runs before pimem is imported)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from .paths import REPO


def pin_pimem(argv: Sequence[str]) -> tuple[Path | None, str | None]:
    """With ``--pimem-rev REV`` in ``argv``: ``git archive`` of server/ at REV into
    bench/out/src-<sha>/, put first on ``sys.path``; returns (that server/ folder, the full sha), else
    (None, None)."""
    rev = None
    for index, arg in enumerate(argv):
        if arg == "--pimem-rev" and index + 1 < len(argv):
            rev = argv[index + 1]
        elif arg.startswith("--pimem-rev="):
            rev = arg.split("=", 1)[1]
    if rev is None:
        return None, None
    source, sha = archive_pimem(rev)
    sys.path.insert(0, str(source))
    return source, sha


def archive_pimem(rev: str) -> tuple[Path, str]:
    """``git archive`` of server/ at ``rev`` into bench/out/src-<sha>/ (once); returns (that server/
    folder, the full sha). Also used for ``--baseline-rev``, a second pimem served in the same run."""
    sha = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", f"{rev}^{{commit}}"], capture_output=True,
                         text=True, check=True).stdout.strip()
    target = REPO / "bench" / "out" / f"src-{sha[:12]}"
    if not (target / "server" / "pimem" / "__init__.py").exists():
        target.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(REPO), "archive", sha, "server"], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    return target / "server", sha
