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

import pytest

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


#: What a fresh process reports of a log: each event's model, the run state, and the control layer's fold and
#: what it would append (``observe``), each as JSON. The same code runs in this process, where every kind
#: module is imported, for the expected answer.
FOLD_EVERY_KIND = """
import json, sys
from tether.control.fold import folded
from tether.control.loop import control_state, observe
from tether.envelope.schema import Envelope
from tether.events.payload import REGISTRY, Payload
from tether.events.store import EventStore
from tether.state import RunState

def state_json(state):
    import dataclasses
    indexes = {f.name for f in dataclasses.fields(state) if not f.compare}
    own = {k: v for k, v in dataclasses.asdict(state).items() if k not in indexes}
    return json.loads(json.dumps(own, default=str, sort_keys=True))

def report(db, run):
    events = EventStore.open(db, readonly=True).events(run)
    before = sorted(m for m in sys.modules if m.startswith("tether.events.kinds"))
    found = all(e.kind in REGISTRY for e in events)
    models = [[e.kind, type(e.data).__module__, type(e.data).__name__, e.data.model_dump(mode="json")] for e in events]
    fold = folded(events)
    env = Envelope.model_validate(
        {"plan": {"path": "plan.yaml", "hash": "sha256:" + "0" * 64},
         "verification": {"sensors": [{"name": "tests", "required": True}], "max_refusals": 2}}
    )
    control = {
        "strategy": fold.strategy, "marker_seq": fold.marker_seq, "plan_revisions": fold.plan_revisions,
        "beliefs": sorted(fold.beliefs), "claims": [fold.claims, fold.supported], "generation": fold.generation,
        "system_breaking": [e.seq for e in fold.system_breaking], "state": str(control_state(events)),
        "last": [getattr(fold, n).seq if getattr(fold, n) is not None else None
                 for n in ("last_control", "last_diagnostics", "last_input")],
        "observe": [[p.KIND, p.model_dump(mode="json")] for p in observe(events, env)],
    }
    return {"before": before, "found": found, "models": models, "state": state_json(RunState.from_events(events)),
            "control": control, "registered": sorted(REGISTRY)}
"""


def test_a_fresh_process_finds_and_folds_every_kind_of_a_log_holding_them_all(tmp_path: Path) -> None:
    """A log with an event of every registered kind (``test_event_payloads.SAMPLES``), written here, is read by a
    fresh process that imported only the package's own kind modules: every kind is found, each event reads back as
    its kind's model, and the run state and the control layer's fold (and what it would append) are exactly those
    this process, which imported every kind module first, folds from the same log."""
    from test_event_payloads import SAMPLES

    db = tmp_path / "t.db"
    with EventStore.open(db) as store:
        run = store.create_run("t", SAMPLES[:1])
        for sample in SAMPLES[1:]:
            store.append(run, sample)
    assert sorted({type(s).KIND for s in SAMPLES}) == sorted(payload.REGISTRY)
    scope: dict[str, object] = {}
    exec(FOLD_EVERY_KIND, scope)
    expected = scope["report"](db, run)  # type: ignore[operator]
    assert expected["found"] and len(expected["models"]) == len(SAMPLES)
    out = fresh(f"{FOLD_EVERY_KIND}\nout = report({str(db)!r}, {run!r})")
    assert out["before"] == ["tether.events.kinds_calls"]
    assert out["found"] is True
    assert out["models"] == expected["models"]
    assert out["state"] == expected["state"]
    assert out["control"] == expected["control"]
    assert out["registered"] == expected["registered"]


def test_an_unregistered_kind_still_fails_closed_in_a_fresh_process(tmp_path: Path) -> None:
    """A kind no module registers, in a log read by a fresh process: ``in`` says no (after importing every later
    module), and folding the log refuses it, naming the seq and the kind."""
    import sqlite3

    from tether.canonical import canonical_json
    from tether.events.chain import event_hash
    from tether.events.kinds_calls import RunStarted

    db = tmp_path / "t.db"
    with EventStore.open(db) as store:
        run = store.create_run("t", [RunStarted(task="t")])
    with sqlite3.connect(db) as conn:  # a forger's row: a correct chain, a kind tether never registered
        seq, prev = conn.execute("SELECT head_seq, head_hash FROM runs WHERE run_id=?", (run,)).fetchone()
        ts, body = "2026-01-01T00:00:00.000000+00:00", canonical_json({"x": 1})
        h = event_hash(prev, run, seq + 1, ts, "model.guessed", body)
        conn.execute(
            "INSERT INTO events VALUES (?,?,?,?,?,?)", (run, seq + 1, ts, "model.guessed", body, bytes.fromhex(h))
        )
        conn.execute("UPDATE runs SET head_seq=?, head_hash=? WHERE run_id=?", (seq + 1, h, run))
    out = fresh(
        "from tether.errors import LogCorrupt\n"
        "from tether.events.payload import REGISTRY\n"
        "from tether.events.store import EventStore\n"
        "from tether.state import RunState\n"
        f"events = EventStore.open({str(db)!r}, readonly=True).events({run!r})\n"
        "try:\n"
        "    RunState.from_events(events)\n"
        "    bad = ''\n"
        "except LogCorrupt as e:\n"
        "    bad = str(e)\n"
        "out = {'in': 'model.guessed' in REGISTRY, 'bad': bad}"
    )
    assert out["in"] is False
    assert "seq 1" in str(out["bad"]) and "model.guessed" in str(out["bad"])


