"""The gate's part of a fold checkpoint as JSON (guard/gatepart.py, checkpoint format 8: a head, then the calls): read
back as the run state it was, the same objects shared; read by a plain PreToolUse with no trial forked; and hostile
JSON, which an agent that can write the checkpoint's folder could put there without a store key (the digest
recomputed), is a miss and never a crash: the call is decided as ever. (A plain PreToolUse reads the calls' text only
when the part of them the head names cannot answer: tests/guard/test_partial.py.)"""

from __future__ import annotations

import copy
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hookkit import Hook, payload
from test_checkpoint_parts import Gate, checkpoint_file, cold, full_call, in_plain, split, write
from test_checkpoint_parts import hook as hook  # the fixture: a session of 12 commands, a checkpoint every 8 events
from test_plain_checkpoint import seeded, shape

from tether.guard import checkpoint as ck
from tether.guard import gatepart
from tether.guard import log as guard_log
from tether.state import Action, RunState, Usage
from tether.status import ActionStatus, ClaimStatus, ControlState, RunStatus

#: One PreToolUse decided in a plain process as a cold hook call decides it: its answer, whether its guard was
#: restored from the checkpoint, and how many trials it forked.
PLAIN = """
import json, sys
from tether import plain
from tether.hooks import entry
assert plain.choose()
request, data, _ = json.load(sys.stdin)
entry.import_deciding_code(gate=True)
from tether.guard import cachefile
forks = []
real = cachefile.Trial.__init__
def counted(self, *args, **kwargs):
    forks.append(1)
    real(self, *args, **kwargs)
cachefile.Trial.__init__ = counted
from tether.hooks.answer import answer
import tether.hooks.session as hook_session
out = answer(request, data)
[guard] = [v for k, v in hook_session._CACHE.items() if k[0] == "guard"]
print(json.dumps({"answer": json.loads(out.stdout)["hookSpecificOutput"]["permissionDecision"],
                  "restored": type(guard.events).__name__ == "Log", "forks": len(forks),
                  "unpickler": "_pickle" in sys.modules}))
"""


def plain_pre(hook: Hook, i: int, command: str = "ls") -> dict[str, Any]:
    data = payload("claude-code.PreToolUse", hook.workspace, tool_input={"command": command}, tool_use_id=f"toolu_p{i}")
    return in_plain(hook, data, hook.workspace / "none", PLAIN)


def comparable(state: RunState) -> RunState:
    """``state`` but for the two lookups its filing reads and nothing iterates (``RunState._file``): ``_filed`` (a
    call's key by its id) in the order of its ids, and ``_keys`` (one key tuple each, kept for keys left empty too)
    left out. Read back, they are made from ``calls_by``."""
    made = copy.copy(state)
    made._filed, made._keys = dict(sorted(state._filed.items())), {}
    return made


#: The keys of the calls' JSON, after the head's newline (gatepart.encode); the head holds the rest.
CALLS = ("calls", "actions", "live", "same", "by")


def joined(text: bytes) -> dict[str, Any]:
    """The gate's part as one JSON object: its head's keys and its calls'."""
    head, calls = text.split(b"\n", 1)
    return {**json.loads(head), **json.loads(calls)}


def parted(doc: Any) -> bytes:
    """:func:`joined` undone: the head's keys, a newline, the calls' (a document that is no object: as it is)."""
    if type(doc) is not dict:
        return json.dumps(doc).encode()
    calls = {k: doc[k] for k in CALLS if k in doc}
    head = {k: v for k, v in doc.items() if k not in CALLS}
    return json.dumps(head).encode() + b"\n" + json.dumps(calls).encode()


def round_trip(state: RunState, known: Any, user: Any) -> tuple[gatepart.Gate, dict[str, Any]]:
    encoded = gatepart.encode(state, known, user, 3, 2)
    assert encoded is not None
    text, left = encoded
    got = gatepart.decode(text)
    for name, value in left.items():
        if name in ("known", "user"):
            setattr(got, name, value)
        else:
            setattr(got.state, name, value)
    return got, left


