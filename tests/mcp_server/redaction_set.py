"""A labelled set for pimem.redact: secrets that must be masked (per kind, several realistic shapes and
contexts each) and look-alikes that must stay byte for byte (per category: code, prose, paths, hashes,
UUIDs, image digests, types, URLs, CSS classes, placeholders, command lines, base64, public keys).

Every secret is synthesized at import time from a seeded generator and assembled from pieces, so that the
repository holds no string a secret scanner would flag; none is a real credential. ``python -m
tests.mcp_server.redaction_set`` prints the figures table of docs/mcp.md.
"""

from __future__ import annotations

import base64
import hashlib
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass

_RNG = random.Random(20_2026)
LOWER = "abcdefghijklmnopqrstuvwxyz"
UPPER = LOWER.upper()
DIGITS = "0123456789"
ALNUM = UPPER + LOWER + DIGITS
URLSAFE = ALNUM + "-_"
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"


def rand(alphabet: str, length: int) -> str:
    """Random over ``alphabet``; when it holds letters and digits, the result mixes both (as real tokens do)."""
    while True:
        text = "".join(_RNG.choice(alphabet) for _ in range(length))
        wants_mix = any(c.isdigit() for c in alphabet) and any(c.isalpha() for c in alphabet)
        if not wants_mix or (any(c.isdigit() for c in text) and any(c.isalpha() for c in text)):
            return text


def password() -> str:
    return rand(LOWER, 4).capitalize() + rand(DIGITS, 2) + _RNG.choice("!&#%^") + rand(ALNUM, 5)


@dataclass(frozen=True)
class Secret:
    kind: str           # the row of the figures table (the kind pimem should report)
    text: str
    secret: str         # must be absent from the redacted text


@dataclass(frozen=True)
class LookAlike:
    category: str
    text: str           # must come back byte for byte


def _b64(data: str) -> str:
    return base64.b64encode(data.encode()).decode()


# Contexts a token with a recognisable shape appears in.
_TOKEN_CONTEXTS: tuple[Callable[[str], str], ...] = (
    lambda s: f"I used {s} for the deploy, then rotated it.",
    lambda s: f"export DEPLOY_CRED={s}\n./deploy.sh",
    lambda s: f'{{"service": "ci", "value": "{s}"}}',
    lambda s: f"curl -H 'X-Custom: {s}' https://api.example.com/v1/items",
    lambda s: f"const value = '{s}';",
    lambda s: f"the log printed `{s}` in clear text",
)


