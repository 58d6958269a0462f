"""pimem.paths: the one way folders are compared (a recall's cwd filter, a migration's workspace folder)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pimem.paths import in_folder, normalize_folder, same_folder

posix_only = pytest.mark.skipif(os.sep != "/", reason="POSIX separators")


@posix_only
@pytest.mark.parametrize(("given", "expected"), [
    ("/home/me/alpha/", "/home/me/alpha"),
    ("/home/me/./beta/../alpha", "/home/me/alpha"),
    ("/home//me/alpha//", "/home/me/alpha"),
    ("/", "/"),
    ("//", "/"),
    # On POSIX a backslash is part of a name, not a separator: `alpha\` is another folder (the
    # migration's copy of this helper stripped it, and so took `alpha\` for `alpha`).
    ("/home/me/alpha\\", "/home/me/alpha\\"),
])
def test_normalize_folder(given: str, expected: str) -> None:
    assert normalize_folder(given) == expected


def test_normalize_folder_is_absolute_and_expands_the_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert normalize_folder("~/project/") == str(tmp_path / "project")
    assert normalize_folder("project") == str(tmp_path / "project")


@posix_only
def test_same_folder() -> None:
    assert same_folder("/home/me/alpha/", "/home/me/beta/../alpha")
    assert not same_folder("/home/me/alpha", "/home/me/Alpha")
    assert not same_folder("/home/me/alpha\\", "/home/me/alpha")
    assert not same_folder("", "/home/me/alpha") and not same_folder("/home/me/alpha", "")


@posix_only
@pytest.mark.parametrize(("cwd", "folder", "inside"), [
    ("/home/me/alpha", "/home/me/alpha", True),
    ("/home/me/alpha/src/", "/home/me/alpha", True),
    ("/home/me/alpha/../alpha/x", "/home/me/alpha", True),
    ("/home/me/alphabet", "/home/me/alpha", False),
    ("/home/me", "/home/me/alpha", False),
    ("/anything", "/", True),
    ("relative/alpha", "/", False),      # a recorded relative cwd is in no folder
    ("", "/", False),
])
def test_in_folder(cwd: str, folder: str, inside: bool) -> None:
    assert in_folder(cwd, folder) is inside
