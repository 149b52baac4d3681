"""A stop's sensors answer before the agent's hook timeout: Claude Code lets a stop through when its Stop hook times
out, so a test suite the agent made hang (an endless loop in the code under test) would have let the stop through
unchecked. The sensors now share a deadline (``STOP_SENSORS_S``, 540 s under the installed 600 s timeout; a few
seconds here), and a command still running then times out: an ERROR, which refuses the stop. Before, the suite
below ran to its end and the stop was accepted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_session import sensing

from tether.hooks import install, session


def test_a_test_suite_that_outlasts_the_stops_time_refuses_the_stop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert session.STOP_SENSORS_S < install.STOP_TIMEOUT_S
    monkeypatch.setattr(session, "STOP_SENSORS_S", 2.0)
    hook = sensing(tmp_path, "python -c 'import time; time.sleep(20)'")
    out = hook("Stop").stdout
    assert out, "the stop was accepted"
    reply = json.loads(out)
    assert reply["decision"] == "block" and "timed out" in reply["reason"], reply
