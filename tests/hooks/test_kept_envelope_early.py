"""The kept envelope's trial starts before the session's store is opened (guard/envcache.py ``begin``, hooks/session.py
``kept_early``): the file is read and its body's child forked first, and the verdict is asked for only when the
envelope is needed. Attacks: a file swapped after the early read (what is unpickled is what was tried, and the new
file is neither read nor removed), a body whose trial fails (a miss, and the file removed so the next call does not
wait for it again, though not by a plain process), a session begun in another workspace (the early trial closed
unused, its child reaped), a call that fails with the child running (killed and reaped), a process that holds the
session's guard already (the daemon: nothing forked)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hookkit import Hook
from test_checkpoint_bounds import tuple_graph_key
from test_checkpoint_trial import children
from test_kept_envelope import SOURCE, cold, folder, kept_files, project

import tether.guard.envcache as envcache
import tether.hooks.session as hook_session
from tether import plain
from tether.control import fold as control_fold
from tether.events.store import EventStore
from tether.guard import cachefile


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(envcache, "TRIAL_S", 3.0)
    yield
    hook_session._CACHE.clear()
    control_fold.clear()


def watch(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The order of the kept envelope's trials (forked, verdict asked), the store's opening and the log's audit."""
    seen: list[str] = []
    real_init, real_verdict = cachefile.Trial.__init__, cachefile.Trial.verdict
    real_open, real_verify = EventStore.open.__func__, EventStore.verify_run  # type: ignore[attr-defined]

    def init(self: cachefile.Trial, *a: object, **k: object) -> None:
        real_init(self, *a, **k)  # type: ignore[arg-type]
        if getattr(a[0], "__module__", "") == envcache.__name__:
            seen.append("fork")
            self.envelope = True  # type: ignore[attr-defined]

    def verdict(self: cachefile.Trial) -> bool:
        if getattr(self, "envelope", False):
            seen.append("verdict")
        return real_verdict(self)

    def opened(cls: type[EventStore], *a: object, **k: object) -> EventStore:
        seen.append("store")
        return real_open(cls, *a, **k)  # type: ignore[no-any-return]

    def verify(self: EventStore, *a: object, **k: object) -> object:
        seen.append("audit")
        return real_verify(self, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(cachefile.Trial, "__init__", init)
    monkeypatch.setattr(cachefile.Trial, "verdict", verdict)
    monkeypatch.setattr(EventStore, "open", classmethod(opened))
    monkeypatch.setattr(EventStore, "verify_run", verify)
    return seen


def forge(path: Path, body: bytes) -> None:
    """``body`` as the kept file's, under its own header with the digest made right (what a forger can do)."""
    header = json.loads(path.read_bytes()[len(envcache.MAGIC) :].partition(b"\n")[0])
    header["body_sha256"] = hashlib.sha256(body).hexdigest()
    path.write_bytes(envcache.MAGIC + json.dumps(header).encode() + b"\n" + body)


def key_for(source: Path) -> dict[str, object]:
    return envcache.key_of("yaml", hashlib.sha256(source.read_bytes()).hexdigest())


@pytest.mark.parametrize("envelope", [None, SOURCE], ids=["built-in", "file"])
def test_the_trial_is_forked_before_the_store_is_opened_and_its_verdict_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, envelope: str | None
) -> None:
    hook = project(tmp_path, envelope)
    assert cold(hook, "ls", "t0")[0] == "allow"
    kids = children()
    seen = watch(monkeypatch)
    assert cold(hook, "rm -rf /", "t1")[0] == "deny"
    assert seen[:3] == ["fork", "store", "verdict"], seen  # one trial: no second fork when the envelope is read
    assert seen.count("fork") == 1 and "audit" in seen
    assert children() <= kids, "a trial's child left behind"


def test_what_is_unpickled_is_what_was_read_and_tried(tmp_path: Path) -> None:
    """A file swapped after the early read: the body read then is the one tried and loaded; the one swapped in is
    neither read nor, when the early body fails its trial, removed in its place."""
    hook = project(tmp_path, SOURCE)
    cold(hook, "ls", "t0")
    [path] = kept_files(hook)
    good = path.read_bytes()
    source = (tmp_path / ".tether" / "envelope.yaml").resolve()
    early = envcache.begin(folder(hook), source, signed=False)
    try:
        forge(path, tuple_graph_key(80))  # swapped for a body whose read never ends
        v = envcache.load(folder(hook), source, key_for(source), None, early)
    finally:
        assert early is not None
        early.close()
    assert v is not None and v.kept, "the early bytes, tried well, are the ones read"
    path.write_bytes(good)
    forge(path, tuple_graph_key(80))
    early = envcache.begin(folder(hook), source, signed=False)
    try:
        path.write_bytes(good)  # a good file renamed in after the early read of the hostile one
        swapped_in = path.read_bytes()
        assert envcache.load(folder(hook), source, key_for(source), None, early) is None
    finally:
        assert early is not None
        early.close()
    assert path.read_bytes() == swapped_in, "the file swapped in is not removed for the one that failed"


