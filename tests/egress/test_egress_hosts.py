"""Host rules of ``environment.network.allow``: what may be listed and asked for, and what is an IP in disguise."""

from __future__ import annotations

import pytest

from tether.envelope.network import HostError, HostRule, is_ip_literal, normalise_host, parse_rule

IP_SPELLINGS = [
    "127.0.0.1",
    "10.0.0.1",
    "2130706433",  # 127.0.0.1 as one decimal number
    "0x7f000001",
    "0x7f.1",
    "0177.0.0.1",  # octal
    "127.1",
    "017700000001",
    "[::1]",
    "::1",
    "::ffff:127.0.0.1",
    "[::ffff:7f00:1]",
    "fe80::1%eth0",
    "169.254.169.254",
    "127.0.0.1.",
    "1.2.3.0x4",
    "example.0x10",
    "example.123",
]


@pytest.mark.parametrize("spelling", IP_SPELLINGS)
def test_every_ip_spelling_is_an_ip_literal_and_cannot_be_listed(spelling: str) -> None:
    assert is_ip_literal(spelling)
    with pytest.raises(HostError):
        parse_rule(spelling)
    with pytest.raises(HostError):
        normalise_host(spelling)


@pytest.mark.parametrize("name", ["pypi.org", "files.pythonhosted.org", "a-b.example.com", "xn--bcher-kva.example"])
def test_names_are_not_ip_literals(name: str) -> None:
    assert not is_ip_literal(name)
    assert normalise_host(name) == name


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "exa mple.com",
        "bücher.example",
        "a..b",
        "-a.com",
        "a-.com",
        "a.com/x",
        "user@a.com",
        "a.com%00",
        "a" * 64 + ".com",
    ],
)
def test_malformed_names_are_refused(bad: str) -> None:
    with pytest.raises(HostError, match="expected"):
        normalise_host(bad)


def test_names_compare_without_case_or_trailing_dot() -> None:
    assert normalise_host("PyPI.org.") == "pypi.org"


def test_rules_ports_and_wildcards() -> None:
    assert parse_rule("pypi.org") == HostRule("pypi.org", (443, 80))
    assert parse_rule("api.test:8443") == HostRule("api.test", (8443,))
    wild = parse_rule("*.example.com")
    assert wild.matches("api.example.com", 443)
    assert not wild.matches("example.com", 443)
    assert not wild.matches("a.b.example.com", 443)  # one label, as a certificate's wildcard
    assert not wild.matches("evil-example.com", 443)
    assert not parse_rule("pypi.org").matches("pypi.org", 22)
    assert parse_rule("pypi.org").matches("pypi.org", None)
    assert parse_rule("*").matches("anything.test", 443)
    assert parse_rule("**") == HostRule("*")  # an acknowledged any-host spelling means any host


@pytest.mark.parametrize(
    "bad, why",
    [
        ("a.*.com", "whole leading label"),
        ("*example.com", "whole leading label"),
        ("*.com", "two labels or more"),
        ("pypi.org:0", "port"),
        ("pypi.org:99999", "port"),
        ("pypi.org:https", "port"),
        ("[::1]:443", "IP"),
        ("10.0.0.1:443", "IP"),
    ],
)
def test_bad_rules_say_what_was_expected(bad: str, why: str) -> None:
    with pytest.raises(HostError, match=why):
        parse_rule(bad)
