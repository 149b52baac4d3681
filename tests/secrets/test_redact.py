"""The redactor: every form of a planted value is gone, ordinary text is untouched."""

from __future__ import annotations

import base64
import os
import re
import urllib.parse

import pytest

from tether.events.redact import Redactor

CANARY = "cnry-Zq8/w+Xy_7Kp=Lm3 vT"  # a space, '/', '+', '=' and '_' exercise every encoding
R = Redactor({"TOKEN": CANARY})
MARK = "[secret:TOKEN]"


def encodings(value: str) -> dict[str, str]:
    raw = value.encode()
    b64, url64 = base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()
    return {
        "raw": value,
        "url quote": urllib.parse.quote(value, safe=""),
        "url quote_plus": urllib.parse.quote_plus(value),
        "url lower": re.sub("%[0-9A-F]{2}", lambda m: m.group().lower(), urllib.parse.quote(value, safe="")),
        "url all": "".join(f"%{b:02x}" for b in raw),
        "hex": raw.hex(),
        "HEX": raw.hex().upper(),
        "b64": b64,
        "b64 bare": b64.rstrip("="),
        "urlsafe": url64,
        "urlsafe bare": url64.rstrip("="),
        "folded": "\n".join(value[i : i + 5] for i in range(0, len(value), 5)),
        "hex folded": "\r\n".join(raw.hex()[i : i + 7] for i in range(0, len(raw.hex()), 7)),
    }


@pytest.mark.parametrize(("label", "form"), encodings(CANARY).items())
def test_every_form_is_redacted_in_text_and_bytes(label: str, form: str) -> None:
    text = f"before {form} after"
    out = R.text(text)
    assert out.startswith("before ") and out.endswith(" after") and MARK in out, label
    assert CANARY not in out and form not in out
    data = R.data(text.encode())
    assert MARK.encode() in data and form.encode() not in data


@pytest.mark.parametrize("offset", [0, 1, 2, 3, 4, 5])
@pytest.mark.parametrize("encode", [base64.b64encode, base64.urlsafe_b64encode])
def test_value_inside_a_longer_base64_stream(offset: int, encode: object) -> None:
    stream = os.urandom(offset) + b"user=" + CANARY.encode() + b"&rest=" + os.urandom(7)
    encoded = encode(stream).decode()  # type: ignore[operator]
    out = R.text(encoded)
    assert MARK in out
    # nothing is left of the value's own base64 at any alignment: no run of 12 of its characters
    for o in range(3):
        own = encode(b"\0" * o + CANARY.encode()).decode()[4:-4]  # type: ignore[operator]
        assert not any(own[i : i + 12] in out for i in range(len(own) - 11)), o


def test_base64_wrapped_at_76_columns() -> None:
    stream = base64.encodebytes(os.urandom(50) + CANARY.encode() + os.urandom(50)).decode()
    assert "\n" in stream and MARK in R.text(stream)


@pytest.mark.parametrize(
    "marker",
    [
        "\n[... 100 bytes omitted by tether (kept first 10 and last 10 of 120) ...]\n",  # the sandbox's output cap
        "\n[... 5000 characters in the blob ...]\n",  # kernel/context.py's kept_result
    ],
)
@pytest.mark.parametrize("cut", [8, 12, len(CANARY) - 1])
def test_a_value_cut_at_a_string_edge_or_an_output_cut(cut: int, marker: str) -> None:
    head = f"log line\n{CANARY[:cut]}"
    tail = f"{CANARY[-cut:]}\nmore"
    assert R.text(head) == "log line\n" + MARK
    assert R.text(tail) == MARK + "\nmore"
    out = R.text(head + marker + tail)
    assert out == "log line\n" + MARK + marker + MARK + "\nmore"


def test_json_like_values_keys_included_and_identity_when_clean() -> None:
    clean = {"a": ["x", {"b": 1}], "c": None}
    assert R.value(clean) is clean
    dirty = {"stdout": f"t={CANARY}", CANARY: [CANARY.encode().hex()], "n": 3}
    assert R.value(dirty) == {"stdout": f"t={MARK}", MARK: [MARK], "n": 3}


def test_ordinary_text_is_untouched_and_an_empty_redactor_is_a_no_op() -> None:
    text = "PASS 12 tests in 0.3s; cnry- is a prefix too short to be a piece; " + "x" * 1000
    assert R.text(text) == text
    assert Redactor().text(CANARY) == CANARY and not Redactor()


def test_several_secrets_are_named_and_rotated_values_all_stay_redacted() -> None:
    r = Redactor({"A": "alpha-secret-1", "B": "bravo-secret-2"}).with_secrets({"A": "alpha-secret-9"})
    assert r.text("alpha-secret-1 bravo-secret-2 alpha-secret-9") == "[secret:A] [secret:B] [secret:A]"


def test_non_ascii_value_in_bytes_and_url_forms() -> None:
    r = Redactor({"K": "clé-sécrète-ü"})
    assert r.data("x clé-sécrète-ü y".encode()) == b"x [secret:K] y"
    assert r.text(urllib.parse.quote("clé-sécrète-ü")) == "[secret:K]"


def test_too_short_a_value_is_refused() -> None:
    with pytest.raises(ValueError, match="shorter than 8"):
        Redactor({"PIN": "1234"})


@pytest.mark.parametrize("value", ["12345678", "abcdefghi", "abcdefghij", "a b c d e f"])
def test_short_values_in_every_form(value: str) -> None:
    r = Redactor({"S": value})
    for label, form in encodings(value).items():
        assert "[secret:S]" in r.text(f"<{form}>"), label
