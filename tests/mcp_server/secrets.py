"""Fake, real-shaped secrets, built at run time from pieces so that the repository holds no string
a secret scanner would flag. None of them is a real credential."""

from __future__ import annotations

import base64
import hashlib

ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
URLSAFE = ALNUM + "-_"


def token(alphabet: str, length: int, salt: str = "") -> str:
    """A deterministic pseudo-random token over ``alphabet`` (it mixes digits and letters)."""
    digest = hashlib.sha256(f"{alphabet}{length}{salt}".encode()).digest() * 8
    return "".join(alphabet[byte % len(alphabet)] for byte in digest[:length])


AWS_KEY_ID = "AKIA" + token(UPPER, 16)
AWS_SESSION_KEY_ID = "ASIA" + token(UPPER, 16)
AWS_SECRET = token(ALNUM + "/+", 40)
GITHUB_CLASSIC = "ghp" + "_" + token(ALNUM, 36)
GITHUB_OAUTH = "gho" + "_" + token(ALNUM, 36)
GITHUB_FINE = "github" + "_pat_" + token(ALNUM, 22) + "_" + token(ALNUM, 59)
OPENAI_LEGACY = "sk-" + token(ALNUM, 20) + "T3Blbk" + "FJ" + token(ALNUM, 20, "b")
OPENAI_PROJECT = "sk-" + "proj-" + token(URLSAFE, 156)
ANTHROPIC = "sk-" + "ant-api03-" + token(URLSAFE, 93) + "AA"
SLACK_BOT = "xox" + "b-" + "1234567890" + "-" + "9876543210" + "-" + token(ALNUM, 24)
SLACK_USER = "xox" + "p-" + "1234567890-2345678901-3456789012-" + token("0123456789abcdef", 32)
SLACK_WEBHOOK = ("https://hooks.slack" + ".com/services/T" + token(UPPER, 8) + "/B" + token(UPPER, 8, "b") + "/"
                 + token(ALNUM, 24))
GOOGLE = "AI" + "za" + token(URLSAFE, 35)
STRIPE = "sk" + "_live_" + token(ALNUM, 24)
NPM = "npm" + "_" + token(ALNUM, 36)
GITLAB = "glpat" + "-" + token(URLSAFE, 20)
HUGGINGFACE = "hf" + "_" + token(ALNUM, 34)
JWT = ("eyJ" + base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")[3:]
       + ".eyJ" + base64.urlsafe_b64encode(b'{"sub":"1234567890","name":"Jo"}').decode().rstrip("=")[3:]
       + "." + token(URLSAFE, 43))
PEM_BODY = "\n".join(token(ALNUM + "+/", 64, str(line)) for line in range(4))
PEM = "-----BEGIN RSA " + "PRIVATE KEY-----\n" + PEM_BODY + "\n-----END RSA " + "PRIVATE KEY-----"
OPENSSH = "-----BEGIN OPENSSH " + "PRIVATE KEY-----\n" + PEM_BODY + "\n-----END OPENSSH " + "PRIVATE KEY-----"
PASSWORD = "Tr0ub4dor&3x"
BEARER = token(URLSAFE + ".", 48)
