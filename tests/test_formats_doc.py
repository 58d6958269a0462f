"""docs/formats.md, the agents' formats as the importers read them: every importer cites it, and every
section number cited anywhere in the code, tests or docs is a heading of it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from support.history import REPO

DOC = REPO / "docs" / "formats.md"
IMPORTERS = sorted(path for path in (REPO / "server" / "pimem" / "importers").glob("*.py")
                   if path.stem not in ("__init__", "base"))
# "formats.md section 1", "formats.md 1.5", "formats.md 3.1-3.2"
CITATION = re.compile(r"formats\.md\)?,? (?:section )?(\d+(?:\.\d+)?)(?:\s*[-–]\s*(\d+(?:\.\d+)?))?")
HEADING = re.compile(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", re.M)


def sections() -> set[str]:
    return set(HEADING.findall(DOC.read_text(encoding="utf-8")))


def citing_files() -> list[Path]:
    roots = [REPO / "server", REPO / "tests", REPO / "bench", REPO / "docs"]
    files = [path for root in roots for path in root.rglob("*") if path.suffix in (".py", ".md")
             and not path.is_relative_to(REPO / "bench" / "out")]   # generated corpora, pinned sources
    return sorted(path for path in [*files, REPO / "ARCHITECTURE.md", REPO / "README.md"]
                  if path != DOC and "formats.md" in path.read_text(encoding="utf-8", errors="replace"))


def test_the_sections_the_importers_rely_on_exist() -> None:
    assert {"1", "1.1", "1.5", "2", "2.1", "2.2", "2.4", "2.8", "3", "3.1", "3.2", "3.6"} <= sections()


@pytest.mark.parametrize("importer", IMPORTERS, ids=lambda path: path.stem)
def test_every_importer_cites_the_format_notes(importer: Path) -> None:
    assert "docs/formats.md section" in importer.read_text(encoding="utf-8")


def test_every_cited_section_exists() -> None:
    known = sections()
    cited: list[tuple[str, str]] = []
    for path in citing_files():
        for match in CITATION.finditer(path.read_text(encoding="utf-8")):
            cited += [(str(path.relative_to(REPO)), number) for number in match.groups() if number]
    assert len(cited) >= 8, cited   # the importers, migrate.py, tests/test_migrate.py...
    missing = [(where, number) for where, number in cited if number not in known]
    assert not missing, missing
