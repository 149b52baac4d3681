"""The store uses ``_sqlite3``, sqlite3's C part, not the package (whose ``dbapi2`` imports ``datetime``, ~2 M
instructions of a cold hook call): its classes and functions are the package's very objects, so an error the store
raises is caught by ``except sqlite3.<Error>`` anywhere, and what it catches is what the package raises."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import tether
from tether.errors import NotATetherDatabase
from tether.events import store

NAMES = ("Connection", "connect", "Error", "DatabaseError", "OperationalError", "Row")
NAMES += ("SQLITE_FULL", "SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_INTERRUPT", "SQLITE_NOMEM")


@pytest.mark.parametrize("name", NAMES)
def test_every_name_the_store_uses_is_the_packages_object(name: str) -> None:
    assert getattr(vars(store)["sqlite3"], name) is getattr(sqlite3, name)


def test_a_file_that_is_no_database_is_refused_as_before(tmp_path: Path) -> None:
    (tmp_path / "db").write_bytes(b"not a database, sixteen+ bytes of text" * 100)
    with pytest.raises(NotATetherDatabase) as raised:
        store.EventStore.open(tmp_path / "db")
    assert isinstance(raised.value.__cause__, sqlite3.DatabaseError)  # the package's class caught the C part's error


#: In a fresh process: a store made, a run written, leased, read back and verified, a malformed query's error
#: caught by the package's class imported afterwards; the modules the store's work imported printed.
FRESH = """
import json, sys
sys.path.insert(0, SRC)
from tether.events.store import EventStore
s = EventStore.open(DB)
run = s.create_run("task")
s.acquire(run)  # a lease: its expiry written with the clock
events = s.verify(run) + len(list(s.events(run)))
loaded = sorted(m for m in ("sqlite3", "sqlite3.dbapi2") if m in sys.modules)  # pydantic imports datetime here
import sqlite3
try:
    s._conn.execute("SELEKT")
except sqlite3.OperationalError as e:
    caught = type(e).__name__
print(json.dumps([loaded, caught, events]))
"""


def test_a_fresh_process_writes_without_the_package_and_its_errors_are_the_packages(tmp_path: Path) -> None:
    src = os.path.dirname(os.path.dirname(tether.__file__))
    code = f"SRC, DB = {src!r}, {str(tmp_path / 'tether.db')!r}\n" + FRESH
    env = {k: v for k, v in os.environ.items() if not k.startswith("TETHER")} | {"HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    loaded, caught, events = json.loads(done.stdout)
    assert loaded == [] and caught == "OperationalError" and events == 0
