"""pimem.redact takes time linear in its input on any text: adversarial inputs (near-matches of every rule,
repeated) cost at most a bounded multiple of a same-size realistic text (a ratio, measured in the same
run). A quadratic rule fails the small size at once (10 KB of one took 9 s), a milder one the large size."""

from __future__ import annotations

import time

import pytest

from pimem.redact import redact

from .redaction_set import LOOK_ALIKES, SECRETS

# near-matches: (name, the unit repeated, what follows the repetition)
ADVERSARIAL = [
    ("jwt-prefix", "eyJ", ""), ("jwt-parts", "eyJabcdefghij.", "-"), ("anthropic", "sk-ant-", "_"),
    ("openai", "sk-", ""), ("openai-project", "sk-proj-", "!"), ("openai-long", "sk-a1", "_"),
    ("aws-key-id", "AKIA", "a"), ("aws-signature", "Signature=", "x"),
    ("aws-signature-hex", "Signature=" + "a" * 63, "g"),
    ("github", "ghp_", "-"), ("github-fine", "github_pat_", "-"), ("gitlab", "glpat-", "!"),
    ("slack", "xoxb-", "_"), ("slack-app", "xapp-", "_"), ("slack-webhook", "https://hooks.slack.com/services/", "x"),
    ("google", "AIza", "-"), ("google-oauth", "ya29.", "_"), ("google-secret", "GOCSPX-", "x"),
    ("stripe", "sk_live_", "x"), ("stripe-webhook", "whsec_", "_"), ("npm", "npm_", "-"), ("pypi", "pypi-AgE", "!"),
    ("huggingface", "hf_", "-"), ("alibaba", "LTAI", "a"),
    ("age", "AGE-SECRET-KEY-1", "Q"), ("onepassword", "ops_eyJ", "_"),
    ("azure-sas", "&sig=", "%"), ("bearer", "Bearer ", "x"),
    ("bearer-tabs", "bearer\t", ""),
    ("basic", "Basic ", "QUFB"), ("basic-long", "Basic QUFB", "="), ("putty", "Private-Lines: 1\n", "AAAA"),
    ("putty-lines", "\nAAAAAAAA", "\nPrivate-MAC: "), ("pem-begin", "-----BEGIN RSA PRIVATE KEY-----", ""),
    ("pem-words", "-----BEGIN A A A A A A A A A ", "PUBLIC"), ("pem-headers", "\nProc-Type: 4,ENCRYPTED", ""),
    ("url", "://a:", "b"), ("url-at", "://:b@", ""), ("url-slashes", "://a:b/", "@"), ("url-ats", "@", "://a:"),
    ("mysql", "mysql ", "-p"), ("mysql-flags", "mysql -p", ""), ("mysql-quotes", "mysql -e 'x;' ", "-p"),
    ("curl", "curl -u a:", ""),
    ("netrc", "machine a login b ", ""), ("netrc-logins", "login a password b ", ""),
    ("secret-words", "pass", "="), ("secret-words-key", "key", ":"), ("token-assignments", "token=", ""),
    ("key-colons", "key:", "x"), ("password-quotes", 'password="', "x"), ("escaped-json", '\\"password\\": \\"', "x"),
    ("name-underscores", "_", "password=x"), ("long-name", "a", "password=x"), ("spaced", "password = ", "x"),
    ("prose", "Password: reset ", ""), ("auth", "auth=", "QUFB"), ("yaml-blocks", "password: |\n", ""),
    ("yaml-nested", "password: |\n  ", "x"), ("cwd", "/passpass", "/"), ("cwd-words", "/password", "=x"),
    ("dotted", "a.password", "=x"), ("dashes", "-", "password=x"), ("separators", "password" + " " * 50, "="),
]


def _plain(size: int) -> str:
    """Realistic text of ``size`` characters: the labelled set's look-alikes and secrets, repeated."""
    pieces = [piece for pair in zip(LOOK_ALIKES, SECRETS, strict=False) for piece in (pair[0].text, pair[1].text)]
    text = "\n".join(pieces)
    return (text * (size // len(text) + 1))[:size]


def _adversarial(unit: str, tail: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size - len(tail)] + tail


def _seconds(text: str, runs: int = 3) -> float:
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        redact(text)
        best = min(best, time.perf_counter() - started)
    return best


# Realistic text is found to be dense with matches (the set's secrets); the bound leaves room for rules
# whose near-matches each cost a few microseconds of Python, never for a quadratic one.
MAX_RATIO = 40


@pytest.mark.parametrize(("name", "unit", "tail"), ADVERSARIAL, ids=[name for name, _, _ in ADVERSARIAL])
def test_adversarial_input_costs_a_bounded_multiple_of_plain_text(name: str, unit: str, tail: str) -> None:
    for size in (20_000, 200_000):
        runs = 5 if size < 100_000 else 1
        plain = _seconds(_plain(size), runs=runs + 2)
        attack = _seconds(_adversarial(unit, tail, size), runs=runs)
        assert attack / plain < MAX_RATIO, f"{name}: {size} characters took {attack / plain:.0f}x plain text"