def _shape_tokens() -> list[tuple[str, Callable[[], str]]]:
    return [
        ("aws-access-key-id", lambda: "AK" + "IA" + rand(UPPER + "234567", 16)),
        ("aws-access-key-id", lambda: "AS" + "IA" + rand(UPPER + "234567", 16)),
        ("github-token", lambda: "gh" + _RNG.choice("pousr") + "_" + rand(ALNUM, 36)),
        ("github-token", lambda: "github" + "_pat_" + rand(ALNUM, 22) + "_" + rand(ALNUM, 59)),
        ("gitlab-token", lambda: "gl" + "pat-" + rand(URLSAFE, 20)),
        ("openai-key", lambda: "sk-" + "proj-" + rand(URLSAFE, 120)),
        ("openai-key", lambda: "sk-" + rand(ALNUM, 20) + "T3Blbk" + "FJ" + rand(ALNUM, 20)),
        ("openai-key", lambda: "sk-" + "svcacct-" + rand(URLSAFE, 80)),
        ("anthropic-key", lambda: "sk-" + "ant-api03-" + rand(URLSAFE, 93) + "AA"),
        ("slack-token", lambda: "xo" + "xb-" + rand(DIGITS, 12) + "-" + rand(DIGITS, 13) + "-" + rand(ALNUM, 24)),
        ("slack-token", lambda: "xa" + "pp-1-A" + rand(UPPER + DIGITS, 10) + "-" + rand(DIGITS, 13) + "-"
         + rand(HEX, 64)),
        ("google-api-key", lambda: "AI" + "za" + rand(URLSAFE, 35)),
        ("google-oauth-token", lambda: "ya" + "29." + "a0" + rand(URLSAFE, 150)),
        ("google-client-secret", lambda: "GOC" + "SPX-" + rand(URLSAFE, 28)),
        ("stripe-key", lambda: "sk" + "_live_" + rand(ALNUM, 24)),
        ("stripe-key", lambda: "rk" + "_test_" + rand(ALNUM, 99)),
        ("stripe-key", lambda: "wh" + "sec_" + rand(ALNUM, 32)),
        ("npm-token", lambda: "np" + "m_" + rand(ALNUM, 36)),
        ("pypi-token", lambda: "py" + "pi-" + "AgEIcHlwaS5vcmc" + rand(URLSAFE, 120)),
        ("huggingface-token", lambda: "h" + "f_" + rand(ALNUM, 34)),
        ("alibaba-access-key-id", lambda: "LT" + "AI" + rand(ALNUM, 20)),
        ("age-secret-key", lambda: "AGE-SECRET" + "-KEY-1" + rand("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)),
        ("1password-token", lambda: "op" + "s_eyJ" + rand(ALNUM + "+/", 300)),
        ("jwt", lambda: "ey" + "J" + _b64('{"alg":"HS256","typ":"JWT"}').rstrip("=")[3:] + ".ey" + "J"
         + _b64('{"sub":"' + rand(DIGITS, 8) + '"}').rstrip("=").replace("+", "-").replace("/", "_")[3:] + "."
         + rand(URLSAFE, 43)),
    ]


def _pem(label: str) -> tuple[str, str]:
    body = "\n".join(rand(B64, 64) for _ in range(5))
    dashes = "-----"
    return f"{dashes}BEGIN {label}PRIVATE KEY{dashes}\n{body}\n{dashes}END {label}PRIVATE KEY{dashes}", body


def _secrets() -> list[Secret]:
    found: list[Secret] = []
    for kind, make in _shape_tokens():
        for context in _TOKEN_CONTEXTS[:3] if kind in ("stripe-key", "openai-key", "github-token", "slack-token",
                                                       "aws-access-key-id", "alibaba-access-key-id",
                                                       "age-secret-key", "1password-token") else _TOKEN_CONTEXTS:
            token = make()
            found.append(Secret(kind, context(token), token))

    def add(kind: str, text: str, secret: str) -> None:
        found.append(Secret(kind, text, secret))

    # AWS: the secret access key (no shape of its own: its name says it), request signatures
    for template in ("aws_secret_access_key = {s}", "export AWS_SECRET_ACCESS_KEY={s}",
                     '{{"AccessKeyId": "x", "SecretAccessKey": "{s}"}}', "  secretAccessKey: {s}\n"):
        s = rand(ALNUM + "/+", 40)
        add("secret", template.format(s=s), s)
    for template in ("https://bucket.s3.amazonaws.com/report.pdf?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential="
                     "AKIDEXAMPLE%2F20261206%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20261206T120000Z"
                     "&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature={s}",
                     "Authorization: AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261206/us-east-1/s3/aws4_request, "
                     "SignedHeaders=host;x-amz-date, Signature={s}",
                     "presigned: ...&X-Amz-Signature={s}&x-id=GetObject"):
        s = rand(HEX, 64)
        add("aws-signature", template.format(s=s), s)
    # private keys
    for label in ("RSA ", "OPENSSH ", "EC ", "", "ENCRYPTED "):
        block, body = _pem(label)
        add("private-key", f"here is the key:\n{block}\nthen chmod 600", body.splitlines()[2])
    block, body = _pem("RSA ")
    add("private-key", "cut off: " + block[:200], block[40:120])
    add("private-key", '{"content": "' + block.replace("\n", "\\n") + '"}', body.splitlines()[1])
    private = "\n".join(rand(B64, 64) for _ in range(3))
    add("private-key", "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: me@laptop\nPublic-Lines: 2\n"
        f"{rand(B64, 64)}\n{rand(B64, 20)}\nPrivate-Lines: 3\n{private}\nPrivate-MAC: {rand(HEX, 64)}\n",
        private.splitlines()[1])
    # bearer and HTTP Basic credentials
    for template in ("curl -H 'Authorization: Bearer {s}' https://api.example.com", "authorization: bearer {s}",
                     'headers: {{"Authorization": "Bearer {s}"}}'):
        s = rand(URLSAFE + ".", 48)
        add("bearer-token", template.format(s=s), s)
    for template in ("curl -H 'Authorization: Basic {s}' https://ci.example.com",
                     '{{"auths": {{"registry.example.com": {{"auth": "{s}"}}}}}}',
                     "//registry.example.com/:_auth={s}", "Authorization: basic {s}"):
        s = _b64(f"{rand(LOWER, 6)}:{password()}")
        add("basic-auth", template.format(s=s), s)
    # Azure
    for template in ("https://acct.blob.core.windows.net/c/f.zip?sv=2024-11-04&ss=b&srt=sco&sp=r&se=2026-12-31"
                     "T00:00:00Z&spr=https&sig={s}",
                     "BlobEndpoint=https://a.blob.core.windows.net/;SharedAccessSignature=sv=2024-11-04&sig={s}",
                     "az storage blob download --sas-token '?sv=2024-11-04&sr=b&sig={s}'"):
        s = rand(ALNUM, 30) + "%2B" + rand(ALNUM, 10) + "%3D"
        add("azure-sas-signature", template.format(s=s), s[:30])
    for template in ("DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={s};EndpointSuffix=core.windows.net",
                     'AZURE_STORAGE_KEY="{s}"',
                     "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=root;SharedAccessKey={s}"):
        s = rand(B64, 86) + "=="
        add("secret", template.format(s=s), s[:60])
    # URL passwords
    for template in ("DATABASE_URL=postgres://admin:{s}@db.internal:5432/shop", "redis://:{s}@cache:6379/0",
                     "mongodb+srv://app:{s}@cluster0.example.net/test", "amqp://guest:{s}@rabbit//",
                     "git clone https://bob:{s}@git.example.com/team/repo.git"):
        s = password()
        add("url-password", template.format(s=s), s)
    for s in (rand(ALNUM, 6) + "/" + rand(ALNUM, 6), rand(ALNUM, 6) + "@" + rand(ALNUM, 6),
              rand(ALNUM, 6) + "/" + rand(ALNUM, 6) + "@" + rand(ALNUM, 6)):
        add("url-password", f"mysql://root:{s}@mysql.local:3306/app", s)
    # passwords: assignments in every notation, command lines, .netrc
    for template in ("password={s} worked", "mysql -u root --password={s} shop", "PGPASSWORD={s} psql -h db",
                     '{{"user": "admin", "password": "{s}"}}', "db:\n  password: {s}\n  host: db",
                     '{{\\"password\\": \\"{s}\\"}}', 'curl -d "{{\\"username\\":\\"a\\",\\"password\\":\\"{s}\\"}}" '
                     "https://x", "_password={s}", "DB_PASS: '{s}'", "dbpasswd: {s}",
                     "Grüße, das Passwort: password=\"{s}\" für İstanbul", "mysql -uroot -p{s} shop",
                     "mysqldump -h db -u app -p'{s}' app > dump.sql", "curl -u alice:{s} https://ci.example.com",
                     "curl --user 'deploy:{s}' -X POST https://x", "machine api.example.com login bob password {s}",
                     "machine git.example.com\n  login alice\n  password {s}\n", "default login anon password {s}",
                     "spring.datasource.password={s}", "ConnectionString: Server=db;User Id=sa;Password={s};",
                     "mysql -e 'select 1;' -p'{s}' shop", "cd /srv && mysql -e 'show tables' ; mysql -uroot -p{s} app",
                     "mysql -h db -e 'select 1' && curl -u ci:{s} https://ci.example.com"):
        s = password().replace("&", "#")
        add("password", template.format(s=s), s)
    blob = rand(B64, 6000)
    add("secret", f"SIGNING_PRIVATE_KEY={blob}\nnext line", blob[3000:3100])
    s1, s2 = password(), password()
    add("password", f"creds:\n  password: |\n    {s1}\n    {s2}\n  user: x\n", s1)
    add("password", f"key:\n  db_password: >-\n    {s1}{s2}\nnext: 1\n", s1 + s2)
    # secrets, api keys, tokens named by their assignment
    for template in ("const clientSecret = '{s}';", 'SECRET_KEY = "{s}"', "SECRET_KEY_BASE={s}", "APP_SECRET={s} ./run",
                     "client_secret: {s}", '"private_key": "{s}"', "JWT_SIGNING_KEY={s}"):
        s = rand(ALNUM, 40)
        add("secret", template.format(s=s), s)
    for template in ("api_key: {s}", "X-Api-Key: {s}", "_api_key = '{s}'", "apiKey: \"{s}\"",
                     'curl -d "{{\\"api_key\\":\\"{s}\\"}}" https://x', "MAPS_APIKEY={s}"):
        s = rand(ALNUM, 32)
        add("api-key", template.format(s=s), s)
    for template in ("auth_token => {s}", "access_token={s}&expires_in=3600", '{{"refresh_token": "{s}"}}',
                     "//registry.npmjs.org/:_authToken={s}", "GH_TOKEN: {s}", "X-Amz-Security-Token={s}"):
        s = rand(URLSAFE, 40) if "npmjs" not in template else str(uuid.UUID(int=_RNG.getrandbits(128)))
        add("token", template.format(s=s), s)
    return found


def _hex(data: str, algorithm: str = "sha256") -> str:
    return hashlib.new(algorithm, data.encode()).hexdigest()


def _look_alikes() -> list[LookAlike]:
    items: list[tuple[str, str]] = []
    sha = _hex("x")
    items += [("code", text) for text in (
        "password = get_password_from_vault()", "password = os.environ['DB_PASSWORD']", "token = settings.API_TOKEN",
        "if not token: return", "if not password:\n    raise ValueError('missing')", "user.password = hashed",
        "self.token = token", "return {\"token\": token}", "const apiKey = process.env.API_KEY;",
        "sort_key = lambda row: row.ts; primary_key: id", "max_tokens: 4096, input_tokens: 1200",
        "if password == confirm:", "password_hash = bcrypt.hashpw(password, salt)", "key: value",
        "headers = {\"Authorization\": f\"Bearer {token}\"}", "secret = secrets.token_hex(32)",
        "let token = await getToken();", "auth: oauth2", "auth: true", "for key, value in items.items():",
        "password: hashedPassword,", "token = request.headers.get('X-Token')", "access_key = None",
        "while token: token = next_token(token)", "password = input('Password: ')",
        "api_key = config['api_key']", "key = cache_key(user_id)", "refresh_token: refreshToken",
        "export PASSWORD_FILE=/run/secrets/db", "token_type: Bearer",
        "const token = this.syncState.current?.token ?? first?.token ?? null;",
        'SECRETS = ("password=" + "x1y2", "token=" + value)', "fetch(url, {credentials: 'include'})",
        '"first_pass": {name: summary(first[server]) for server, name in enumerate(names)},',
        "docs: `user.password = hashed`, `if not token: return`, `password: string`, `PWD=/home/…`",
        "the password of `scheme://user:password@host` stays a placeholder; `mysql -p` prompts",
    )]
    items += [("prose", text) for text in (
        "the password reset email never arrives", "Password reset flow: send a link, then ask for a new password.",
        "we store password hashes with bcrypt", "Password: reset it from the portal and try again",
        "Token: the one from step three is fine", "Secret: nobody knows why it works",
        "Key: press Enter to continue", "the default password policy requires twelve characters",
        "Bearer tokens expire after an hour", "Basic usage: run pimem sync first", "password: see the vault entry",
        "Note: the secret key is rotated monthly.", "The auth token is stored in the keychain.",
        "machine learning needs lots of data", "Use curl -u to pass credentials (it prompts for the password).",
        "Passwords must not be logged; tokens neither.", "key: the value column holds the JSON",
        "xoxo, see you", "the mysql -p flag prompts for the password", "token: explained in the glossary",
    )]
    items += [("path", text) for text in (
        "PWD=/home/alice/src/pimem", "OLDPWD=/tmp/build", "cd $PWD && ls",
        "GOOGLE_APPLICATION_CREDENTIALS=/home/u/.config/gcloud/application_default_credentials.json",
        "ssh -i ~/.ssh/id_ed25519 deploy@host", "key_file: ./certs/server.key", "secret: /run/secrets/db_password",
        "token_path = \"/var/run/secrets/kubernetes.io/serviceaccount/token\"",
        "C:\\Users\\bob\\AppData\\Roaming\\npm\\node_modules", "private_key: ~/.ssh/id_rsa",
        "credentials: ../config/credentials.yml", "pwd: /home/alice",
        "/usr/lib/python3/dist-packages/keyring/backend.py",
        "src/auth/token_store.ts", "see tests/mcp_server/secrets.py", "password_file=/etc/mysql/debian.cnf",
    )]
    items += [("hash", text) for text in (
        f"commit {_hex('a', 'sha1')} fixed it", f"sha256 {sha}", f"md5 {_hex('b', 'md5')}",
        f"sha512 {_hex('c', 'sha512')}",
        f"git log: {_hex('d', 'sha1')[:12]} Merge pull request #12", f"integrity: sha512-{_b64(_hex('e', 'sha512'))}",
        f'"checksum": "{_hex("f")}"', f"etag: \"{_hex('g', 'md5')}\"", f"{_hex('h')}  dist/pimem.tar.gz",
        f"password_hash: ${'2b'}$12${_b64(_hex('i', 'md5'))[:53]}", f"cache key {_hex('j')[:16]}",
        f"object {_hex('k', 'sha1')} tree {_hex('l', 'sha1')}", f"blake2: {hashlib.blake2b(b'm').hexdigest()}",
        f"Signature: {_hex('n')[:40]}", f"X-Hub-Signature-256: sha256={_hex('o')}",
    )]
    items += [("uuid", text) for text in (
        *(f"request id {uuid.UUID(int=_RNG.getrandbits(128))}" for _ in range(4)),
        "session 01a22bd8-a0a2-7a83-8a20-650a845c198f and turn msg_01a22bd8-a128-7f62-99f6-705b8d1bffb5",
        f"trace_id={uuid.UUID(int=_RNG.getrandbits(128))}", f'"turnId": "{uuid.UUID(int=_RNG.getrandbits(128))}"',
        f"UUID('{uuid.UUID(int=_RNG.getrandbits(128))}')", f"/sessions/{uuid.UUID(int=_RNG.getrandbits(128))}.jsonl",
        f"user_id: {uuid.UUID(int=_RNG.getrandbits(128))}", f"correlation-id: {uuid.UUID(int=_RNG.getrandbits(128))}",
        f"key {uuid.UUID(int=_RNG.getrandbits(128))} not found",
    )]
    items += [("digest", text) for text in (
        f"image: node@sha256:{_hex('p')}", f"docker pull ubuntu@sha256:{_hex('q')}", f'"digest": "sha256:{_hex("r")}"',
        f"FROM python:3.12-slim@sha256:{_hex('s')}", f"Digest: sha256:{_hex('t')}", f"config: sha256:{_hex('u')}",
        f"ghcr.io/org/app:1.4.2@sha256:{_hex('v')}", f"layers: [sha256:{_hex('w')}, sha256:{_hex('y')}]",
        f"oci://registry.example.com:5000/app@sha256:{_hex('ab')}",
        f"docker-image://localhost:5000/app:latest@sha256:{_hex('ac')}",
        f"docker inspect --format '{{{{.Id}}}}' app -> sha256:{_hex('z')}", f"token_digest: sha256:{_hex('aa')}",
    )]
    items += [("type", text) for text in (
        "password: string;", "password?: string", "token: CancellationToken", "apiKey: string | undefined",
        "secret: Secret<String>", "token: number", "def check(password: str) -> bool:", "password: Option<String>,",
        "key: keyof T", "password: z.string().min(8)", "token: vscode.CancellationToken",
        "fn login(password: &str) -> Result<()>", "access_token: Optional[str] = None", "api_key: SecretStr",
        "interface Creds { password: string; token: string }", "private readonly token: AuthToken;",
        "secret: bytes", "client_secret: String,", "Password string `json:\"password\"`", "token: any",
    )]
    items += [("url", text) for text in (
        "git@github.com:pimem/pimem.git and https://github.com/pimem/pimem", "http://localhost:8080/api@v2",
        "http://[::1]:3000/", "ssh user@host and mailto:me@example.com", "https://registry.npmjs.org/@types%2fnode",
        "postgres://localhost:5432/shop", "redis://redis:6379/0", "https://example.com/@alice/posts",
        "ssh://git@github.com:22/org/repo.git", "https://cdn.jsdelivr.net/npm/pkg@1.2.3/dist/index.js",
        "https://user@bitbucket.org/team/repo.git", "http://proxy:3128/ via http://10.0.0.1:8080/a@b",
    )]
    items += [("css-word", text) for text in (
        "pip install scikit-learn; import sklearn; see sk-learn-tutorial-for-beginners",
        '<div class="sk-circle sk-circle12 sk-child"></div>', ".sk-fading-circle .sk-circle3:before { delay: -1.0s }",
        '<div class="sk-cube-grid sk-cube1-animation-delay-200ms"></div>', "AKIA is the prefix of AWS access key ids",
        "the ghp_ prefix marks a classic GitHub token", "eyJ is what base64 of {\" looks like",
        "npm_config_cache=/tmp/npm",
        "hf_hub_download(repo_id='x')", "xoxb- tokens are bot tokens", "glpat- is GitLab's prefix",
        "the sk-ant- prefix", "ya29. is Google's access-token prefix", "whsec_ marks a webhook secret",
        "AGE-SECRET-KEY-1 starts an age identity", "LTAI is Alibaba's key id prefix", "ops_ marks a 1Password token",
        "ALTAIR and ZLTAIxx are not keys",
        "flamingo zeta_ratelimit 缓存 锁 100% a_b C:\\path\\file",
    )]
    items += [("placeholder", text) for text in (
        "password: ${DB_PASSWORD}", "api_key: <your key here>", "secret: '***'", "PASSWORD=xxxxxxxx", "password: null",
        '"token": "$GITHUB_TOKEN"', 'api_key: "{{ .Values.apiKey }}"', "mysql -uroot -p$MYSQL_PWD shop",
        "curl -u $USER:$PASS https://x", "redis://:${REDIS_PASSWORD}@redis:6379", "password: changeme",
        "machine host login me password $NETRC_PW", "token=%(token)s", "AWS_SECRET_ACCESS_KEY=...", "password: …",
        "export ANTHROPIC_API_KEY=sk-ant-...", "OPENAI_API_KEY=sk-…",
    )]
    items += [("command", text) for text in (
        "mysql -u root -p shop", "mysql -P 3306 -h db -u app", "curl -u alice https://x", "curl -I https://example.com",
        "ps aux | grep mysql", "mysqladmin -u root -p status", "curl -fsSL https://get.example.com | sh",
        "mysql --defaults-file=~/.my.cnf -e 'select 1'", "curl --user-agent pimem/1.0 https://x",
        "mysql shop < dump.sql && mkdir -p /srv/backups", "curl -sSL https://x | sudo -u deploy:staff tee /srv/x",
    )]
    items += [("base64", text) for text in (
        "data:image/png;base64," + base64.b64encode(bytes(range(256)) * 4).decode(),
        "an image: " + base64.b64encode(hashlib.sha512(b"png").digest() * 6).decode(),
        "Authorization: Basic realm=\"api\"", f"content: {_b64('hello world, this is not a secret at all')}",
        "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n-----END PUBLIC KEY-----",
        "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBa\n-----END CERTIFICATE-----",
        f"ssh-ed25519 {_b64(_hex('pub')[:51])} me@laptop", "Public-Lines: 2\nAAAAC3NzaC1lZDI1NTE5\n",
    )]
    return [LookAlike(category, text) for category, text in items]


SECRETS: list[Secret] = _secrets()
LOOK_ALIKES: list[LookAlike] = _look_alikes()


def figures(redact: Callable[[str], str]) -> tuple[dict[str, tuple[int, int]], dict[str, tuple[int, int]]]:
    """Per kind (masked, total) and per look-alike category (kept, total)."""
    masked: dict[str, list[int]] = {}
    for case in SECRETS:
        row = masked.setdefault(case.kind, [0, 0])
        row[0] += case.secret not in redact(case.text)
        row[1] += 1
    kept: dict[str, list[int]] = {}
    for look in LOOK_ALIKES:
        row = kept.setdefault(look.category, [0, 0])
        row[0] += redact(look.text) == look.text
        row[1] += 1
    return ({kind: (row[0], row[1]) for kind, row in masked.items()},
            {category: (row[0], row[1]) for category, row in kept.items()})


def table(redact: Callable[[str], str]) -> str:
    """The figures as the Markdown table of docs/mcp.md."""
    secrets, look_alikes = figures(redact)
    lines = ["| secrets of kind | masked | look-alikes | kept |", "|---|---|---|---|"]
    left = sorted(secrets.items())
    right = sorted(look_alikes.items())
    for index in range(max(len(left), len(right))):
        kind = f"`{left[index][0]}` | {left[index][1][0]}/{left[index][1][1]}" if index < len(left) else " | "
        category = f"{right[index][0]} | {right[index][1][0]}/{right[index][1][1]}" if index < len(right) else " | "
        lines.append(f"| {kind} | {category} |")
    total_masked = sum(row[0] for row in secrets.values())
    total_kept = sum(row[0] for row in look_alikes.values())
    lines.append(f"| **all** | **{total_masked}/{len(SECRETS)}** | **all** | **{total_kept}/{len(LOOK_ALIKES)}** |")
    return "\n".join(lines)


if __name__ == "__main__":
    from pimem.redact import redact as _redact

    print(table(_redact))
