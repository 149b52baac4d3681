"""A cache file's header and body (guard/cachefile.py ``parts``) are cut where they were: the body is now one copy of
the bytes after the header line, not a partition of a copy of all but the magic; the answer is the same for any
bytes, a torn file, a header line that is not JSON or not an object, and a file over the limit."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tether import jsonc
from tether.guard.cachefile import parts

MAGIC = b"tether-fold-checkpoint\n"


def reference(raw: bytes, magic: bytes, limit: int) -> tuple[dict[str, Any], bytes] | None:
    """``parts`` as it was written before: the partition of ``raw`` after the magic at its first newline."""
    if len(raw) > limit or not raw.startswith(magic):
        return None
    line, sep, body = raw[len(magic) :].partition(b"\n")
    if not sep:
        return None
    header = jsonc.loads(line)
    return (header, body) if isinstance(header, dict) else None


def answer(cut: Any, raw: bytes, limit: int) -> object:
    try:
        return ("ok", cut(raw, MAGIC, limit))
    except (ValueError, RecursionError) as e:
        return ("raised", type(e))


PIECES = st.sampled_from([b"\n", b"{", b"}", b'{"a": 1}', b"[1]", b'"x"', b"\x00", b"\xff", b"tether", b" ", b"\\"])


@settings(max_examples=400, deadline=None)
@given(st.lists(PIECES | st.binary(max_size=8), max_size=12), st.booleans(), st.integers(0, 200))
def test_the_header_and_body_are_cut_as_before(pieces: list[bytes], magic: bool, limit: int) -> None:
    raw = (MAGIC if magic else b"") + b"".join(pieces)
    assert answer(parts, raw, limit) == answer(reference, raw, limit)


def test_the_cases_by_name() -> None:
    body = b"\x80\x05body\nwith\nnewlines"
    for raw in (
        MAGIC + b'{"version": 2}\n' + body,  # a file: the body whole, its own newlines kept
        MAGIC + b'{"version": 2}\n',  # an empty body
        MAGIC + b'{"version": 2}',  # torn before the header's end
        MAGIC[:-1],  # torn in the magic
        MAGIC + b"[1, 2]\n" + body,  # a header that is not an object
        b"another file\n{}\n",
    ):
        assert answer(parts, raw, 1 << 20) == answer(reference, raw, 1 << 20)
    assert parts(MAGIC + b'{"v": 1}\n' + body, MAGIC, 1 << 20) == ({"v": 1}, body)
    assert parts(MAGIC + b"{}\n" + body, MAGIC, len(MAGIC) + 2) is None  # over the limit: not parsed
    assert answer(parts, MAGIC + b"{not json\n", 100)[0] == "raised"
