"""GRAPH.yaml is input: every finding names the file, the field and what was expected; nothing is created."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from graphkit import bash, write_graph

from tether.errors import EnvelopeInvalid
from tether.events.store import EventStore
from tether.graph.launch import start_graph
from tether.graph.spec import find_cycle, load_graph


def edit(path: Path, change: dict[str, object]) -> Path:
    doc = yaml.safe_load(path.read_text())
    doc.update(change)
    path.write_text(yaml.safe_dump(doc))
    return path


def problems(path: Path) -> list[str]:
    with pytest.raises(EnvelopeInvalid) as e:
        load_graph(path)
    return [f"{p.file}|{p.path}|{p.found}|{p.expected}" for p in e.value.problems]


def test_structure_errors_name_file_field_and_expectation(tmp_path: Path) -> None:
    g = tmp_path / "g.yaml"
    nodes = [
        {"id": "a", "envelope": "e.yaml", "task": "t", "needs": ["zz"]},
        {"id": "a", "envelope": "e.yaml", "task": "t"},
        {"id": "../x", "envelope": "e.yaml", "task": "t", "needs": ["../x"]},
    ]
    g.write_text(yaml.safe_dump({"name": "n", "envelope": "e.yaml", "nodes": nodes}))
    found = problems(g)
    assert f"{g}|$.nodes[0].needs[0]|'zz'|one of ['../x', 'a']" in found
    assert any("$.nodes[1].id|'a'|an id no other node has" in p for p in found)
    assert any("$.nodes[2].id|'../x'" in p for p in found)
    assert any("$.nodes[2].needs[0]|'../x'|another node's id" in p for p in found)


def test_unknown_keys_wrong_types_and_a_hostile_lease_are_refused(tmp_path: Path) -> None:
    g = tmp_path / "g.yaml"
    g.write_text(yaml.safe_dump({"name": "n", "envelope": "e", "lease_s": 0, "nodes": [], "extra": 1}))
    found = problems(g)
    assert any("$.lease_s" in p for p in found) and any("$.nodes" in p for p in found)
    assert any("$.extra|unknown key" in p for p in found)


def test_a_cycle_is_refused_naming_its_nodes(tmp_path: Path) -> None:
    g = tmp_path / "g.yaml"
    nodes = [{"id": i, "envelope": "e", "task": "t", "needs": [n]} for i, n in (("a", "c"), ("b", "a"), ("c", "b"))]
    g.write_text(yaml.safe_dump({"name": "n", "envelope": "e", "nodes": [*nodes, {"id": "d", "envelope": "e",
                                                                                   "task": "t"}]}))  # fmt: skip
    (found,) = problems(g)
    assert "a cycle: a -> c -> b -> a" in found and found.endswith("|no cycle")
    assert find_cycle({"x": ["x"]}) == ["x"] and find_cycle({"a": [], "b": ["a"]}) == []
    deep = {str(i): [str(i + 1)] for i in range(5000)} | {"5000": []}
    assert find_cycle(deep) == []  # iterative: a long chain does not hit the recursion limit


def test_every_node_envelope_is_strictly_checked_before_anything_is_created(tmp_path: Path) -> None:
    path = write_graph(tmp_path, {"a": {"turns": bash("echo a")}, "b": {"turns": bash("echo b")}})
    (tmp_path / "a" / "envelope.yaml").write_text((tmp_path / "a" / "envelope.yaml").read_text() + "\nbudgets: 3\n")
    edit(path, {"envelope": "missing/envelope.yaml"})
    db = tmp_path / "t.db"
    with EventStore.open(db, create=True) as store, pytest.raises(EnvelopeInvalid) as e:
        start_graph(store, path)
    text = str(e.value)
    assert "$.envelope: " in text and "missing/envelope.yaml" in text  # the graph's field names the missing file
    assert str(tmp_path / "a" / "envelope.yaml") in text and "$.nodes[0].envelope" in text
    assert "$.nodes[1]" not in text  # b is valid
    with EventStore.open(db) as store:
        assert store.runs() == []


def test_strict_refuses_a_node_that_holds_more_than_the_graph_and_names_each_widening(tmp_path: Path) -> None:
    def wider(env: dict[str, Any]) -> None:
        env["environment"]["filesystem"]["write"] = ["out/**", "src/**"]
        env["budgets"]["usd"] = 50.0

    def same_place(env: dict[str, Any]) -> None:
        env["environment"]["workspace"] = "../a/../ws/"  # another spelling of the graph's workspace

    def elsewhere(env: dict[str, Any]) -> None:
        env["environment"]["workspace"] = "../elsewhere"

    (tmp_path / "elsewhere").mkdir()
    nodes = {
        "ok": {"turns": bash("echo")},
        "wide": {"turns": bash("echo"), "tweak": wider},
        "same": {"turns": bash("echo"), "tweak": same_place},
        "away": {"turns": bash("echo"), "tweak": elsewhere},
    }
    path = write_graph(tmp_path, nodes)
    db = tmp_path / "t.db"
    with EventStore.open(db, create=True) as store, pytest.raises(EnvelopeInvalid) as e:
        start_graph(store, path, strict=True)
    found = {(p.path, p.file) for p in e.value.problems}
    wide, away = str(tmp_path / "wide" / "envelope.yaml"), str(tmp_path / "away" / "envelope.yaml")
    assert ("$.nodes[1].envelope -> $.environment.filesystem.write[1]", wide) in found
    assert ("$.nodes[1].envelope -> $.budgets.usd", wide) in found
    assert ("$.nodes[3].envelope -> $.environment.workspace", away) in found
    assert not any(p.startswith(("$.nodes[0]", "$.nodes[2]")) for p, _ in found)
    with EventStore.open(db) as store:
        assert store.runs() == []  # refused: nothing created
        graph_run, warned = start_graph(store, path)  # without --strict: recorded, and said
        (started,) = store.events(graph_run)
    assert started.payload["warnings"] == [str(p) for p in warned] and len(warned) == len(found)
    assert started.payload["strict"] is False
