"""What the egress proxy lets through: pure functions of a policy, a name, a port and resolved addresses.

The proxy (:mod:`tether.sandbox.egress`) does the I/O; every yes or no it says comes from here, as a
:class:`Ruling` naming its rule. Two stages, because an address is only known after resolution:

1. :func:`check_name` — is the asked-for name a host name (not an IP in any spelling), listed in
   ``environment.network.allow`` on this port, and among the ``hosts`` of every secret the call carries?
2. :func:`check_addresses` — is every address the name resolved to public? One private, loopback,
   link-local, multicast, reserved or unspecified address refuses the name (a name that resolves to
   both a public and an internal address is a rebinding trick, not a reason to pick the public one).
   Loopback passes only with ``network.allow_loopback`` (local servers and tests). The proxy then
   connects to exactly these checked addresses and never resolves the name again.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass, field

from tether.envelope.network import HostError, HostRule, is_ip_literal, normalise_host, parse_rule, parse_rules
from tether.envelope.schema import Network
from tether.events.kinds_egress import EgressRule

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class Ruling:
    rule: EgressRule
    detail: str

    @property
    def allowed(self) -> bool:
        return self.rule is EgressRule.ALLOWED


@dataclass(frozen=True)
class EgressPolicy:
    """The hosts one command may reach: the envelope's rules, narrowed by the secrets its call carries."""

    rules: tuple[HostRule, ...]
    allow_loopback: bool = False
    secret_hosts: tuple[tuple[str, tuple[HostRule, ...]], ...] = field(default=())
    """(secret name, its hosts) for each secret the call carries: a name must be among every one's hosts."""

    @classmethod
    def of(cls, network: Network) -> EgressPolicy:
        """The envelope's policy (raises :class:`HostError` for an entry strict validation would refuse)."""
        return cls(parse_rules(network.allow), network.allow_loopback)

    def carrying(self, secrets: Sequence[tuple[str, Sequence[str]]]) -> EgressPolicy:
        """This policy for a call that carries ``secrets`` (name, hosts): only names every secret may go to."""
        narrowed = [(name, tuple(rule_or_nothing(h) for h in hosts)) for name, hosts in secrets]
        return EgressPolicy(self.rules, self.allow_loopback, (*self.secret_hosts, *narrowed))


NOTHING = HostRule("", ())
"""Matches no name: what a secret host entry becomes when it is not a host name (fail closed)."""


def rule_or_nothing(entry: str) -> HostRule:
    try:
        rule = parse_rule(entry)
    except HostError:
        return NOTHING
    return HostRule(rule.host, (), rule.wildcard)  # a secret's hosts narrow names; ports are the envelope's


def check_name(raw: str, port: int, policy: EgressPolicy) -> tuple[str, Ruling | None]:
    """The normalised name, and the refusal if the name alone is refused (None: resolve it and check the addresses)."""
    shown = raw[:255]
    if is_ip_literal(raw):
        return shown, Ruling(EgressRule.IP_LITERAL, f"{shown!r} is an IP address; only listed host names are allowed")
    try:
        host = normalise_host(raw)
    except HostError as e:
        return shown, Ruling(EgressRule.MALFORMED, str(e))
    listed = [r for r in policy.rules if r.matches(host)]
    if not listed:
        return host, Ruling(EgressRule.NOT_LISTED, f"{host} is not in environment.network.allow")
    if not any(r.matches(host, port) for r in listed):
        ports = sorted({p for r in listed for p in r.ports})
        return host, Ruling(EgressRule.PORT, f"{host} is allowed on port(s) {ports}, not {port}")
    for name, hosts in policy.secret_hosts:
        if not any(r.matches(host) for r in hosts):
            return host, Ruling(EgressRule.SECRET_HOSTS, f"this call carries secret {name}, which may not go to {host}")
    return host, None


def address_class(address: IPAddress) -> str | None:
    """Why ``address`` is not a public internet address (None: it is). IPv4-mapped IPv6 is judged as IPv4."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    for name in ("loopback", "link_local", "multicast", "unspecified", "reserved", "private"):
        if getattr(address, f"is_{name}"):
            return name.replace("_", "-")
    return None if address.is_global else "not global"


def check_addresses(host: str, addresses: Sequence[str], policy: EgressPolicy) -> tuple[list[str], Ruling]:
    """The addresses to connect to (all of them checked) and the ruling on the name that resolved to them."""
    if not addresses:
        return [], Ruling(EgressRule.RESOLVE, f"{host} resolved to no address")
    checked: list[str] = []
    for text in addresses:
        try:
            address = ipaddress.ip_address(text.split("%", 1)[0])
        except ValueError:
            return [], Ruling(EgressRule.ADDRESS, f"{host} resolved to {text!r}, which is not an address")
        kind = address_class(address)
        if kind == "loopback" and policy.allow_loopback:
            kind = None
        if kind is not None:
            return [], Ruling(EgressRule.ADDRESS, f"{host} resolves to {address} ({kind}); only public addresses")
        checked.append(str(address))
    return checked, Ruling(EgressRule.ALLOWED, f"{host} is listed and resolves to {', '.join(checked)}")


__all__ = ["EgressPolicy", "Ruling", "address_class", "check_addresses", "check_name"]