def test_a_kept_file_that_fails_its_trial_is_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its miss validates the envelope, which is then kept again in its place; when it is not (here: nothing is
    written), the file is gone all the same, and the next call forks no trial for it."""
    hook = project(tmp_path, None)
    cold(hook, "ls", "t0")
    [path] = kept_files(hook)
    forge(path, tuple_graph_key(80))
    monkeypatch.setattr(envcache, "save", lambda *a, **k: None)
    seen = watch(monkeypatch)
    assert cold(hook, "rm -rf /", "t1")[0] == "deny"
    assert seen.count("fork") == 1 and not path.exists(), seen
    seen.clear()
    assert cold(hook, "ls", "t2")[0] == "allow"
    assert "fork" not in seen


def test_a_plain_process_does_not_remove_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A plain process reads the dump the header holds, never the body (guard/envcache.py ``_from_dump``): it
    neither tries nor removes the body; the full path tries it, and removes it."""
    hook = project(tmp_path, None)
    cold(hook, "ls", "t0")
    [path] = kept_files(hook)
    forge(path, tuple_graph_key(80))
    key = envcache.key_of(envcache.BUILT_IN, "")
    monkeypatch.setattr(plain, "_plain", True)
    got = envcache.load(folder(hook), None, key, None)
    assert got is not None and got.kept
    assert path.exists()
    monkeypatch.setattr(plain, "_plain", False)
    assert envcache.load(folder(hook), None, key, None) is None
    assert not path.exists()


def test_a_session_begun_in_another_workspace_closes_the_early_trial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run's recorded workspace is not the project the call names: the early trial (of the project's envelope,
    kept beside the same store by another session) is closed unused and its child reaped; the session is governed
    by the envelope of the workspace it began in."""
    began = project(tmp_path / "began", SOURCE)
    assert cold(began, "echo x > a.txt", "t0")[0] == "deny"  # the file's envelope: write only src/**
    other = project(tmp_path / "other", SOURCE.replace('write: ["src/**"]', 'write: ["**"]'))
    elsewhere = Hook(other.workspace)
    elsewhere.request = {**began.request, "project": str(other.workspace)}  # began's store, the other project
    hook_session._CACHE.clear()
    second = elsewhere("PreToolUse", session_id="another", tool_input={"command": "echo x > a.txt"}, tool_use_id="o0")
    assert json.loads(second.stdout)["hookSpecificOutput"]["permissionDecision"] == "allow"
    assert len(kept_files(began)) == 2, "both envelopes kept beside the one store"
    kids = children()
    seen = watch(monkeypatch)
    assert cold(elsewhere, "echo x > a.txt", "t1")[0] == "deny", "governed by the envelope the run began under"
    assert seen.count("fork") == 2 and seen.count("verdict") == 1, seen  # the early one closed without a verdict
    assert children() <= kids


def test_a_call_that_fails_with_the_child_running_reaps_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hook = project(tmp_path, None)
    cold(hook, "ls", "t0")
    [path] = kept_files(hook)
    forge(path, tuple_graph_key(80))
    monkeypatch.setattr(envcache, "TRIAL_S", 600.0)  # were the child waited for, the test would hang
    kids = children()
    seen = watch(monkeypatch)

    def broken(*a: object, **k: object) -> object:
        raise OSError("the store cannot be opened")

    monkeypatch.setattr(hook_session, "_store", broken)
    hook_session._CACHE.clear()
    reply = hook("PreToolUse", tool_input={"command": "ls"}, tool_use_id="t1")
    assert reply.exit == 2 and seen == ["fork"], (reply, seen)
    assert children() <= kids, "the early trial's child killed and reaped"


def test_a_process_holding_the_guard_forks_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hook = project(tmp_path, None)
    cold(hook, "ls", "t0")
    hook.bash("ls", "t1")  # this process holds the session's guard now (as the daemon does)
    seen = watch(monkeypatch)
    assert hook.bash("rm -rf /", "t2")[0] == "deny"
    assert "fork" not in seen and "store" not in seen


def test_the_state_checked_in_the_trial_is_not_walked_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The trial's child compares the envelope's state with its dump; a body that passes is not compared again in
    this process (the same bytes read the same), and one whose state is not its dump fails the trial: a miss."""
    hook = project(tmp_path, None)
    cold(hook, "ls", "t0")
    [path] = kept_files(hook)
    key = envcache.key_of(envcache.BUILT_IN, "")
    walked: list[object] = []
    real = envcache._state
    monkeypatch.setattr(envcache, "_state", lambda v: walked.append(v) or real(v))
    v = envcache.load(folder(hook), None, key, None)
    assert v is not None and v.kept and walked == [], "compared in the child only"
    import pickle

    body = path.read_bytes()[len(envcache.MAGIC) :].partition(b"\n")[2]
    obj = envcache._unpickle(body)
    vars(obj["envelope"])["tools"] = []  # a model widened (here: narrowed) beside an unchanged dump
    forge(path, pickle.dumps(obj, protocol=5))
    assert envcache.load(folder(hook), None, key, None) is None
    assert not path.exists(), "failed its trial: removed"


def test_an_unreadable_project_envelope_fails_only_a_session_that_reads_it(tmp_path: Path) -> None:
    """The early look reads the project's envelope; a session begun in another workspace never did, and still
    does not fail on it (too large here); a session of the project itself is refused, as before."""
    began = project(tmp_path / "began", SOURCE)
    assert cold(began, "echo x > a.txt", "t0")[0] == "deny"
    other = project(tmp_path / "other", "x: " + "y" * (2 << 20))  # over the envelope's size limit
    elsewhere = Hook(other.workspace)
    elsewhere.request = {**began.request, "project": str(other.workspace)}
    assert cold(elsewhere, "echo x > a.txt", "t1")[0] == "deny", "governed by the envelope it began under"
    hook_session._CACHE.clear()
    reply = elsewhere("PreToolUse", session_id="new", tool_input={"command": "ls"}, tool_use_id="n0")
    assert reply.exit == 2 and "bytes" in reply.stderr, reply
