"""datetime's classes from its C part, ``_datetime``, without the Python module ``datetime``.

On 3.11 ``datetime.py`` defines a whole pure-Python implementation (the classes, their methods, the tables) and then
replaces every name with ``_datetime``'s: a cold hook call paid ~3.3 M instructions (1.5 % of it) for classes it
threw away. ``datetime.datetime is _datetime.datetime``, so what is made here is what ``datetime`` hands out; an
interpreter without the C part gets the Python module. ``tests/test_clock.py`` holds the names to ``datetime``'s.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: a cold hook call imports no typing
if TYPE_CHECKING:
    from datetime import UTC, datetime, timedelta
else:
    try:
        from _datetime import UTC, datetime, timedelta
    except ImportError:  # pragma: no cover - an interpreter without the C part (PyPy)
        from datetime import UTC, datetime, timedelta

__all__ = ["UTC", "datetime", "timedelta"]
