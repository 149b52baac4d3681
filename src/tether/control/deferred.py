"""Folds of the control layer that a run's holder can give when one is first asked for, not before.

A hook's cold PreToolUse restores its session from a fold checkpoint without reading the checkpoint's second part,
the control layer's fold: deciding a command or a read never asks for it (guard/log.py ``wants_fold``), nor a write
where no plan was made (its review reads the failing tests from the run state). A write's review in a session with a
plan does, and without the fold at hand the control layer folded the whole log: 0.8 s a cold Edit after 1,000 tool
calls. So the checkpoint's reader leaves here how to read that part (guard/checkpoint.py), and
:func:`tether.control.fold.folded` takes it the first time it is asked for the run. Its own module, holding no fold:
registering one imports nothing of the control layer.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

#: Run id -> what gives its fold, a ``RunFold`` (None when it cannot be read: the control layer then folds the log).
#: Taken once.
LATER: dict[str, Callable[[], Any]] = {}
