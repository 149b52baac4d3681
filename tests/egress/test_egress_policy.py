"""The proxy's decisions as pure functions: names, ports, secret hosts, and the addresses a name resolves to."""

from __future__ import annotations

import pytest

from tether.envelope.schema import Network
from tether.events.kinds_egress import EgressRule
from tether.sandbox.egress_policy import EgressPolicy, check_addresses, check_name


def pol(*allow: str, loopback: bool = False) -> EgressPolicy:
    return EgressPolicy.of(Network(allow=list(allow), allow_loopback=loopback))


def rule(host: str, port: int, policy: EgressPolicy) -> EgressRule | None:
    _, refusal = check_name(host, port, policy)
    return None if refusal is None else refusal.rule


def test_names_ports_and_wildcards() -> None:
    p = pol("pypi.org", "api.test:8443", "*.cdn.test")
    assert rule("pypi.org", 443, p) is None and rule("PyPI.org.", 80, p) is None
    assert rule("pypi.org", 8080, p) is EgressRule.PORT
    assert rule("api.test", 8443, p) is None and rule("api.test", 443, p) is EgressRule.PORT
    assert rule("x.cdn.test", 443, p) is None
    assert rule("cdn.test", 443, p) is EgressRule.NOT_LISTED
    assert rule("a.b.cdn.test", 443, p) is EgressRule.NOT_LISTED
    assert rule("pypi.org.evil.test", 443, p) is EgressRule.NOT_LISTED
    assert rule("evilpypi.org", 443, p) is EgressRule.NOT_LISTED
    assert rule("0x7f.1", 443, pol("*")) is EgressRule.IP_LITERAL  # any host still means a name
    assert rule("pypi.org\x00.evil.test", 443, p) is EgressRule.MALFORMED
    assert rule("pyp%69.org", 443, p) is EgressRule.MALFORMED


def test_a_call_carrying_secrets_reaches_only_hosts_every_secret_may_go_to() -> None:
    p = pol("api.github.com", "uploads.github.com", "pypi.org")
    one = p.carrying([("GH", ["api.github.com", "uploads.github.com"])])
    assert rule("api.github.com", 443, one) is None
    assert rule("pypi.org", 443, one) is EgressRule.SECRET_HOSTS
    both = one.carrying([("UP", ["uploads.github.com"])])
    assert rule("uploads.github.com", 443, both) is None
    assert rule("api.github.com", 443, both) is EgressRule.SECRET_HOSTS
    nowhere = p.carrying([("KEY", [])])  # a secret with no hosts may go nowhere: its call has no network
    assert rule("pypi.org", 443, nowhere) is EgressRule.SECRET_HOSTS
    unlisted = p.carrying([("GH", ["evil.test"])])  # the intersection: a secret host not in allow stays out
    assert rule("evil.test", 443, unlisted) is EgressRule.NOT_LISTED
    assert rule("pypi.org", 443, p.carrying([("BAD", ["not a host"])])) is EgressRule.SECRET_HOSTS


@pytest.mark.parametrize(
    ("addresses", "why"),
    [
        (["10.0.0.1"], "private"),
        (["172.16.5.4"], "private"),
        (["192.168.0.1"], "private"),
        (["100.64.0.1"], "not global"),  # shared address space (carrier NAT)
        (["169.254.169.254"], "link-local"),  # cloud metadata
        (["127.0.0.1"], "loopback"),
        (["127.9.9.9"], "loopback"),
        (["0.0.0.0"], "unspecified"),
        (["224.0.0.1"], "multicast"),
        (["240.0.0.1"], "reserved"),
        (["::1"], "loopback"),
        (["fe80::1"], "link-local"),
        (["fc00::1"], "private"),
        (["::ffff:127.0.0.1"], "loopback"),  # IPv4-mapped: judged as the IPv4 address
        (["::ffff:10.0.0.1"], "private"),
        (["93.184.215.14", "10.0.0.1"], "private"),  # one bad address refuses the name (rebinding)
        (["not-an-address"], "not an address"),
    ],
)
def test_non_public_addresses_refuse_the_name(addresses: list[str], why: str) -> None:
    checked, ruling = check_addresses("x.test", addresses, pol("x.test"))
    assert checked == [] and ruling.rule is EgressRule.ADDRESS and why in ruling.detail


def test_public_addresses_pass_and_loopback_only_with_the_switch() -> None:
    checked, ruling = check_addresses("x.test", ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"], pol("x"))
    assert ruling.allowed and checked == ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"]
    assert check_addresses("x.test", ["127.0.0.1", "::1"], pol("x", loopback=True))[1].allowed
    assert not check_addresses("x.test", ["127.0.0.1", "10.0.0.1"], pol("x", loopback=True))[1].allowed
    assert check_addresses("x.test", [], pol("x"))[1].rule is EgressRule.RESOLVE
