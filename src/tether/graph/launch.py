"""Starting a graph: check everything, record ``graph.started``, then let N worker processes drive it.

Nothing is created for a graph that does not check: GRAPH.yaml (fields, ids, needs, cycles), then the
graph's envelope and every node's strictly validated (as ``tether run`` would), each finding naming the
file and field. The graph log records each node envelope's contract hash; a worker refuses to run a node
whose envelope file changed since.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tether.errors import EnvelopeInvalid, InputError, Problem
from tether.events.backends import StoreSpec
from tether.events.kinds_graph import GraphStarted
from tether.events.protocol import Store
from tether.kernel import session
from tether.kernel.approvals import whoami

from .spec import Graph, load_graph


def check_graph(path: Path) -> tuple[Graph, dict[str, str]]:
    """The graph and each node envelope's contract hash; :class:`EnvelopeInvalid` lists every problem found."""
    graph = load_graph(path)
    problems: list[Problem] = []
    hashes: dict[str, str] = {}
    where = [("$.envelope", "graph", graph.envelope)] + [
        (f"$.nodes[{i}].envelope", n.id, n.envelope) for i, n in enumerate(graph.nodes)
    ]
    for field, name, envelope in where:
        try:
            hashes[name] = session.load_checked(envelope).envelope.contract_hash
        except EnvelopeInvalid as e:
            problems += [Problem(f"{field} -> {p.path}", p.found, p.expected, p.file or envelope) for p in e.problems]
        except InputError as e:  # a missing or unreadable file: named with the graph's field
            problems.append(Problem(field, str(e).splitlines()[0], "a readable, valid envelope", str(path)))
    if problems:
        raise EnvelopeInvalid(problems)
    return graph, hashes


def start_graph(store: Store, path: Path, *, sandbox: str | None = None, by: str | None = None) -> str:
    """Check the graph and create its log (``graph.started``); the graph's run id. Nothing runs yet."""
    graph, hashes = check_graph(path)
    started = GraphStarted(
        name=graph.name,
        graph_path=str(path.resolve()),
        graph=graph.model_dump(mode="json"),
        contracts=hashes,
        lease_s=graph.lease_s,
        sandbox=sandbox,
        by=by or whoami(),
    )
    return store.create_run(f"graph {graph.name}", [started])


def spawn_workers(db: StoreSpec, graph_run: str, n: int) -> list[subprocess.Popen[bytes]]:
    """``n`` worker processes (``tether graph work``) on this machine; their progress goes to stderr."""
    argv = [sys.executable, "-m", "tether.cli.main", "graph", "work", graph_run, "--db", str(db)]
    return [subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL) for _ in range(n)]
