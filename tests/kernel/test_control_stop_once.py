"""``Runtime.control_stop`` works its answer out again only when the fold's latest ``control.changed`` is another
event (issue 18): on a run whose control state climbs to HUMAN_REQUIRED between steps, every answer it gives is the
one :func:`stop_reason` gives of the fold at that moment, and the run still ends NO_PROGRESS where it did."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_control_runs import test_repeated_failing_edit_climbs_the_ladder_then_no_progress as no_progress_run

from tether.control import loop
from tether.kernel import runtime
from tether.kernel.runtime import Runtime


def test_each_answer_is_the_folds_own_as_control_changes(bugfix: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[Any] = []
    worked: list[int] = []
    cached = Runtime.control_stop
    real = loop.stop_reason

    def counted(events: Any) -> Any:
        worked.append(1)
        return real(events)

    def checked(self: Runtime) -> Any:
        got = cached(self)
        assert got == real(self.fold), "a kept answer outlived the control.changed it was worked out from"
        asked.append(got)
        return got

    monkeypatch.setattr(runtime, "stop_reason", counted)
    monkeypatch.setattr(Runtime, "control_stop", checked)
    no_progress_run(bugfix)  # its own asserts: NO_PROGRESS by escalate_human, the ladder climbed in order
    assert asked[0] is None and asked[-1] is not None  # the answer changed during the run, and was followed
    assert len(worked) < len(asked) / 2  # worked out once per control.changed (and once at the start), not per ask
