"""A PostgreSQL database whose encoding is not UTF-8 is refused by name, by ``tether db init`` and by every open.

``SQL_ASCII`` keeps whatever bytes it is given, and psycopg reads its text columns as ``bytes``: opening a store there
failed with "internal error: TypeError" (the schema check joined bytes), and a log in it would have read as malformed
everywhere, or — had the bytes been decoded some other way — as text tether never hashed.
"""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from pgkit import Postgres

from tether.errors import NotATetherDatabase
from tether.events import open_store
from tether.events.pgstore import init


@pytest.mark.postgres
def test_a_database_not_in_utf8_is_refused_by_name(postgres: Postgres, tmp_path: Path) -> None:
    with psycopg.connect(postgres.conninfo(), autocommit=True) as conn:
        conn.execute("CREATE DATABASE ascii_log ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0")
    url = postgres.url("ascii_log")
    with pytest.raises(NotATetherDatabase, match="encoding is SQL_ASCII; tether's log is UTF-8 text"):
        init(url)
    for readonly in (False, True):
        with pytest.raises(NotATetherDatabase, match="encoding is SQL_ASCII"):
            open_store(url, local=tmp_path, readonly=readonly)
    with open_store(postgres.tether_store(), local=tmp_path) as store:  # a UTF8 one opens as before
        run = store.create_run("t", [("run.started", {"task": "tâche"})])
        assert store.verify(run) == 1
