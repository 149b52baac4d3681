"""The throwaway PostgreSQL (tests/pgkit.py) the PostgreSQL store's tests will run against: it starts, answers,
runs unprivileged, listens on no TCP port, and gives each test a database of its own.

psycopg is imported in each test, not at the top: without it the tests skip with the reason (tests/conftest.py)
instead of failing to collect — and in CI they fail, as they must.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pgkit import Postgres

pytestmark = pytest.mark.postgres


def test_it_starts_and_answers_a_query(postgres: Postgres) -> None:
    import psycopg

    with psycopg.connect(postgres.conninfo()) as conn:
        row = conn.execute("SELECT 6 * 7, current_setting('server_version_num')::int").fetchone()
    assert row is not None
    answer, version = row
    assert answer == 42
    assert version >= 130000  # a supported PostgreSQL (Debian 12 ships 15)


def test_it_runs_unprivileged_and_reachable_only_by_its_socket(postgres: Postgres) -> None:
    import psycopg

    with psycopg.connect(postgres.conninfo()) as conn:
        listen = conn.execute("SHOW listen_addresses").fetchone()
        data_dir = conn.execute("SHOW data_directory").fetchone()
    assert listen == ("",)  # no TCP port at all: nothing on the network can reach it
    assert data_dir is not None
    assert Path(data_dir[0]).is_relative_to(postgres.socket_dir)
    server_uid = os.stat(f"/proc/{postgres.process.pid}").st_uid
    assert server_uid != 0  # PostgreSQL refuses root; as root the fixture runs it as tether-sandbox


def test_each_test_gets_a_database_of_its_own(postgres: Postgres) -> None:
    import psycopg

    a, b = postgres.create_database("fixture_a"), postgres.create_database("fixture_b")
    with psycopg.connect(a, autocommit=True) as conn:
        conn.execute("CREATE TABLE t (x int)")
        conn.execute("INSERT INTO t VALUES (1)")
    with psycopg.connect(b) as conn, pytest.raises(psycopg.errors.UndefinedTable):
        conn.execute("SELECT x FROM t")
    with psycopg.connect(postgres.url("fixture_a")) as conn:  # the URL form names the same server
        assert conn.execute("SELECT x FROM t").fetchall() == [(1,)]
    with pytest.raises(psycopg.errors.DuplicateDatabase):
        postgres.create_database("fixture_a")