def test_a_sessions_gate_part_reads_back_as_the_state_it_was(tmp_path: Path) -> None:
    """Every kind of call of a session (test_plain_path's), the same command twice (one ``same_calls`` entry of two
    calls), a call id proposed again: read back from JSON, the run state, the provenance index and the counts equal the
    ones written, and the objects shared are shared alike (a call in ``actions`` is the one in ``same_calls``,
    ``calls_by`` and ``_live``)."""
    hook = seeded(tmp_path / "p", 6, rich=True)
    hook.bash("grep -n x0 README.md", "toolu_again")  # the same command as toolu_0: two calls under one key
    hook("PreToolUse", tool_name="Bash", tool_input={"command": "ls -la"}, tool_use_id="toolu_twice")
    hook("PreToolUse", tool_name="Bash", tool_input={"command": "ls -l"}, tool_use_id="toolu_twice")
    [guard] = hook.resident().values()
    state = guard.state
    assert any(len(calls) > 1 for calls in state.same_calls.values())
    assert state._live, "a call still in flight"
    known, user, _ = guard.indexed().kept()
    got, left = round_trip(state, known, user)
    assert left == {}, "all of it JSON"
    assert (got.since, got.turns) == (3, 2)
    assert shape([comparable(got.state), got.known, got.user]) == shape([comparable(state), known, user])
    assert got.state == state


def test_what_json_cannot_hold_is_left_to_be_pickled_and_the_rest_stays_json(tmp_path: Path) -> None:
    """A value in a tuple, a payload model, a key that is not a string: each such field is handed back to be pickled
    beside the JSON (tried before it is loaded), and only that field: the calls stay JSON."""
    hook = seeded(tmp_path / "p", 3)
    [guard] = hook.resident().values()
    state = guard.state
    state.unknowns = [("a tuple", 1)]
    state.no_op_holds = {1: True}  # type: ignore[dict-item]
    state.raised = {"tokens": 10.0}
    got, left = round_trip(state, {}, set())
    assert set(left) == {"unknowns", "no_op_holds"}
    assert shape(comparable(got.state)) == shape(comparable(state))
    assert got.state.raised == {"tokens": 10.0} and type(got.state.unknowns[0]) is tuple


def test_every_field_of_a_type_json_does_not_hold_reads_back_as_its_type(tmp_path: Path) -> None:
    """The fields with a codec of their own (``gatepart._CODECS``), each away from its default, as tether's own loop
    sets them (a hook session leaves claims and the settled calls empty): read back equal and of their types, as
    JSON, nothing left to be pickled; one not of its usual type (a settled call id that is not a string) is left."""
    hook = seeded(tmp_path / "p", 3)
    [guard] = hook.resident().values()
    state = guard.state
    state.status, state.control = RunStatus.WAITING_APPROVAL, ControlState.CAUTIOUS
    state.used = Usage(turns=3, tokens=1200, usd=0.25, tool_calls=7, wall_s=12.5)
    state.settled = {"toolu_a", "toolu_b"}
    state.claims = {"finish_1": ClaimStatus.REFUSED}
    got, left = round_trip(state, {}, set())
    assert left == {}
    for name in ("status", "control", "used", "_active_since", "settled", "claims"):
        assert getattr(got.state, name) == getattr(state, name), name
        assert type(getattr(got.state, name)) is type(getattr(state, name)), name
    assert type(got.state.used.usd) is float and type(got.state.used.tokens) is int
    assert all(type(v) is ClaimStatus for v in got.state.claims.values())
    state.settled = {"toolu_a", 7}  # type: ignore[arg-type]
    assert set(round_trip(state, {}, set())[1]) == {"settled"}


def test_calls_json_cannot_hold_leave_the_whole_gate_part_pickled(tmp_path: Path) -> None:
    """A call whose arguments hold a tuple, or an index that is not what the fold keeps (a call filed under another
    id): no JSON part is written (the whole gate's part is pickled, and tried, as before)."""
    hook = seeded(tmp_path / "p", 3)
    [guard] = hook.resident().values()
    state = guard.state
    first = next(iter(state.actions.values()))
    first.args = {"command": ("a", "tuple")}
    assert gatepart.encode(state, {}, set(), -1, 0) is None
    first.args = {"command": "ls"}
    assert gatepart.encode(state, {}, set(), -1, 0) is not None
    state._live["another id"] = first
    assert gatepart.encode(state, {}, set(), -1, 0) is None


def test_an_actions_row_is_its_constructors_arguments() -> None:
    """A row is ``Action(*row)``: the slots are the constructor's parameters, in its order."""
    row = [f"v{i}" for i in range(len(gatepart.FIELDS))]
    made = Action(*row)  # type: ignore[arg-type]
    assert [getattr(made, f) for f in gatepart.FIELDS] == row


