"""Host names as ``environment.network.allow`` states them, and how a name asked for is read.

One parser serves two sides: strict validation of an envelope (a bad entry is a problem naming its path)
and the egress proxy (``tether.sandbox.egress``), which matches what a command asks for against the same
rules. Both are pure functions of strings.

An entry is ``HOST``, ``HOST:PORT`` or ``*.DOMAIN[:PORT]``:

* ``HOST`` is a DNS name in ASCII (an international name in its ``xn--`` form), compared without case
  and without a trailing dot. Never an IP address in any spelling: ``10.0.0.1``, ``[::1]``,
  ``2130706433``, ``0x7f.1`` and ``0177.0.0.1`` are all addresses to a resolver, and a name whose last
  label is a number is read as one (the URL standard's rule), so none can be listed or asked for.
* Without a port, 443 and 80 are allowed; with one, only that port.
* ``*.DOMAIN`` matches exactly one more label (``*.example.com`` matches ``api.example.com``, not
  ``example.com`` and not ``a.b.example.com``), as a TLS certificate's wildcard does. A ``*`` anywhere
  else is not a host name. A lone ``*`` (any host) is the ``network-any`` risk an envelope must
  acknowledge; it matches any name, and the proxy still refuses IP literals and non-public addresses.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from dataclasses import dataclass

DEFAULT_PORTS = (443, 80)
ANY = "*"
_ANY_SPELLINGS = frozenset({"0.0.0.0", "0.0.0.0/0", "::", "::/0"})
_WILDCARD_CHARS = frozenset("*?.[]!")
_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")
_NUMERIC = re.compile(r"^(?:[0-9]+|0x[0-9a-f]*)$")


class HostError(ValueError):
    """Not a host name tether can allow or look up; the message says what was expected."""


@dataclass(frozen=True)
class HostRule:
    """One allow entry, parsed: ``host`` (or the domain under a ``*.`` wildcard, or ``*``) and its ports."""

    host: str
    ports: tuple[int, ...] = DEFAULT_PORTS
    wildcard: bool = False

    def matches(self, host: str, port: int | None = None) -> bool:
        """Does ``host`` (already normalised by :func:`normalise_host`) on ``port`` fall under this rule?

        ``port`` None asks about the name only (a secret's ``hosts`` narrow names, not ports).
        """
        if port is not None and port not in self.ports:
            return False
        if self.host == ANY:
            return True
        if self.wildcard:
            head, dot, rest = host.partition(".")
            return bool(dot) and rest == self.host and bool(head)
        return host == self.host


def means_any_host(entry: str) -> bool:
    """Does this entry reach any host (``*``, ``**``, ``*.*``, ``0.0.0.0/0``, ``::/0``)? The ``network-any`` risk."""
    text = entry.strip()
    return text in _ANY_SPELLINGS or (bool(text) and set(text) <= _WILDCARD_CHARS and "*" in text)


def is_ip_literal(host: str) -> bool:
    """Is ``host`` an IP address in any spelling a resolver or URL parser accepts?

    Dotted, bracketed and plain IPv6, and the numeric spellings ``inet_aton`` takes (``2130706433``,
    ``0x7f.1``, ``0177.0.0.1``, ``127.1``): every name whose last label is a number counts.
    """
    h = host.strip().lower().rstrip(".")
    if h.startswith("[") or ":" in h:
        return True
    try:
        ipaddress.ip_address(h)
        return True
    except ValueError:
        pass
    try:
        socket.inet_aton(h)
        return True
    except (OSError, ValueError):
        pass
    last = h.rsplit(".", 1)[-1]
    return bool(_NUMERIC.match(last))


def normalise_host(raw: str) -> str:
    """The host name to compare and resolve: lower case, one trailing dot dropped; :class:`HostError` if not one."""
    if not raw or len(raw) > 254:
        raise HostError(f"{raw[:60]!r}: expected a host name of 1 to 253 characters")
    if is_ip_literal(raw):
        raise HostError(f"{raw!r} is an IP address; expected a host name (IP literals are never allowed)")
    host = raw.lower()
    host = host[:-1] if host.endswith(".") else host
    labels = host.split(".")
    if not host or len(host) > 253 or not all(_LABEL.match(label) for label in labels):
        raise HostError(
            f"{raw!r}: expected a DNS name (letters, digits and '-' in dot-separated labels; "
            "an international name in its xn-- form)"
        )
    return host


def parse_port(text: str, entry: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise HostError(f"{entry!r}: expected a port number from 1 to 65535 (found {text!r})")
    return int(text)


def parse_rule(entry: str) -> HostRule:
    """One ``network.allow`` (or secret ``hosts``) entry; :class:`HostError` says what is wrong with it."""
    text = entry.strip()
    if means_any_host(text):
        return HostRule(ANY)
    if text.startswith("["):
        raise HostError(f"{entry!r} is an IP address; expected a host name (IP literals are never allowed)")
    host, colon, port = text.rpartition(":") if text.count(":") == 1 else (text, "", "")
    ports = (parse_port(port, entry),) if colon else DEFAULT_PORTS
    wildcard = host.startswith("*.")
    if wildcard:
        host = host[2:]
    if "*" in host:
        raise HostError(f"{entry!r}: expected a wildcard only as a whole leading label, as in '*.example.com'")
    name = normalise_host(host)
    if wildcard and "." not in name:
        raise HostError(f"{entry!r}: expected a wildcard's domain to have two labels or more, as in '*.example.com'")
    return HostRule(name, ports, wildcard)


def parse_rules(entries: list[str]) -> tuple[HostRule, ...]:
    return tuple(parse_rule(e) for e in entries)


def rule_problems(entries: list[str], path: str) -> list[tuple[str, str, str]]:
    """Strict validation: each entry that is not a host rule, as (path, found, expected)."""
    out = []
    for i, entry in enumerate(entries):
        try:
            parse_rule(entry)
        except HostError as e:
            out.append((f"{path}[{i}]", entry, str(e)))
    return out


__all__ = [
    "DEFAULT_PORTS",
    "HostError",
    "HostRule",
    "is_ip_literal",
    "means_any_host",
    "normalise_host",
    "parse_rule",
    "parse_rules",
    "rule_problems",
]
