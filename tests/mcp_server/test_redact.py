"""Redaction of what agents get (pimem.redact): real-shaped secrets are masked, the words around them
stay, and near-misses (hashes, SHAs, UUIDs, base64, ordinary words) are left alone. The secrets are
fakes built at run time (secrets.py)."""

from __future__ import annotations

import base64
import hashlib
import uuid

import pytest

from pimem.redact import KINDS, enabled_by_env, redact, redact_value

from .secrets import (
    ALNUM,
    ANTHROPIC,
    AWS_KEY_ID,
    AWS_SECRET,
    AWS_SESSION_KEY_ID,
    BEARER,
    GITHUB_CLASSIC,
    GITHUB_FINE,
    GITHUB_OAUTH,
    GITLAB,
    GOOGLE,
    HUGGINGFACE,
    JWT,
    NPM,
    OPENAI_LEGACY,
    OPENAI_PROJECT,
    OPENSSH,
    PASSWORD,
    PEM,
    PEM_BODY,
    SLACK_BOT,
    SLACK_USER,
    SLACK_WEBHOOK,
    STRIPE,
)
from .secrets import token as _token

# (text, the secret in it, its kind, what must remain around it)
SECRETS = [
    (f"the key id {AWS_KEY_ID} leaked", AWS_KEY_ID, "aws-access-key-id", ("the key id ", " leaked")),
    (f"temporary creds {AWS_SESSION_KEY_ID}", AWS_SESSION_KEY_ID, "aws-access-key-id", ("temporary creds ",)),
    (f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET, "secret", ("aws_secret_access_key = ",)),
    (f"export AWS_SECRET_ACCESS_KEY={AWS_SECRET}", AWS_SECRET, "secret", ("export AWS_SECRET_ACCESS_KEY=",)),
    (f"push with {GITHUB_CLASSIC} please", GITHUB_CLASSIC, "github-token", ("push with ", " please")),
    (f"token: {GITHUB_OAUTH}", GITHUB_OAUTH, "github-token", ("token: ",)),
    (f"GH_TOKEN={GITHUB_FINE} gh pr list", GITHUB_FINE, "github-token", ("GH_TOKEN=", " gh pr list")),
    (f"OPENAI_API_KEY={OPENAI_LEGACY}", OPENAI_LEGACY, "openai-key", ("OPENAI_API_KEY=",)),
    (f"client = OpenAI(api_key=\"{OPENAI_PROJECT}\")", OPENAI_PROJECT, "openai-key", ("client = OpenAI(api_key=\"",)),
    (f"ANTHROPIC_API_KEY={ANTHROPIC} claude", ANTHROPIC, "anthropic-key", ("ANTHROPIC_API_KEY=", " claude")),
    (f"slack bot {SLACK_BOT}.", SLACK_BOT, "slack-token", ("slack bot ", ".")),
    (f"user token {SLACK_USER}", SLACK_USER, "slack-token", ("user token ",)),
    (f"curl -X POST {SLACK_WEBHOOK} -d @msg.json", SLACK_WEBHOOK, "slack-webhook", ("curl -X POST ", " -d @msg.json")),
    (f"maps key {GOOGLE}", GOOGLE, "google-api-key", ("maps key ",)),
    (f"stripe.api_key = '{STRIPE}'", STRIPE, "stripe-key", ("stripe.api_key = '",)),
    (f"//registry.npmjs.org/:_authToken={NPM}", NPM, "npm-token", ("//registry.npmjs.org/:_authToken=",)),
    (f"git clone with {GITLAB}", GITLAB, "gitlab-token", ("git clone with ",)),
    (f"HF_TOKEN={HUGGINGFACE} python train.py", HUGGINGFACE, "huggingface-token", (" python train.py",)),
    (f"Authorization: Bearer {JWT}", JWT, "jwt", ("Authorization: Bearer ",)),
    (f"the session cookie was {JWT}; it expired", JWT, "jwt", ("the session cookie was ", "; it expired")),
    (f"curl -H 'Authorization: Bearer {BEARER}' https://api.example.com", BEARER, "bearer-token",
     ("curl -H 'Authorization: Bearer ", "' https://api.example.com")),
    (f"here is the key:\n{PEM}\nthen chmod 600", PEM, "private-key", ("here is the key:\n", "\nthen chmod 600")),
    (f"{OPENSSH}\n", OPENSSH, "private-key", ()),
    (f"cut off: -----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\nand then we rotated it",
     "-----BEGIN RSA PRIVATE KEY-----\n" + PEM_BODY, "private-key", ("cut off: ", "\nand then we rotated it")),
    (f"DATABASE_URL=postgres://admin:{PASSWORD}@db.internal:5432/shop", PASSWORD, "url-password",
     ("DATABASE_URL=postgres://admin:", "@db.internal:5432/shop")),
    (f"git remote add origin https://me:{GITHUB_CLASSIC}@github.com/me/repo.git", GITHUB_CLASSIC, "github-token",
     ("https://me:", "@github.com/me/repo.git")),
    (f"password={PASSWORD} worked", PASSWORD, "password", ("password=", " worked")),
    (f"mysql -u root --password={PASSWORD} shop", PASSWORD, "password", ("mysql -u root --password=", " shop")),
    (f"PGPASSWORD={PASSWORD} psql -h db", PASSWORD, "password", ("PGPASSWORD=", " psql -h db")),
    (f'{{"user": "admin", "password": "{PASSWORD}"}}', PASSWORD, "password", ('{"user": "admin", "password": "', '"}')),
    (f"db:\n  password: {PASSWORD}\n  host: db", PASSWORD, "password", ("db:\n  password: ", "\n  host: db")),
    (f"api_key: {_token(ALNUM, 32)}", _token(ALNUM, 32), "api-key", ("api_key: ",)),
    (f"X-Api-Key: {_token(ALNUM, 32)}", _token(ALNUM, 32), "api-key", ("X-Api-Key: ",)),
    (f"const clientSecret = '{_token(ALNUM, 30)}';", _token(ALNUM, 30), "secret", ("const clientSecret = '", "';")),
    (f"SECRET_KEY = \"{_token(ALNUM, 50)}\"", _token(ALNUM, 50), "secret", ("SECRET_KEY = \"",)),
    (f"auth_token => {_token(ALNUM, 40)}", _token(ALNUM, 40), "token", ("auth_token => ",)),
    (f"APP_SECRET={_token(ALNUM, 24)} ./run", _token(ALNUM, 24), "secret", ("APP_SECRET=", " ./run")),
    (f"dbpasswd: {PASSWORD}", PASSWORD, "password", ("dbpasswd: ",)),
    (f"authorization: bearer {BEARER}", BEARER, "bearer-token", ("authorization: bearer ",)),
    (f"Grüße, das Passwort: password=\"{PASSWORD}\" für İstanbul", PASSWORD, "password",
     ("Grüße, das Passwort: password=\"", "\" für İstanbul")),
]