def written(tmp_path: Path) -> tuple[RunState, dict[str, Any]]:
    """A session's run state (test_plain_path's kinds of call, the same command twice) and its gate part's JSON."""
    hook = seeded(tmp_path / "p", 6, rich=True)
    hook.bash("grep -n x0 README.md", "toolu_again")
    [guard] = hook.resident().values()
    known, user, _ = guard.indexed().kept()
    encoded = gatepart.encode(guard.state, known, user, 3, 2)
    assert encoded is not None
    return guard.state, joined(encoded[0])


def test_the_calls_are_written_by_column_and_only_immutable_values_run(tmp_path: Path) -> None:
    """The calls by column: a status, a verdict or an empty error as runs, never a call's arguments, result or taints,
    which each call reads back as its own (a dict shared between calls would change in all when one changed)."""
    state, doc = written(tmp_path)
    named = dict(zip(gatepart.FIELDS, doc["calls"], strict=True))
    n = len(named["call_id"])
    assert n == len({id(a) for a in state.actions.values()} | {id(a) for a in state._live.values()}) > 2
    assert type(named["status"]) is dict and sum(named["status"]["n"]) == n
    assert all(type(named[f]) is list for f in ("call_id", "args", "result", "taints"))
    got = gatepart.decode(parted(doc))
    calls = list(got.state.actions.values())
    for field in ("args", "result"):
        assert len({id(getattr(a, field)) for a in calls}) == len(calls), field
    assert [a.status for a in calls] == [a.status for a in state.actions.values()]


@pytest.mark.parametrize(
    ("edit", "refused"),
    [
        (lambda d: column(d, "result", {"v": [{}], "n": [calls(d)]}), "repeating a value calls may not share"),
        (lambda d: column(d, "status", {"v": ["completed"], "n": [calls(d) + 1]}), "do not count the calls"),
        (lambda d: column(d, "error", {"v": ["", ""], "n": [calls(d) + 1, -1]}), "do not count the calls"),
        (lambda d: column(d, "error", {"v": ["", ""], "n": [calls(d)]}), "do not pair"),
        (lambda d: column(d, "error", {"v": [""], "n": [calls(d)], "x": 1}), "neither values nor runs"),
        (lambda d: column(d, "error", [""] * (calls(d) + 1)), "of other lengths"),
        (lambda d: column(d, "call_id", [""] * 100_000), "more calls than its bytes hold"),
        (lambda d: d["calls"].pop(), "not a column a field"),
    ],
)
def test_each_malformed_column_is_refused_by_its_own_check(
    tmp_path: Path, edit: Callable[[dict[str, Any]], Any], refused: str
) -> None:
    """Runs that would share a dict, count more or fewer calls than the ids, or a part naming more calls than its bytes
    can hold (a short text expanding to millions of calls): each refused, before any call is made."""
    _, doc = written(tmp_path)
    edit(doc)
    with pytest.raises(ValueError, match=refused):
        gatepart.decode(parted(doc))


def test_a_plain_pre_tool_use_reads_the_json_and_forks_no_trial(hook: Hook) -> None:
    """Late in a session a plain PreToolUse restores its guard from the checkpoint's JSON: no trial forked, no
    unpickler imported. With a field pickled beside the JSON it forks the trial of that part, and restores as well."""
    assert plain_pre(hook, 0) == {"answer": "allow", "restored": True, "forks": 0, "unpickler": False}
    path = checkpoint_file(hook)
    header, gate, fold = split(path)
    a, _ = gate.sizes
    doc = joined(bytes(gate[:a]))
    left = ck._pickled({"unknowns": [("a tuple", 1)]})
    with_left = Gate(gate[:a] + left)
    with_left.sizes = [a, len(left)]
    write(path, header, with_left, fold)
    assert "unknowns" not in doc["fields"]
    assert plain_pre(hook, 1) == {"answer": "allow", "restored": True, "forks": 1, "unpickler": True}


@pytest.fixture
def with_part(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Hook]:
    """A session of 12 commands with their receipts, checkpointed every 8 events, whose checkpoint's head names a part
    of its calls (the 2 latest: guard/partial.py) for a plain PreToolUse to restore."""
    monkeypatch.setattr(guard_log, "EVERY", 8)
    monkeypatch.setattr(gatepart, "RECENT", 2)
    cold()
    yield seeded(tmp_path / "p", 12)
    cold()


