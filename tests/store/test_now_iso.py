"""The append path's timestamp: the text ``datetime`` would write, formatted once per second (issue 18)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from tether.events import storebase
from tether.events.storebase import iso_of_us, now_iso

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MAX_US = int((datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC) - EPOCH).total_seconds()) * 1_000_000


def expected(us: int) -> str:
    return (EPOCH + timedelta(microseconds=us)).isoformat(timespec="microseconds")


@given(st.integers(min_value=0, max_value=MAX_US))
def test_any_instant_is_written_as_datetime_writes_it(us: int) -> None:
    assert iso_of_us(us) == expected(us)


@given(st.integers(min_value=0, max_value=MAX_US // 1_000_000), st.lists(st.integers(0, 999_999), min_size=1))
def test_the_cached_second_never_leaks_into_another(second: int, micros: list[int]) -> None:
    # the same second, then its neighbours, then back: each text is that instant's
    for delta in (0, 1, -1, 0):
        s = min(max(0, second + delta), MAX_US // 1_000_000)  # the last second has no next one (year 10000)
        for m in micros:
            assert iso_of_us(s * 1_000_000 + m) == expected(s * 1_000_000 + m)


def test_now_is_between_datetime_before_and_after() -> None:
    for _ in range(1000):
        before = datetime.now(UTC).isoformat(timespec="microseconds")
        now = now_iso()
        after = datetime.now(UTC).isoformat(timespec="microseconds")
        assert before <= now <= after
        assert len(now) == len(before) == 32


def test_threads_racing_on_a_new_second_each_get_their_own_instant() -> None:
    bad: list[tuple[int, str]] = []
    base = 1_800_000_000 * 1_000_000

    def hammer(offset: int) -> None:
        for i in range(2000):
            us = base + ((i + offset) % 50) * 1_000_000 + offset  # the seconds change under the other threads
            text = iso_of_us(us)
            if text != expected(us):
                bad.append((us, text))

    threads = [threading.Thread(target=hammer, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad
    assert storebase._SECOND[1] == expected(storebase._SECOND[0] * 1_000_000)[:19]
