"""Regexes for common credential formats, used on *added* lines only.

A match is reported with the value redacted, so the finding itself never leaks
the secret into the log.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("aws-access-key-id", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("github-token", re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}\b")),
    ("github-fine-grained-pat", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{50,}\b")),
    ("anthropic-api-key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{20,}")),
    ("openai-api-key", re.compile(r"\bsk-(?:proj-)?[A-Za-z0-9_\-]{32,}")),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}")),
    ("stripe-live-key", re.compile(r"\b[rs]k_live_[A-Za-z0-9]{20,}")),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b")),
    (
        "private-key-block",
        re.compile(r"-----BEGIN (?:RSA |EC |DSA |OPENSSH |PGP |ENCRYPTED )?PRIVATE KEY( BLOCK)?-----"),
    ),
    (
        "generic-assigned-secret",
        re.compile(
            r"(?i)\b(?:password|passwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token)\b\s*[:=]\s*"
            r"['\"][A-Za-z0-9+/_\-=.]{16,}['\"]"
        ),
    ),
)


@dataclass(frozen=True)
class SecretHit:
    kind: str
    redacted: str


def redact(value: str) -> str:
    return value[:4] + "…" + f"({len(value)} chars)" if len(value) > 4 else "…"


def scan_line(text: str) -> list[SecretHit]:
    hits = []
    for kind, pattern in PATTERNS:
        m = pattern.search(text)
        if m:
            hits.append(SecretHit(kind, redact(m.group(0))))
    return hits
