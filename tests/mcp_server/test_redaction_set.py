"""pimem.redact on the labelled set (redaction_set.py): every secret masked (its secret part absent from
the output), every look-alike kept byte for byte; the per-kind figures are printed (docs/mcp.md has them)."""

from __future__ import annotations

import re

import pytest

from pimem.redact import KINDS, redact, redact_kinds

from .redaction_set import LOOK_ALIKES, SECRETS, LookAlike, Secret, table


def test_the_set_is_large_enough() -> None:
    assert len(SECRETS) >= 150
    assert len(LOOK_ALIKES) >= 150
    assert len({case.kind for case in SECRETS}) >= 20


@pytest.mark.parametrize("case", SECRETS, ids=[f"{case.kind}-{index}" for index, case in enumerate(SECRETS)])
def test_secret_is_masked(case: Secret) -> None:
    result = redact_kinds(case.text)
    assert case.secret not in result.text
    for piece in re.split(r"[/@:\n]", case.secret):   # nor any part of it (a password holding / or @)
        assert len(piece) < 6 or piece not in result.text
    assert redact(result.text) == result.text
    assert "[REDACTED:" in result.text
    assert set(result.kinds) <= set(KINDS)
    assert sum(result.kinds.values()) == result.text.count("[REDACTED:")


@pytest.mark.parametrize("look", LOOK_ALIKES,
                         ids=[f"{look.category}-{index}" for index, look in enumerate(LOOK_ALIKES)])
def test_look_alike_is_kept_byte_for_byte(look: LookAlike) -> None:
    assert redact(look.text) == look.text


def test_figures(capsys: pytest.CaptureFixture[str]) -> None:
    figures = table(redact)
    with capsys.disabled():
        print("\n" + figures)
    assert figures.splitlines()[-1] == (f"| **all** | **{len(SECRETS)}/{len(SECRETS)}** | **all** | "
                                        f"**{len(LOOK_ALIKES)}/{len(LOOK_ALIKES)}** |")
