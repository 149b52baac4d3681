"""The suite's own ~/.config and ~/.local/state (tests/conftest.py ``_private_config``) hold for the whole test, also
after the test undoes its own patches: ``monkeypatch.undo()`` undid them too, and the calls after it wrote the
developer's ``~/.local/state/tether/databases`` (tests/hooks/test_fold_checkpoint.py did)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def test_a_test_undoing_its_patches_keeps_the_private_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "elsewhere"))
    monkeypatch.undo()
    assert os.environ["XDG_STATE_HOME"] == str(tmp_path / "xdg-state")
    assert os.environ["XDG_CONFIG_HOME"] == str(tmp_path / "xdg-config")
