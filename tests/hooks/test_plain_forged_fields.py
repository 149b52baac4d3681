"""A log whose payloads were rewritten (the chain recomputed: what whoever holds the file can do) is decided by the
plain path exactly as by the full path: 22 rewrites of the payloads a cold PreToolUse reads back — a verdict
spelled otherwise, a nested extra field, wrong and coercible types (``"1"``, ``1.0``, ``true`` for an int), huge
and negative numbers, a budget as a string or a float, extra fields on kinds only the full path reads lazily.
Each rewritten log is judged twice, cold, with and without ``TETHER_HOOK_PLAIN=0``: the same reply and exit code.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_plain_path import call, forge, pre

Change = Callable[[dict[str, Any]], dict[str, Any]]


def budgets(**kv: Any) -> Change:
    return lambda p: {**p, "budgets": {**p["budgets"], **kv}}


REWRITES: list[tuple[str, Change]] = [
    ("action.decided", lambda p: {**p, "verdict": "allow"}),
    ("action.decided", lambda p: {**p, "verdict": "ALLOW "}),
    ("action.decided", lambda p: {**p, "matches": [{**m, "x": 1} for m in p.get("matches", [])]}),
    ("action.decided", lambda p: {**p, "reason": 5}),
    ("action.decided", lambda p: {**p, "deciding_rule": None}),
    ("action.proposed", lambda p: {**p, "turn": "1"}),
    ("action.proposed", lambda p: {**p, "turn": 1.0}),
    ("action.proposed", lambda p: {**p, "turn": True}),
    ("action.proposed", lambda p: {**p, "turn": 1.5}),
    ("action.proposed", lambda p: {**p, "args_hash": 7}),
    ("action.proposed", lambda p: {**p, "args": ["ls"]}),
    ("action.proposed", lambda p: {**p, "turn": 10**30}),
    ("action.proposed", lambda p: {**p, "turn": -1}),
    ("hook.received", lambda p: {**p, "detail": None}),
    ("hook.received", lambda p: {**p, "detail": "x"}),
    ("hook.received", lambda p: {**p, "event": 3}),
    ("run.started", budgets(tool_calls="5")),
    ("run.started", budgets(tool_calls=5.0)),
    ("run.started", budgets(tool_calls=True)),
    ("run.started", budgets(smuggled=1)),
    ("session.opened", lambda p: {**p, "x": 1}),
    ("tests.baseline", lambda p: {**p, "x": 1}),
]


@pytest.fixture(scope="module")
def begun(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A session with an allowed and an asked call and a prompt: every kind above is in its log once at least."""
    project = tmp_path_factory.mktemp("begun")
    (project / "README.md").write_text("x\n")
    call(project, "SessionStart")
    call(project, "PreToolUse", **pre("ls"), tool_use_id="t0")
    call(project, "PreToolUse", **pre("git push origin main"), tool_use_id="t1")
    call(project, "UserPromptSubmit", prompt="go")
    return project


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "change"), REWRITES, ids=[f"{i}-{k}" for i, (k, _) in enumerate(REWRITES)])
def test_a_rewritten_payload_is_decided_plain_as_full(begun: Path, tmp_path: Path, kind: str, change: Change) -> None:
    project = tmp_path / "p"
    shutil.copytree(begun, project)
    forge(project / ".tether" / "tether.db", kind, change)
    full = call(project, "PreToolUse", plain=False, **pre("ls -la"), tool_use_id="tf")
    fast = call(project, "PreToolUse", **pre("ls -la"), tool_use_id="tp")
    assert fast[:2] == full[:2], (fast, full)
    PLAIN.append(not fast[2])


PLAIN: list[bool] = []  # per rewrite: was it decided without pydantic (or did the plain path give way)?


@pytest.mark.slow
def test_the_plain_path_decided_some_of_them_itself() -> None:
    """Not vacuous: the copied session's kept envelope serves the plain path (when the rewrites above ran)."""
    assert not PLAIN or any(PLAIN), PLAIN