def hostile(edit: Callable[[dict[str, Any]], Any]) -> Callable[[bytes], bytes]:
    def made(text: bytes) -> bytes:
        doc = joined(text)
        return parted(edit(doc) or doc)

    return made


def head_of(text: bytes) -> Any:
    """The head a gate part's text begins with, as read (None when it does not read as one)."""
    try:
        return json.loads(text.split(b"\n", 1)[0].decode("ascii")) if b"\n" in text else None
    except (ValueError, RecursionError):
        return None


def column(doc: dict[str, Any], field: str, value: Any) -> None:
    """The calls' column of ``field`` set to ``value``."""
    doc["calls"][gatepart.FIELDS.index(field)] = value


def calls(doc: dict[str, Any]) -> int:
    return len(doc["calls"][0])


def deep(doc: dict[str, Any]) -> None:
    doc["fields"]["task"] = json.loads("[" * 500 + "]" * 500)  # within json's own depth: a value, no harm


@pytest.mark.parametrize(
    "forge",
    [
        pytest.param(lambda t: t.replace(b"{", b"[" * 200_000, 1), id="nested-200000-deep"),
        pytest.param(lambda t: b'{"calls":' + b"[" * 100_000 + b"]" * 100_000 + t[1:], id="calls-nested-100000-deep"),
        pytest.param(lambda t: t.replace(b"\n{", b"\n" + b"[" * 200_000, 1), id="the-calls-text-nested-200000-deep"),
        pytest.param(hostile(lambda d: d["fields"].update(apply=1)), id="a-method-as-a-field"),
        pytest.param(hostile(lambda d: d["fields"].update(__class__="x")), id="a-dunder-as-a-field"),
        pytest.param(hostile(lambda d: d["fields"].update(calls_by={})), id="an-index-as-a-field"),
        pytest.param(hostile(lambda d: column(d, "status", ["no-such-status"] * calls(d))), id="bogus-status"),
        pytest.param(hostile(lambda d: d["calls"][0].pop()), id="a-column-too-short"),
        pytest.param(hostile(lambda d: d["calls"].pop()), id="a-column-missing"),
        pytest.param(
            hostile(lambda d: column(d, "status", {"v": ["completed"], "n": [calls(d) + 1]})), id="a-run-too-long"
        ),
        pytest.param(hostile(lambda d: column(d, "result", {"v": [{}], "n": [calls(d)]})), id="a-dict-shared-in-a-run"),
        pytest.param(
            hostile(lambda d: column(d, "error", {"v": ["", ""], "n": [calls(d) + 1, -1]})), id="a-negative-count"
        ),
        pytest.param(hostile(lambda d: column(d, "error", {"v": [""], "n": [calls(d)], "x": 1})), id="a-run-and-a-key"),
        pytest.param(hostile(lambda d: column(d, "error", "")), id="a-column-of-neither"),
        pytest.param(hostile(lambda d: column(d, "call_id", [""] * 200_000)), id="more-calls-than-its-bytes"),
        pytest.param(hostile(lambda d: d["actions"].append(10**6)), id="an-index-out-of-range"),
        pytest.param(hostile(lambda d: d["by"].append(["no-such-status", "bash", []])), id="a-bucket-of-no-status"),
        pytest.param(hostile(lambda d: d["same"].append([])), id="a-same-group-of-no-call"),
        pytest.param(hostile(lambda d: d["same"].append([10**6])), id="a-same-call-out-of-range"),
        pytest.param(hostile(lambda d: d["same"].append([0, 10**6])), id="a-same-group-of-two-one-out-of-range"),
        pytest.param(hostile(lambda d: d["same"].append({"0": 0})), id="a-same-group-not-a-list"),
        pytest.param(hostile(lambda d: d["same"].append("0")), id="a-same-group-a-string"),
        pytest.param(hostile(lambda d: d.update(same={"a": [0]})), id="the-same-groups-an-object"),
        pytest.param(hostile(lambda d: d.update(since="7")), id="since-a-string"),
        pytest.param(hostile(lambda d: d.pop("calls")), id="no-calls"),
        pytest.param(hostile(lambda d: [1, 2]), id="not-an-object"),
        pytest.param(lambda t: t.replace(b'"', b'"\xff', 1), id="not-utf-8"),
        pytest.param(lambda t: t.decode().encode("utf-16"), id="utf-16-not-what-the-writer-writes"),
        pytest.param(lambda t: t[: len(t) // 2], id="torn"),
        pytest.param(lambda t: t + b" [", id="trailing-garbage"),
    ],
)
def test_a_hostile_json_part_is_a_miss_and_the_call_decides_as_ever(
    with_part: Hook, forge: Callable[[bytes], bytes]
) -> None:
    """A miss on the full path; a plain PreToolUse restores the part of the calls its head names when the head is the
    one written (what was forged is the calls' text, which it searches and does not parse), and when that part cannot
    answer, the whole state it makes is the log's (the calls' text a miss there too): the call decided as ever."""
    hook = with_part
    path = checkpoint_file(hook)
    header, gate, fold = split(path)
    a, b = gate.sizes
    text = forge(bytes(gate[:a]))
    head = head_of(bytes(gate[:a]))
    assert head["part"] is not None
    head_kept = head_of(text) == head
    forged = Gate(text + gate[a:])
    forged.sizes = [len(text), b]
    write(path, header, forged, fold)
    assert plain_pre(hook, 0) == {"answer": "allow", "restored": head_kept, "forks": 0, "unpickler": False}
    write(path, header, forged, fold)
    assert plain_pre(hook, 1, "grep -n x0 README.md")["answer"] == "allow"  # the session's first command again
    write(path, header, forged, fold)
    assert not full_call(hook, 0)


def test_a_value_nested_within_jsons_depth_is_read_as_it_is(hook: Hook) -> None:
    """Nesting json reads (under the recursion limit) is a value like any other: restored, and the call decided."""
    path = checkpoint_file(hook)
    header, gate, fold = split(path)
    a, b = gate.sizes
    text = hostile(deep)(bytes(gate[:a]))
    forged = Gate(text + gate[a:])
    forged.sizes = [len(text), b]
    write(path, header, forged, fold)
    assert plain_pre(hook, 0)["restored"]


def test_a_json_part_too_large_to_read_untried_is_tried_first(hook: Hook, monkeypatch: pytest.MonkeyPatch) -> None:
    """Over ``gatepart.UNTRIED_BYTES`` (what an unchecked parse may build is a multiple of its size) the JSON is read
    in the trial's child first; under it, no child."""
    assert gatepart.UNTRIED_BYTES * 23 <= ck.TRIAL_FLOOR, "an untried parse may build no more than the trial may map"
    path = checkpoint_file(hook)
    run_id = next(iter(hook.resident().values())).run_id
    monkeypatch.setattr(ck, "wants_fold", lambda: False)  # as a plain PreToolUse: the fold's part not read
    for limit, tried in ((gatepart.UNTRIED_BYTES, False), (16, True)):
        monkeypatch.setattr(gatepart, "UNTRIED_BYTES", limit)
        pending = ck.begin(path.parent, run_id, signed=False)
        try:
            assert (pending.trial is not None, pending.untried) == (tried, not tried)
            assert pending.tried()
        finally:
            pending.close()


def test_a_state_refolded_and_one_read_back_decide_alike_after_more_events(tmp_path: Path) -> None:
    """The state read back takes the next events as the one it was written from: the same state after each."""
    hook = seeded(tmp_path / "p", 4)
    [guard] = hook.resident().values()
    got, _ = round_trip(guard.state, {}, set())
    restored = got.state
    for i in range(3):
        hook.bash(f"grep -n y{i} README.md", f"toolu_more{i}")
    [guard] = hook.resident().values()
    events = guard.store.events(guard.run_id, after=restored.last_seq)
    for e in events:
        restored.apply(e)
    assert shape(comparable(restored)) == shape(comparable(guard.state))
    assert restored.calls_in([ActionStatus.COMPLETED]) == guard.state.calls_in([ActionStatus.COMPLETED])


def test_arguments_nested_past_what_a_write_can_walk_leave_no_checkpoint_and_the_call_answered(tmp_path: Path) -> None:
    """A call's arguments nested near json's own depth: the checkpoint's writer (its exactness walk, the encoder, the
    pickler) meets the recursion limit: it writes none, and raises nothing into the call that writes it."""
    hook = seeded(tmp_path / "p", 3)
    [guard] = hook.resident().values()
    nested: Any = "leaf"
    for _ in range(sys.getrecursionlimit()):
        nested = [nested]
    next(iter(guard.state.actions.values())).args = {"command": nested}
    with pytest.raises(RecursionError):
        gatepart.encode(guard.state, {}, set(), -1, 0)
    assert ck._body(guard) is None
