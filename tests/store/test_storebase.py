"""The statements the shared half of a store runs (``StoreBase``) are each store's own, in its own dialect: a store
that left one out, or carried one over from the other database, would fail only when that path first runs (an
import, a lease's heartbeat, a signed checkpoint)."""

from __future__ import annotations

import pytest

from tether.events.pgstore import PgStore
from tether.events.store import EventStore
from tether.events.storebase import StoreBase

STATEMENTS = sorted(name for name in StoreBase.__annotations__ if name.startswith("SQL_"))


def test_the_base_names_its_statements() -> None:
    assert len(STATEMENTS) == 8


@pytest.mark.parametrize(("store", "placeholder", "foreign"), [(EventStore, "?", "%s"), (PgStore, "%s", "?")])
@pytest.mark.parametrize("name", STATEMENTS)
def test_each_store_writes_each_statement_in_its_own_dialect(
    store: type[EventStore] | type[PgStore], placeholder: str, foreign: str, name: str
) -> None:
    statement = getattr(store, name)  # AttributeError: the store left it out
    assert isinstance(statement, str)
    assert placeholder in statement
    assert foreign not in statement


def test_a_store_that_leaves_out_a_per_database_method_cannot_be_made() -> None:
    """The per-database half is abstract: a store missing one fails when it is made, not when the method is first
    called deep inside a run."""
    per_database = {"where", "_transaction", "_snapshot", "_runs_named", "_verified_hashes", "_events_in"}
    per_database |= {"append_many", "checkpoints", "close", "_insert_run", "_append_locked"}
    assert StoreBase.__abstractmethods__ == per_database
    for left_out in sorted(per_database):
        partial = type("Partial", (StoreBase,), dict.fromkeys(per_database - {left_out}, print))
        with pytest.raises(TypeError, match=left_out):
            partial()
