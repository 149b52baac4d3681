"""The cold path's paths, now strings, are spelled as the ``Path`` expressions they replace were, for hostile texts
(``..``, ``//``, trailing ``/``, ``~``, NUL, unicode, very long): the fold checkpoints' folder beside a database, a
session's checkpoint and a kept envelope's file in it, the registry of databases, the anchor key, an envelope's
suffix. Each held by hypothesis to the expression it replaced (written out here, with pathlib)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tether.events import anchor, registry
from tether.events.backends import is_url
from tether.guard import envcache
from tether.guard import log as guard_log
from tether.hooks import session

PARTS = st.sampled_from(["", ".", "..", "a", "~", "é", "a\x00b", "x" * 300, "db.json", ".json", "x.", "t.db"])


def rooted(root: str) -> st.SearchStrategy[str]:
    return st.lists(PARTS, min_size=1, max_size=6).map(lambda ps: root + "/".join(ps))


TEXTS = st.one_of(st.text(min_size=1), *(rooted(r) for r in ("", "/", "//", "///"))).filter(bool)


@settings(max_examples=1500)
@given(TEXTS, st.booleans())
def test_the_folds_folder_and_the_files_in_it_are_spelled_as_path(text: str, as_path: bool) -> None:
    db: str | Path = Path(text) if as_path else text
    if isinstance(db, str) and is_url(db):
        return
    folder = Path(str(Path(db)) + ".folds")  # the settings made a Path of the client's text, then this
    assert session.checkpoints_of(db) == str(folder)
    assert guard_log.path_for(session.checkpoints_of(db) or "", "run-1") == str(
        folder / (guard_log.path_for("x", "run-1").rpartition("/")[2])
    )
    envelope = Path(text)
    assert envcache.file_for(folder, envelope) == str(folder / Path(envcache.file_for("f", envelope)).name)
    assert envcache._suffix(str(envelope)) == envelope.suffix


@settings(max_examples=500, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(TEXTS, TEXTS, st.booleans())
def test_the_registry_and_the_key_are_where_path_put_them(
    monkeypatch: pytest.MonkeyPatch, home: str, state: str, set_state: bool
) -> None:
    if "\x00" in home + state:
        return  # an environment variable holds no NUL
    monkeypatch.setenv("HOME", home)
    for var in ("XDG_STATE_HOME", "XDG_CONFIG_HOME"):
        if set_state:
            monkeypatch.setenv(var, state)
        else:
            monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("TETHER_KEY", raising=False)
    given_state = state if set_state else ""

    def old_registry() -> str:
        return str(Path(given_state or str(Path.home() / ".local" / "state")) / "tether" / "databases")

    def old_key() -> str:
        return str(Path(given_state or str(Path.home() / ".config")) / "tether" / "anchor.key")

    assert outcome(registry.registry_path) == outcome(old_registry)
    assert outcome(anchor.key_file) == outcome(old_key) == outcome(lambda: str(anchor.key_path()))
    assert anchor.key_file(Path(home)) == str(Path(home))


def outcome(ask: Callable[[], str]) -> str | tuple[type[Exception], str]:
    try:
        return ask()
    except Exception as e:  # Path's error (no home to be found) is raised as it was
        return (type(e), str(e))