NEAR_MISSES = [
    "the password reset email never arrives",
    "Password reset flow: send a link, then ask for a new password.",
    "we store password hashes with bcrypt",
    f"commit {hashlib.sha1(b'x').hexdigest()} fixed it",
    f"sha256 {hashlib.sha256(b'x').hexdigest()}",
    f"md5 {hashlib.md5(b'x').hexdigest()}",
    f"request id {uuid.UUID(int=0x123e4567e89b12d3a456426614174000)}",
    "session 01a22bd8-a0a2-7a83-8a20-650a845c198f and turn msg_01a22bd8-a128-7f62-99f6-705b8d1bffb5",
    "data:image/png;base64," + base64.b64encode(bytes(range(256)) * 4).decode(),
    "an image: " + base64.b64encode(hashlib.sha512(b"png").digest() * 6).decode(),
    "pip install scikit-learn; import sklearn; see sk-learn-tutorial-for-beginners",
    "max_tokens: 4096, input_tokens: 1200, tokenizer: cl100k_base",
    "sort_key = lambda row: row.ts; primary_key: id",
    "password = get_password_from_vault()",
    "password = os.environ['DB_PASSWORD']",
    "token = settings.API_TOKEN",
    "password: ${DB_PASSWORD}",
    "api_key: <your key here>",
    "secret: '***'",
    "PASSWORD=xxxxxxxx",
    "password: null",
    "git@github.com:pimem/pimem.git and https://github.com/pimem/pimem",
    "http://localhost:8080/api and http://[::1]:3000/",
    "ssh user@host and mailto:me@example.com",
    "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n-----END PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBa\n-----END CERTIFICATE-----",
    "Bearer tokens expire after an hour",
    "AKIA is the prefix of AWS access key ids",
    "the ghp_ prefix marks a classic GitHub token",
    "eyJ is what base64 of {\" looks like",
    "flamingo zeta_ratelimit 缓存 锁 100% a_b C:\\path\\file",
    "xoxo, see you",
]


@pytest.mark.parametrize(("text", "secret", "kind", "kept"), SECRETS,
                         ids=[f"{kind}-{i}" for i, (_, _, kind, _) in enumerate(SECRETS)])
def test_secret_is_masked_and_words_around_it_stay(text: str, secret: str, kind: str, kept: tuple[str, ...]) -> None:
    masked = redact(text)
    assert secret not in masked
    assert f"[REDACTED:{kind}]" in masked
    for words in kept:
        assert words in masked
    assert kind in KINDS


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_miss_is_left_alone(text: str) -> None:
    assert redact(text) == text


def test_several_secrets_in_one_text_are_all_masked() -> None:
    text = f"key {AWS_KEY_ID}, token {GITHUB_CLASSIC}, password={PASSWORD}\n{PEM}\nend"
    masked = redact(text)
    for secret in (AWS_KEY_ID, GITHUB_CLASSIC, PASSWORD, PEM_BODY.splitlines()[0]):
        assert secret not in masked
    assert masked.count("[REDACTED:") == 4
    assert masked.startswith("key [REDACTED:aws-access-key-id], token [REDACTED:github-token], password=")
    assert masked.endswith("\nend")


def test_redacting_twice_changes_nothing_more() -> None:
    text = f"password={PASSWORD} and {OPENAI_PROJECT}"
    assert redact(redact(text)) == redact(text)


def test_redact_value_walks_json_and_keeps_other_values() -> None:
    value = {"userText": f"use {GITHUB_CLASSIC}", "toolNames": ["bash", f"x {AWS_KEY_ID}"], "ts": 5, "line": None,
             "nested": {"replyText": f"password={PASSWORD}"}}
    masked = redact_value(value)
    assert masked == {"userText": "use [REDACTED:github-token]",
                      "toolNames": ["bash", "x [REDACTED:aws-access-key-id]"], "ts": 5, "line": None,
                      "nested": {"replyText": "password=[REDACTED:password]"}}


@pytest.mark.parametrize(("value", "enabled"), [(None, True), ("1", True), ("yes", True), ("0", False),
                                                ("false", False), ("OFF", False), (" no ", False)])
def test_env_switch(value: str | None, enabled: bool) -> None:
    env = {} if value is None else {"PIMEM_REDACT": value}
    assert enabled_by_env(env) is enabled
