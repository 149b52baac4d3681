"""A test's own configuration and state folders: no test reads or writes the developer's ~/.config/tether (the
anchor key) or ~/.local/state/tether (the list of databases, a hook session's pin)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def private_config(root: Path) -> Iterator[None]:
    """``XDG_CONFIG_HOME`` and ``XDG_STATE_HOME`` under ``root``, and no anchor key from the environment, while it
    lasts. A patcher of its own: a test's ``monkeypatch.undo()`` does not undo it."""
    with pytest.MonkeyPatch.context() as private:
        private.setenv("XDG_CONFIG_HOME", str(root / "xdg-config"))
        private.setenv("XDG_STATE_HOME", str(root / "xdg-state"))
        for name in ("TETHER_KEY", "TETHER_ANCHOR_FILE", "TETHER_ANCHOR_EVERY"):
            private.delenv(name, raising=False)
        yield
