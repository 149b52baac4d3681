"""tether.clock hands out datetime's very classes (from ``_datetime``) without importing ``datetime``."""

from __future__ import annotations

import datetime as stdlib
import os
import subprocess
import sys

from tether import clock


def test_the_names_are_datetimes_own_objects() -> None:
    assert clock.datetime is stdlib.datetime
    assert clock.timedelta is stdlib.timedelta
    assert clock.UTC is stdlib.UTC
    assert clock.UTC.utcoffset(None) == stdlib.timedelta(0)
    assert clock.datetime.fromisoformat("2026-12-03T03:00:00.000001+00:00").tzinfo is stdlib.UTC


def test_importing_it_does_not_import_datetime() -> None:
    src = os.path.dirname(os.path.dirname(clock.__file__))
    code = f"import sys; sys.path.insert(0, {src!r}); import tether.clock; print('datetime' in sys.modules)"
    out = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
