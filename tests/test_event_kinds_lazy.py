"""The registry of event kinds is complete whenever it is read, though some kind modules are imported late.

``tether.events`` no longer imports the kinds only graphs, schedules, workers, egress and MCP servers write
(``payload.LATER``): a hook deciding one call does not build their models. Each check runs in a fresh
interpreter, where those modules are not imported yet, and reads the registry the way a reader does: a lookup,
``in``, iteration, and a stored event of such a kind read back from a real store.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import tether.events
from tether.events import payload
from tether.events.store import EventStore


def fresh(code: str) -> dict[str, object]:
    """Run ``code`` in a new interpreter (it sets ``out``); its result as JSON."""
    script = f"import json\n{code}\nprint(json.dumps(out))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60)
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_every_kind_module_is_imported_by_the_package_or_named_in_later() -> None:
    """A new ``kinds_*.py`` must be one or the other: else a reader could miss its kinds."""
    here = Path(tether.events.__file__).parent
    modules = {p.stem for p in here.glob("kinds*.py")}
    source = (here / "__init__.py").read_text()
    eager = {m for m in modules if f"    {m},\n" in source}
    assert eager | set(payload.LATER) == modules
    assert not eager & set(payload.LATER)


def test_a_fresh_process_imports_the_later_kinds_only_when_the_registry_is_asked() -> None:
    out = fresh(
        "import sys\n"
        "import tether.events\n"
        "from tether.events.payload import REGISTRY\n"
        "before = sorted(m for m in sys.modules if m.startswith('tether.events.kinds_graph'))\n"
        "model = REGISTRY.get('graph.started')\n"
        "out = {'before': before, 'got': model.__name__, 'after': 'tether.events.kinds_graph' in sys.modules}"
    )
    assert out == {"before": [], "got": "GraphStarted", "after": True}


def test_in_getitem_and_iteration_see_the_later_kinds_in_a_fresh_process() -> None:
    out = fresh(
        "import tether.events\n"
        "from tether.events.payload import REGISTRY\n"
        "a = 'schedule.added' in REGISTRY\n"
        "from tether.events.payload import Registry, LATER\n"
        "r = Registry(LATER)\n"  # an empty one that loads on a miss: its later modules are imported already
        "out = {'in': a, 'item': REGISTRY['trigger.fired'].__name__, 'unknown': REGISTRY.get('no.such', 0),\n"
        "       'n': len(REGISTRY), 'listed': 'mcp.started' in list(REGISTRY), 'not_in': 'no.such' in REGISTRY}"
    )
    assert out["in"] is True and out["item"] == "TriggerFired" and out["unknown"] == 0
    assert out["listed"] is True and out["not_in"] is False
    assert out["n"] == len(payload.REGISTRY)


def test_a_stored_event_of_a_later_kind_is_read_back_as_its_model(tmp_path: Path) -> None:
    """Written by one process (which imported the module), read by a fresh one (which had not)."""
    from tether.events.kinds_egress import EgressAttempted, EgressRule

    sample = EgressAttempted(
        call_id="c1",
        method="CONNECT",
        host="localhost",
        port=443,
        allowed=False,
        rule=EgressRule.ALLOWED,
        detail="listed",
    )
    db = tmp_path / "t.db"
    with EventStore.open(db) as store:
        run = store.create_run("t", [sample])
    out = fresh(
        "from tether.events.store import EventStore\n"
        f"store = EventStore.open({str(db)!r}, readonly=True)\n"
        f"e = store.events({run!r})[0]\n"
        "out = {'model': type(e.data).__name__}"
    )
    assert out == {"model": "EgressAttempted"}


def test_threads_racing_for_the_first_miss_all_see_the_kind() -> None:
    out = fresh(
        "import threading\n"
        "import tether.events\n"
        "from tether.events.payload import REGISTRY\n"
        "seen = []\n"
        "go = threading.Barrier(8)\n"
        "def read():\n"
        "    go.wait()\n"
        "    seen.append(REGISTRY.get('node.leased') is not None)\n"
        "ts = [threading.Thread(target=read) for _ in range(8)]\n"
        "[t.start() for t in ts]; [t.join() for t in ts]\n"
        "out = {'seen': seen}"
    )
    assert out == {"seen": [True] * 8}


def test_later_names_exactly_the_kinds_each_later_module_registers() -> None:
    """``in`` answers from ``payload.LATER``'s kind lists without importing: a kind missing from its module's list
    (or listed but not registered there) fails here, as does a kind that is neither eager nor listed."""
    out = fresh(
        "import importlib\n"
        "import tether.events\n"
        "from tether.events.payload import LATER, REGISTRY\n"
        "eager = set(dict.keys(REGISTRY))\n"
        "out = {}\n"
        "for name in LATER:\n"
        "    before = set(dict.keys(REGISTRY))\n"
        "    importlib.import_module('tether.events.' + name)\n"
        "    out[name] = sorted(set(dict.keys(REGISTRY)) - before)\n"
        "out['eager_and_later'] = sorted(eager & {k for ks in LATER.values() for k in ks})\n"
        "out['total'] = len(dict.keys(REGISTRY))"
    )
    assert out.pop("eager_and_later") == []
    total = out.pop("total")
    assert out == {name: sorted(kinds) for name, kinds in payload.LATER.items()}
    assert total == len(payload.REGISTRY) == len(set(payload.REGISTRY))  # every registered kind, once


def test_in_answers_for_a_later_kind_without_importing_it_and_unknown_kinds_stay_unknown() -> None:
    out = fresh(
        "import sys\n"
        "import tether.events\n"
        "from tether.events.payload import REGISTRY\n"
        "a = 'tests.baseline' in REGISTRY and 'model.requested' in REGISTRY and 'node.leased' in REGISTRY\n"
        "imported = sorted(m for m in sys.modules if m.rsplit('.', 1)[-1] in ('kinds_baseline', 'kinds_kernel'))\n"
        "b = 'no.such' in REGISTRY\n"  # a miss: the later modules are imported, and it is still unknown
        "out = {'in': a, 'imported': imported, 'unknown': b, 'after': 'tether.events.kinds_kernel' in sys.modules}"
    )
    assert out == {"in": True, "imported": [], "unknown": False, "after": True}


def test_reading_a_log_with_a_later_kind_imports_it_only_when_its_data_is_read(tmp_path: Path) -> None:
    """A hook session's log holds ``tests.baseline``; folding it to decide a call reads no baseline, so a fresh
    process reads the rows without building the baseline's models; ``data`` then parses it (and a payload that
    does not fit fails closed there, naming the seq, as any kind's does)."""
    import sqlite3

    from tether.events.kinds import RunStarted
    from tether.events.kinds_baseline import SuiteBaseline

    db = tmp_path / "t.db"
    with EventStore.open(db) as store:
        run = store.create_run("t", [RunStarted(task="t", model="m", workspace=str(tmp_path))])
        store.append(run, SuiteBaseline(command="pytest", runner="pytest", ok=True))
        store.append(run, SuiteBaseline(command="pytest", runner="pytest", ok=True))
    with sqlite3.connect(db) as conn:  # the last row's payload rewritten (a forger) to a shape the model refuses
        conn.execute("DROP TRIGGER events_no_update")
        conn.execute("UPDATE events SET payload = ? WHERE run_id = ? AND seq = 2", ('{"command": 1}', run))
    out = fresh(
        "import sys\n"
        "from tether.errors import LogCorrupt\n"
        "from tether.events.store import EventStore\n"
        "from tether.state import RunState\n"
        f"store = EventStore.open({str(db)!r}, readonly=True)\n"
        f"events = store.events({run!r})\n"
        "state = RunState()\n"
        "[state.apply(e) for e in events]\n"
        "before = 'tether.events.kinds_baseline' in sys.modules\n"
        "model = type(events[1].data).__name__\n"
        "try:\n"
        "    events[2].data\n"
        "    bad = ''\n"
        "except LogCorrupt as e:\n"
        "    bad = str(e)\n"
        "out = {'before': before, 'model': model, 'bad': bad}"
    )
    assert out["before"] is False and out["model"] == "SuiteBaseline"
    assert "seq 2" in str(out["bad"]) and "tests.baseline" in str(out["bad"])
