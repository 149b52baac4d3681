"""A kept envelope (guard/envcache.py) no store key vouches for is a pickle whoever may write the folder beside the
database can forge, digest and all. Its read is bounded as a fold checkpoint's is (guard/cachefile.py ``tried``):
it is first loaded, and its state checked against its dump, in a forked child with a memory limit and a deadline.
A tuple nested deep enough that hashing it kills the interpreter, a tuple graph whose hash never ends, a graph of
shared lists the dump comparison would walk 2**levels times: each is a miss, and the envelope is validated."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from test_checkpoint_bounds import in_a_process_of_its_own, tuple_graph_key
from test_kept_envelope import COMMANDS, SOURCE, cold, kept_files, project

import tether.guard.envcache as envcache


def list_graph(kept: Path, levels: int) -> bytes:
    """The kept body with its envelope's ``tools`` a graph of shared lists (``x = [y, y]``, ``y = [z, z]``, …): a
    few bytes a level through the memo, it loads at once, but reading the envelope's state (to compare it with its
    dump) walks 2**levels lists."""
    import pickle

    body = kept.read_bytes()[len(envcache.MAGIC) :].partition(b"\n")[2]
    obj = envcache._unpickle(body)
    graph: list = []
    for _ in range(levels):
        graph = [graph, graph]
    vars(obj["envelope"])["tools"] = graph
    return pickle.dumps(obj, protocol=5)


def forge(path: Path, body: bytes) -> None:
    head = json.loads(path.read_bytes()[len(envcache.MAGIC) :].partition(b"\n")[0])
    forged = {**head, "body_sha256": hashlib.sha256(body).hexdigest()}
    path.write_bytes(envcache.MAGIC + json.dumps(forged).encode() + b"\n" + body)


@pytest.fixture(autouse=True)
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(envcache, "TRIAL_S", 3.0)


@pytest.mark.parametrize("graph", ["tuple-graph-hash", "list-graph-walk"])
def test_a_body_that_would_never_end_is_a_miss(tmp_path: Path, graph: str) -> None:
    hook = project(tmp_path, SOURCE)
    assert cold(hook, "ls", "t0")[0] == "allow"
    [path] = kept_files(hook)
    forge(path, tuple_graph_key(80) if graph == "tuple-graph-hash" else list_graph(path, 80))
    assert cold(hook, "echo x > a.txt", "t1")[0] == "deny", "validated again, and decided as ever"


def test_the_kept_envelope_is_still_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tether.hooks.session as hook_session

    got: list[envcache.Validated] = []
    real = hook_session.kept
    monkeypatch.setattr(hook_session, "kept", lambda *a, **k: got.append(real(*a, **k)) or got[-1])
    hook = project(tmp_path, SOURCE)
    answers = [cold(hook, c, f"t{i}")[0] for i, c in enumerate(COMMANDS)]
    assert answers[1] == "deny" and got[-1].kept, "read back, having passed its trial"


CRASH = """
import sys
from pathlib import Path
sys.path[:0] = [sys.argv[1], str(Path(sys.argv[1]).parent)]  # the hooks' kits, and the tests'
from test_kept_envelope import SOURCE, cold, kept_files, project
from test_kept_envelope_bounds import forge
from test_checkpoint_bounds import deep_tuple_key
hook = project(Path(sys.argv[2]), SOURCE)
cold(hook, "ls", "t0")
[path] = kept_files(hook)
forge(path, deep_tuple_key(2_000_000))
print(cold(hook, "echo x > a.txt", "t1")[0])
"""


def test_a_tuple_nested_deep_enough_to_crash_the_interpreter_is_a_miss(tmp_path: Path) -> None:
    """In a process of its own: without the trial, this one kills the interpreter (SIGSEGV)."""
    assert in_a_process_of_its_own(CRASH, tmp_path) == "deny"
