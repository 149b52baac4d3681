"""``candidates`` skips a pattern on text that lacks what every match of it holds (``://``, ``@``, a dot, a
slash, two or eight digits), and three of its patterns are written to start with a character class (issue 18): the
values found must be exactly those of every pattern, as it was, tried on every text."""

from __future__ import annotations

import functools
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tether.policy import provenance as pv

#: The patterns as they were before ``digits``, ``amount`` and ``token`` were written to start with their class.
WAS = {
    **pv._PATTERNS,
    "digits": r"(?<![\w.\-])\d(?: ?\d){7,}(?!\w|[.\-]\d)",
    "amount": r"(?<![\w.,\-])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\w\-]|[.,]\d)",
    "token": r"(?<![\w\-])(?<!\w\.)(?=[\w.\-]*[^\W\d_])[\w][\w.\-]*[\w](?![\w\-]|\.\w|://)",
}


@functools.cache
def _was(name: str) -> re.Pattern[str]:
    return re.compile(WAS[name])


def _every_pattern(text: str, *, every: bool = True) -> list[pv.Value]:
    """``candidates`` as it was: each pattern, as it was, run on the whole folded text."""
    folded = pv.fold(text)
    found = [
        *pv._found(pv.ValueKind.URL, _was("url"), folded),
        *pv._found(pv.ValueKind.EMAIL, _was("email"), folded),
        *pv._found(pv.ValueKind.HOST, _was("host"), folded),
        *pv._found(pv.ValueKind.ACCOUNT, _was("iban"), folded),
        *pv._found(pv.ValueKind.ACCOUNT, _was("digits"), folded),
        *pv._found(pv.ValueKind.PATH, _was("path"), folded),
    ]
    if every:
        found += [
            *pv._found(pv.ValueKind.TOKEN, _was("token"), folded),
            *pv._found(pv.ValueKind.NUMBER, _was("amount"), folded),
        ]
    found += [
        h
        for k, raw, start, _ in found
        if k in (pv.ValueKind.URL, pv.ValueKind.EMAIL)
        for h in pv._host_of(k, raw, start)
    ]
    out = []
    for kind, raw, start, end in found:
        norm = pv.canonical_number(raw) if kind is pv.ValueKind.NUMBER else pv._canonical(kind, raw)
        if norm and not (kind is pv.ValueKind.NUMBER and sum(c.isdigit() for c in norm.lstrip("0.-")) < 2):
            out.append(pv.Value(kind, norm, start, end))
    return out


SAMPLES = [
    "$ true 3\nexit 0 (0.00s)\n(no output)",
    "send 1,250.00 EUR to DE89 3704 0044 0532 0130 00 or bob+x@Exämple.com via https://pay.example:443/a/",
    "see ~/notes/plan.md and ../src/x.py, host api.internal.example, "
    "\uff48\uff54\uff54\uff50\uff53\uff1a\uff0f\uff0f\uff45\uff56\uff49\uff4c\uff0e\uff45\uff58\uff41\uff4d\uff50\uff4c\uff45",
    "٣٤٥٦٧٨٩٠١٢ digits in another script, ① ² ½ and a fullwidth \uff20 sign: a\uff20b\uff0ecd",
    "",
    "no values here at all",
    "exit 1: 7 of 9 passed, 0 skipped, ٣ and ① alone, 10 and 0.5 and 5.0",  # one-digit numbers are never values
    "call 1234 5678 now",  # eight digits in all, a run of them
    "not 123 4567, and 0.1",  # seven; a dot between two
    "iban de44 5001 0517 5407 3249 31 (two digits and more)",
]


@pytest.mark.parametrize("text", SAMPLES)
@pytest.mark.parametrize("every", [True, False])
def test_samples_find_what_every_pattern_finds(text: str, every: bool) -> None:
    assert pv.candidates(text, every=every) == _every_pattern(text, every=every)


ALPHABET = st.sampled_from([*"ab9Z0 .,/@:-_~+%", "://", "\u0663", "\uff0f", "\uff20", "\u2024", "é", "ß", "\n"])


@settings(max_examples=400, deadline=None)
@given(text=st.lists(ALPHABET, max_size=40).map("".join), every=st.booleans())
def test_any_text_finds_what_every_pattern_finds(text: str, every: bool) -> None:
    assert pv.candidates(text, every=every) == _every_pattern(text, every=every)


#: Characters the three rewritten patterns test: word characters of several kinds (a letter, an ASCII and an
#: Arabic-Indic digit, a superscript two, which is no decimal digit, an underscore, a German sharp s) and the
#: punctuation their lookarounds name.
PATTERN_ALPHABET = st.sampled_from([*"ab9Z0_ .,-/@:", "\u0663", "\u00b2", "\u00df", "://", " 1", "12", "1,234"])


@settings(max_examples=1500, deadline=None)
@given(text=st.lists(PATTERN_ALPHABET, max_size=30).map("".join))
def test_the_rewritten_patterns_match_where_they_did(text: str) -> None:
    for name in ("digits", "amount", "token"):
        now = [(m.span(), m[0]) for m in pv._pattern(name).finditer(text)]
        assert now == [(m.span(), m[0]) for m in _was(name).finditer(text)], name


@pytest.mark.parametrize(
    "text",
    [
        "1",
        "12",
        "1234 5678",
        "12345678",
        "a12345678",
        "-12345678",
        ".12345678",
        "12345678.9",
        "1,234,567.89 x",
        "x,1,234",
        "1,23",
        "ab.cd",
        "a.b",
        "3.x",
        "_ab",
        "ab_",
        "a-b",
        "-ab",
        "a.bc",
        "ab://x",
        "١٢٣٤٥٦٧٨",
        "²12",
    ],
)
def test_the_rewritten_patterns_match_where_they_did_at_the_edges(text: str) -> None:
    for name in ("digits", "amount", "token"):
        now = [(m.span(), m[0]) for m in pv._pattern(name).finditer(text)]
        assert now == [(m.span(), m[0]) for m in _was(name).finditer(text)], name


def _decimal_form(text: str) -> str | None:
    """``canonical_number`` as it was: every number through ``Decimal``."""
    from decimal import Decimal, InvalidOperation

    try:
        value = Decimal(text.replace(",", ""))
    except InvalidOperation:
        return None
    return format(value.normalize(), "f")


@settings(max_examples=400, deadline=None)
@given(text=st.one_of(st.from_regex(r"\A[0-9]{1,40}\Z"), st.text(st.sampled_from([*"0123456789.,-", "\u0663", "²"]))))
def test_a_whole_number_keeps_the_form_decimal_gives_it(text: str) -> None:
    """A plain whole number skips ``Decimal`` (up to 18 digits): the form is the same, also past its precision."""
    assert pv.canonical_number(text) == _decimal_form(text)


@pytest.mark.parametrize("text", ["7", "10", "0010", "123456789012345678", "1234567890123456789", "9" * 29, "٣٤"])
def test_whole_number_edges(text: str) -> None:
    assert pv.canonical_number(text) == _decimal_form(text)
