"""Who may use the console: loopback by default, a token for any other bind, same-origin POSTs only.

The console can approve actions an agent proposed, so it is guarded like a shell:

- **bind** — a loopback address (127.0.0.0/8, ::1, ``localhost``) needs nothing more; any other address
  (a LAN interface, ``0.0.0.0``) refuses to start without a token, and ``tether serve`` generates one and
  prints it once. The token is then required on every request (``?token=`` once, which sets an
  HttpOnly cookie, or ``Authorization: Bearer``).
- **Host header** — on a loopback bind a request must name a loopback host, so a web page on another
  site cannot reach the console through DNS rebinding.
- **CSRF** — every POST must come from the console's own origin (``Origin``/``Referer``) and carry the
  per-browser token of the ``tether_csrf`` cookie in its form (double submit; the cookie is SameSite=Strict).

Everything here is a pure check on request values; :mod:`.app` applies it.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from tether.errors import InputError

TOKEN_COOKIE = "tether_token"
CSRF_COOKIE = "tether_csrf"
CSRF_FIELD = "csrf"


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback IP literal (brackets allowed); a name other than localhost is not."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def bind_token(host: str, token: str | None) -> str | None:
    """The token a server bound to ``host`` requires: none on loopback unless given, else the given one or a
    new one. An empty or short given token is refused (it would guard nothing)."""
    if token is not None and len(token) < 16:
        raise InputError("--token: at least 16 characters (or leave it out and one is generated)")
    if token is None and not is_loopback(host):
        return secrets.token_urlsafe(24)
    return token


def new_csrf() -> str:
    return secrets.token_urlsafe(24)


def same(a: str | None, b: str | None) -> bool:
    return a is not None and b is not None and hmac.compare_digest(a.encode(), b.encode())


@dataclass(frozen=True)
class Guard:
    """The checks of one server: its bind host and, if any, its token."""

    host: str
    token: str | None

    def host_ok(self, host_header: str | None) -> bool:
        """On a loopback bind the Host header must be loopback too (DNS rebinding); a tokened bind checks the
        token instead, since its clients reach it by any name."""
        if self.token is not None or not is_loopback(self.host):
            return True
        if not host_header:
            return False
        name = urlsplit("//" + host_header).hostname or ""
        return is_loopback(name)

    def authorized(self, query_token: str | None, cookies: Mapping[str, str], authorization: str | None) -> bool:
        if self.token is None:
            return True
        bearer = authorization[7:] if authorization and authorization.lower().startswith("bearer ") else None
        return any(same(t, self.token) for t in (query_token, cookies.get(TOKEN_COOKIE), bearer))

    @staticmethod
    def same_origin(origin: str | None, referer: str | None, host_header: str | None) -> bool:
        """A POST's ``Origin`` (or, where a browser sends none, its ``Referer``) names this server's host:port."""
        source = origin if origin and origin != "null" else referer
        if not source or not host_header:
            return False
        return urlsplit(source).netloc.lower() == host_header.lower()

    @staticmethod
    def csrf_ok(form_value: str | None, cookies: Mapping[str, str]) -> bool:
        return same(form_value, cookies.get(CSRF_COOKIE))
