"""``events/payload.py`` asks :func:`tether.plain.active` once, at import (``PLAIN``), not for every payload it
prepares: these tests hold that one answer to the process's mode however the process came to it, and show that
the mode cannot change after the module is imported (so the answer cannot go stale)."""

from __future__ import annotations

import subprocess
import sys

from tether import plain
from tether.events import payload


def run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_full_process_prepares_with_pydantic() -> None:
    assert payload.PLAIN is False and plain.active() is False
    assert plain.choose() is False  # too late: the model modules are imported (this one among them)
    assert payload.PLAIN is plain.active() is False


def test_a_plain_process_prepares_plain_records() -> None:
    out = run(
        "from tether import plain; assert plain.choose()\n"
        "from tether.events import payload\n"
        "from tether.events.kinds_kernel import ModelRequested\n"
        "kind, data, model = payload.prepare(ModelRequested(turn=1, model='scripted:x'))\n"
        "print(payload.PLAIN, type(model).__mro__[-2].__module__, 'pydantic' in __import__('sys').modules)"
    )
    assert out == "True tether.plainrecord False"


def test_choosing_after_the_import_changes_nothing() -> None:
    out = run(
        "from tether.events import payload\n"
        "from tether import plain\n"
        "print(payload.PLAIN, plain.choose(), plain.active())"
    )
    assert out == "False False False"
