from __future__ import annotations

import pytest

from tether.sandbox.output import BoundedBuffer, OutputCap


def feed_all(cap: OutputCap, data: bytes, chunk: int) -> BoundedBuffer:
    buf = BoundedBuffer(cap)
    for i in range(0, len(data), chunk):
        buf.feed(data[i : i + chunk])
    return buf


def test_small_output_is_kept_whole() -> None:
    buf = feed_all(OutputCap(head=10, tail=10), b"hello world", 3)
    assert (buf.text(), buf.total, buf.truncated) == ("hello world", 11, False)


@pytest.mark.parametrize("chunk", [1, 7, 64, 10_000])
def test_keeps_head_and_tail_and_counts_everything(chunk: int) -> None:
    data = bytes(range(256)) * 40  # 10240 bytes
    buf = feed_all(OutputCap(head=100, tail=50), data, chunk)
    assert buf.total == len(data)
    assert buf.truncated and buf.omitted == len(data) - 150
    assert bytes(buf._head) == data[:100]
    assert bytes(buf._tail) == data[-50:]


def test_exactly_at_cap_is_not_truncated() -> None:
    buf = feed_all(OutputCap(head=4, tail=4), b"abcdefgh", 3)
    assert not buf.truncated
    assert buf.text() == "abcdefgh"


def test_text_marks_the_omission_and_survives_broken_utf8() -> None:
    buf = feed_all(OutputCap(head=5, tail=5), "é".encode() * 100, 9)
    text = buf.text()
    assert "190 bytes omitted" in text
    assert text.startswith("éé")  # head decoded; a split character becomes U+FFFD, never an exception


def test_zero_tail_keeps_only_head() -> None:
    buf = feed_all(OutputCap(head=3, tail=0), b"abcdef", 2)
    assert buf.text().startswith("abc") and buf.total == 6 and buf.truncated
