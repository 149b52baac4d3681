"""``records.standing_in`` replaces ``dataclasses.dataclass`` process-wide while the deciding code is imported: a
thread that makes dataclasses meanwhile (the daemon's start runs in a process with other threads; a library may
make classes in its own) gets records' maker for some of them. Each must still be the class the standard library
makes, whatever moment the stand-in begins or ends; and the standard maker is back at the end."""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

import pytest
from test_records import STANDARD, VALUES, observe, plain, shapes

from tether import records


@pytest.mark.skipif(not records.MIRRORED, reason="this Python's generated methods are not mirrored: all standard")
def test_a_thread_making_dataclasses_while_the_stand_in_comes_and_goes_gets_standard_classes() -> None:
    made: list[dict[str, type]] = []
    errors: list[BaseException] = []
    stop = threading.Event()
    stood: list[bool] = []

    def looked_up(*args: Any, **kwargs: Any) -> Any:
        return dataclasses.dataclass(*args, **kwargs)  # looked up at each class, as a library's decorator is

    def maker() -> None:
        try:
            while not stop.is_set() or len(made) < 5:
                made.append(shapes(looked_up))
        except BaseException as e:  # pragma: no cover — reported below
            errors.append(e)

    thread = threading.Thread(target=maker)
    thread.start()
    try:
        for _ in range(100):
            with records.standing_in() as on:
                stood.append(on)
                shapes(looked_up)  # the import's own classes, while the other thread makes its own
    finally:
        stop.set()
        thread.join()
    assert errors == []
    assert dataclasses.dataclass is records._STANDARD
    assert any(stood)
    for shapes_made in made:
        for name, values in VALUES.items():
            for kwargs in values:
                got = [plain(s) for s in observe(shapes_made[name], kwargs, values)]
                assert got == [plain(s) for s in observe(STANDARD[name], kwargs, VALUES[name])], name


def test_two_threads_standing_in_at_once_leave_the_standard_maker() -> None:
    """Both see the standard maker on entry (one check, then the other's): each stands in, the first to leave
    restores it under the other, whose later classes are then simply standard; none is left in place."""
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def enter() -> None:
        try:
            for _ in range(200):
                barrier.wait()
                with records.standing_in():
                    shapes(lambda *a, **k: dataclasses.dataclass(*a, **k))
        except BaseException as e:  # pragma: no cover — reported below
            errors.append(e)

    threads = [threading.Thread(target=enter) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert dataclasses.dataclass is records._STANDARD
