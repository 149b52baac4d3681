"""Event kinds of the egress proxy (payloads only; see tether.sandbox.egress).

- ``egress.attempt``  one connection a sandboxed command asked the proxy for: where to, whether it was
  allowed and by which rule, the address it went to, and the bytes each way. The proxy runs on the
  host for one command; the kernel appends its attempts right before that call's ``action.completed``.
"""

from __future__ import annotations

from enum import StrEnum

from tether.plain import Field
from tether.quickenum import Quick

from .payload import Payload, register


class EgressRule(StrEnum, metaclass=Quick):
    """Why the proxy let a connection through or refused it; one word per rule, as the log shows it."""

    ALLOWED = "allowed"
    """The name is listed, on a listed port, and every address it resolved to is public (or loopback, allowed)."""
    NOT_LISTED = "not-listed"
    """The name is not in ``environment.network.allow``."""
    PORT = "port"
    """The name is listed, but not with this port (443 and 80 unless a port is listed)."""
    SECRET_HOSTS = "secret-hosts"
    """The call carries a secret and the name is not among that secret's ``hosts``."""
    IP_LITERAL = "ip-literal"
    """An address instead of a name, in any spelling (dotted, bracketed, decimal, octal, hex)."""
    ADDRESS = "address"
    """The name resolved to a private, loopback, link-local, multicast, reserved or unspecified address."""
    RESOLVE = "resolve"
    """The name did not resolve."""
    MALFORMED = "malformed"
    """Not an HTTP/1.x proxy request tether accepts, or not a host name."""
    HOST_MISMATCH = "host-mismatch"
    """The Host header names another host than the request's target (URI or CONNECT authority)."""
    TOO_LARGE = "too-large"
    """The request head exceeded the proxy's limit."""
    SLOW = "slow"
    """The request head did not arrive in time."""
    UNREACHABLE = "unreachable"
    """Allowed, but no connection to the checked address could be made."""
    TOO_MANY = "too-many"
    """The command opened more connections than one command may; those past the limit are refused, counted once."""


@register("egress.attempt")
class EgressAttempted(Payload):
    call_id: str | None = Field(None, description="the tool call whose command asked; None: a verification command")
    method: str = Field(description="CONNECT, or the HTTP method of a plain request ('' when unreadable)")
    host: str = Field(description="the host asked for, as asked (cut to 255 characters)")
    port: int | None = Field(None, description="the port asked for (None when unreadable)")
    allowed: bool
    rule: EgressRule
    detail: str = ""
    address: str | None = Field(None, description="the checked address the proxy connected to")
    bytes_up: int = Field(0, ge=0, description="bytes from the command to the host")
    bytes_down: int = Field(0, ge=0, description="bytes from the host to the command")
    duration_s: float = Field(0.0, ge=0)


__all__ = ["EgressAttempted", "EgressRule"]
