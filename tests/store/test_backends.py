"""Which store a spec names: a file path, or a postgresql:// URL kept whole (events/backends.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.events.backends import default_spec, describe, is_url, local_dir, open_store, spec_of
from tether.events.store import EventStore


def test_a_url_stays_text_and_a_file_becomes_a_path() -> None:
    url = "postgresql:///tether?host=/run/pg"  # no authority: a Path would collapse the //
    assert spec_of(url) == url
    assert is_url("postgres://u@h/db") and is_url("POSTGRESQL://h/db")
    assert spec_of("runs/tether.db") == Path("runs/tether.db")
    assert not is_url(Path("postgresql:/x")) and not is_url("postgresql.db")


def test_tether_db_names_either(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("TETHER_DB", raising=False)
    assert default_spec(tmp_path) == tmp_path / ".tether" / "tether.db"
    monkeypatch.setenv("TETHER_DB", "postgresql://app@db.example/tether")
    assert default_spec(tmp_path) == "postgresql://app@db.example/tether"


def test_a_password_is_never_shown() -> None:
    assert describe("postgresql://app:s3cret@db:5432/tether?sslmode=require") == (
        "postgresql://app:***@db:5432/tether?sslmode=require"
    )
    assert "s3cret" not in describe("postgresql://app:s3cret@/tether?host=/run/pg")
    assert describe("postgresql://app@db/tether") == "postgresql://app@db/tether"


def test_local_files_sit_beside_a_file_or_in_the_workspace(tmp_path: Path) -> None:
    assert local_dir(tmp_path / "x" / "tether.db") == tmp_path / "x"
    assert local_dir("postgresql://h/db", tmp_path) == tmp_path / ".tether"


def test_a_file_spec_opens_the_sqlite_store(tmp_path: Path) -> None:
    with open_store(tmp_path / "t.db") as store:
        assert isinstance(store, EventStore)
        store.create_run("t")
    with open_store(str(tmp_path / "t.db"), readonly=True) as store:
        assert len(store.runs()) == 1