def test_every_kind_the_folds_name_by_its_string_is_registered_and_handled_as_its_model() -> None:
    """The folds' tables are keyed by a kind's string, not its class (so a fold builds no class of a kind it never
    reads): a misspelt kind would be a handler never called. Each named kind is registered, and each handler's
    payload parameter is annotated with that kind's model (or a union naming it)."""
    import inspect

    from tether.control import fold, loop, receipts
    from tether.control.planning import PlanFold
    from tether.state import _BY_KIND, STATUS_KINDS

    tables = {
        "state": _BY_KIND,
        "control.fold": fold._BY_KIND,
        "control.receipts": receipts._VIEW_BY_KIND,
        "control.loop": loop._SAY,
    }
    sets = {
        "STATUS_KINDS": STATUS_KINDS,
        "MARKER_KINDS": fold.MARKER_KINDS,
        "CONTROL_KINDS": receipts.CONTROL_KINDS,
        "RECEIPT_KINDS": receipts.RECEIPT_KINDS,
        "PlanFold.KINDS": PlanFold.KINDS,
    }
    registered = set(payload.REGISTRY)
    unknown = {f"{name}: {kind}" for name, kinds in (*tables.items(), *sets.items()) for kind in kinds}
    unknown = {u for u in unknown if u.split(": ", 1)[1] not in registered}
    assert unknown == set()
    mismatched = []
    for name, table in tables.items():
        for kind, handler in table.items():
            params = list(inspect.signature(handler).parameters.values())
            annotated = [p.annotation for p in params if p.name in ("p", "data", "record")] or [
                params[0].annotation if params else ""
            ]
            model = payload.REGISTRY[kind].__name__
            if getattr(handler, "__name__", "") != "<lambda>" and model not in str(annotated[0]).split(" | "):
                mismatched.append(f"{name}: {kind} -> {handler.__qualname__}({annotated[0]})")
    assert mismatched == []


def test_a_miss_imports_only_the_module_of_the_kind_asked_for() -> None:
    """``get`` of a later kind imports the one module that registers it; iterating imports the rest."""
    out = fresh(
        "import sys\n"
        "import tether.events\n"
        "from tether.events.payload import LATER, REGISTRY\n"
        "def later():\n"
        "    return sorted(m for m in LATER if 'tether.events.' + m in sys.modules)\n"
        "model = REGISTRY.get('approval.requested').__name__\n"
        "one = later()\n"
        "item = REGISTRY['plan.carried'].__name__\n"
        "two = later()\n"
        "n = len(list(REGISTRY))\n"
        "out = {'model': model, 'one': one, 'item': item, 'two': two, 'all': later(), 'n': n}"
    )
    assert out["model"] == "ApprovalRequested" and out["one"] == ["kinds"]
    assert out["item"] == "PlanCarried" and out["two"] == ["kinds", "kinds_knowledge"]
    assert out["all"] == sorted(payload.LATER) and out["n"] == len(payload.REGISTRY)


def test_threads_missing_kinds_of_different_later_modules_at_once_all_see_them() -> None:
    """Twelve threads, each asking at the same moment for a kind of another later module (and two iterating):
    each gets its kind's model, the iterations see every kind, and the registry ends complete."""
    out = fresh(
        "import threading\n"
        "import tether.events\n"
        "from tether.events.payload import LATER, REGISTRY\n"
        "asks = [kinds[0] for kinds in LATER.values()]\n"
        "got, listed = {}, []\n"
        "go = threading.Barrier(len(asks) + 2)\n"
        "def ask(kind):\n"
        "    go.wait()\n"
        "    got[kind] = REGISTRY.get(kind).KIND\n"
        "def iterate():\n"
        "    go.wait()\n"
        "    listed.append(len(list(REGISTRY)))\n"
        "ts = [threading.Thread(target=ask, args=(k,)) for k in asks]\n"
        "ts += [threading.Thread(target=iterate) for _ in '12']\n"
        "[t.start() for t in ts]; [t.join() for t in ts]\n"
        "out = {'right': all(got[k] == k for k in asks) and len(got) == len(asks), 'listed': listed,\n"
        "       'n': len(dict.keys(REGISTRY))}"
    )
    n = len(payload.REGISTRY)
    assert out == {"right": True, "listed": [n, n], "n": n}


@pytest.mark.parametrize(
    "whole",
    ["list(reversed(REGISTRY))", "dict(REGISTRY)", "{**REGISTRY}", "REGISTRY.copy()", "dict(REGISTRY.items())"],
)
def test_every_way_of_reading_the_registry_whole_sees_every_kind_in_a_fresh_process(whole: str) -> None:
    out = fresh(f"import tether.events\nfrom tether.events.payload import REGISTRY\nout = sorted({whole})")
    assert out == sorted(payload.REGISTRY)
