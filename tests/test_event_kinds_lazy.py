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
    from tether.events.store import EventStore

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
