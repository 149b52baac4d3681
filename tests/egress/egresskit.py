"""Helpers for the egress tests: a recording HTTP upstream and a resolver hook that names it.

Test names (``*.test``) never reach a real resolver: :class:`Names` maps them, and counts each look-up.
Nothing here sends a packet anywhere but the loopback interface.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

TOKEN = "tether-egress-test-answer"


@dataclass
class Upstream:
    port: int
    requests: list[tuple[str, str, str, bytes]] = field(default_factory=list)
    """(method, path, Host header, body) of every request that reached the server."""
    headers: list[dict[str, str]] = field(default_factory=list)
    """Each request's headers (names in lower case)."""

    def clear(self) -> None:
        self.requests.clear()
        self.headers.clear()


@dataclass
class Names:
    """A resolver hook: test names -> addresses, and how often each was looked up."""

    table: dict[str, list[str]]
    lookups: list[str] = field(default_factory=list)

    def __call__(self, host: str, port: int) -> Sequence[str]:
        self.lookups.append(host)
        if host not in self.table:
            raise OSError(f"unknown test name {host}")
        return self.table[host]
