"""The workspace's earlier hook session, and which of its agent's changes a new session must not take as the user's.

A session keeps the user's work in progress at its start (``tests.baseline``'s ``dirty`` and ``surface``) and judges
the agent's changes against it. A change the agent of an earlier session left, in a session whose stop was let
through without evidence (or that never had a stop accepted), would otherwise be that work in progress: a weakened
test or a ``# ruff: noqa`` refused three times is, in the next session of the same workspace, the user's, and its
stop accepts it. So a session's first call finds the latest earlier hook session of its workspace in the same store
(:func:`latest`): when that one did not end verified, each file its agent changed that is still changed and not
committed takes the text that earlier session began with as its baseline (:func:`carry`), and the stop names where it
comes from. The earlier session's own baseline already holds what it carried, so a chain of unverified sessions
reaches back to the last text a stop accepted or the user committed.

What counts as that agent's: the files the stop that ended it unverified found changed (``hook.stop``'s ``changed``:
its file tools' writes, the Python files touched since it began, the test files changed). A session that did not end
on such a stop (ended without an accepted stop, a spent budget, continued and never ended, or recorded by a tether
that kept no list) leaves no such list: every file whose text is not the one it began with is taken as its agent's
(fail closed). The user's own edit of such a file since does not make it the user's (the agent's lines are in it
still); committing it does: the commit is the text the next session begins on.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from tether.canonical import bytes_hash
from tether.events.kinds_baseline import SuiteBaseline
from tether.events.protocol import Store

#: Hook runs of the store looked at, newest first, for the workspace's latest: a store several workspaces share
#: (``--db``) holds others' too. Past it, no earlier session is found (docs/hooks.md says so).
MAX_LOOKED = 64
#: Runs of the store read (the newest), hook runs or not: what a session's first call pays does not grow with the
#: runs a long-lived store holds.
MAX_READ = 4 * MAX_LOOKED
#: An earlier run with more events than this is not read at a session's start: as unreadable (fail closed).
MAX_EVENTS = 200_000
#: The agents whose sessions are hook runs (their tasks read ``<agent> session <id>``).
AGENTS = ("claude-code", "codex")
_ENDS = ("session.ended", "run.continued", "hook.stop")


class Earlier(NamedTuple):
    """The latest earlier hook session of a workspace, when it did not end verified (a tuple, not a dataclass: a
    session's first call makes no class of its own that a later call does not, tests/hooks/test_cold_path.py)."""

    run_id: str
    why: str  # how it ended, as the stop names it: "which ended unverified", ...
    baseline: SuiteBaseline | None  # None: its log could not be read (``why`` says so)
    changed: frozenset[str] | None  # what its ending stop found changed; None: not known, every difference counts


def latest(store: Store, workspace: Path, contract: str | None = None) -> Earlier | None:
    """The workspace's latest earlier hook session in ``store`` when it did not end verified; None when there is
    none (among the newest :data:`MAX_LOOKED` hook runs of the newest :data:`MAX_READ` runs) or it ended verified
    or closed under ``contract`` (the new session's; None: any). A session verified under another envelope (one the
    agent started with ``TETHER_ENVELOPE`` pointing at a laxer file, in the same store) vouches for nothing here."""
    here = os.path.realpath(workspace)
    looked = 0
    for info in reversed(store.runs(newest=MAX_READ)):
        if not info.task.startswith(tuple(f"{a} session " for a in AGENTS)):
            continue
        looked += 1
        if looked > MAX_LOOKED:
            return None
        try:
            first = store.events(info.run_id, upto=0)
            started = first[0].payload if first and first[0].kind == "run.started" else {}
            ws, theirs = str(started.get("workspace") or ""), str(started.get("contract_hash") or "")
        except Exception as e:  # a row that does not parse: which workspace it is cannot be told
            return Earlier(info.run_id, f"whose log could not be read ({_short(e)})", None, None)
        if ws and os.path.realpath(ws) == here:
            return _judged(store, info.run_id, info.head_seq, contract is None or theirs == contract)
    return None


def _judged(store: Store, run_id: str, head_seq: int, same_contract: bool) -> Earlier | None:
    if head_seq >= MAX_EVENTS:
        why = f"whose log could not be read (its {head_seq + 1} events are more than the {MAX_EVENTS} read at a start)"
        return Earlier(run_id, why, None, None)
    try:
        found = store.events(run_id, kinds={SuiteBaseline.KIND, *_ENDS})
        base = next((e.data_as(SuiteBaseline) for e in found if e.kind == SuiteBaseline.KIND), None)
    except Exception as e:  # corrupt rows, a payload that is not its kind: fail closed
        return Earlier(run_id, f"whose log could not be read ({_short(e)})", None, None)
    if base is None:
        return Earlier(run_id, "whose log holds no test baseline", None, None)
    ends = [e for e in found if e.kind != SuiteBaseline.KIND]
    last = next((e for e in reversed(ends) if e.kind != "hook.stop"), None)
    if last is None or last.kind == "run.continued":
        return Earlier(run_id, "which did not end (no stop accepted)", base, None)
    how = str(last.payload.get("how"))
    if how in ("verified", "closed"):
        return None if same_contract else Earlier(run_id, f"which ended {how} under another envelope", base, None)
    if how != "unverified":
        return Earlier(run_id, f"which ended {how} (no stop accepted)", base, None)
    stops = [e for e in ends if e.kind == "hook.stop" and e.seq < last.seq]
    listed = stops[-1].payload.get("changed") if stops else None
    changed = frozenset(str(p) for p in listed) if isinstance(listed, list) else None
    return Earlier(run_id, "which ended unverified", base, changed)


def _short(e: Exception) -> str:
    return " ".join(f"{type(e).__name__}: {e}".split())[:200]


class Carried(NamedTuple):
    """A new session's baseline with an earlier session's changes taken back: ``surface`` and ``dirty`` (path ->
    blob hash) as ``tests.baseline`` names them, and the paths whose baseline is the earlier session's."""

    surface: dict[str, str]
    dirty: dict[str, str]
    paths: list[str]


def carry(
    store: Store,
    workspace: Path,
    origin: tuple[str, str] | None,
    earlier: Earlier,
    surface: dict[str, str],
    kept: dict[str, bytes],
) -> Carried:
    """``surface`` and ``kept`` (the user's work in progress found now, by :func:`.origin.dirty`) with each file
    the earlier session's agent changed, still changed and not committed (in ``kept``, or deleted and still in the
    commit ``origin`` names), given the text that session began with: its kept text, else its commit's, else none
    (new then: every line counts, stored as an empty text). An earlier session whose log could not be read gives
    the commit's text to every file of ``kept`` (none of it is taken as the user's)."""
    from .origin import texts

    dirty = {rel: store.put_blob(data) for rel, data in kept.items()}
    surface = dict(surface)
    base = earlier.baseline
    if base is None:
        for rel in kept:
            dirty.pop(rel)
        now = texts(workspace, origin[0], origin[1], sorted(set(kept) & set(surface))) if origin else {}
        for rel in set(kept) & set(surface):
            _set(surface, rel, store.put_blob(now[rel]) if rel in now else None)
        return Carried(surface, dirty, sorted(kept))
    was = _began(store, workspace, base, _candidates(earlier, base, surface, kept))
    deleted = [rel for rel, data in was.items() if data is not None and rel not in kept and _gone(workspace, rel)]
    held = texts(workspace, origin[0], origin[1], deleted) if origin else {}
    paths = []
    for rel, data in was.items():
        if rel in kept and kept[rel] != data:
            dirty[rel] = store.put_blob(data if data is not None else b"")
        elif rel not in held:
            continue  # as it began, committed since, or deleted and the deletion committed: nothing to take back
        paths.append(rel)
        if rel in base.surface or rel in surface:
            _set(surface, rel, base.surface.get(rel))
    return Carried(surface, dirty, sorted(paths))


def _candidates(earlier: Earlier, base: SuiteBaseline, surface: dict[str, str], kept: dict[str, bytes]) -> set[str]:
    if earlier.changed is not None:
        return set(earlier.changed)
    return set(kept) | set(base.dirty) | set(base.surface) | set(surface)


def _began(store: Store, workspace: Path, base: SuiteBaseline, paths: set[str]) -> dict[str, bytes | None]:
    """Each path's text when the earlier session began (None: it had none); a kept text that is not its hash is
    the empty text (every line counts)."""
    from .origin import texts

    out: dict[str, bytes | None] = {}
    rest = []
    for rel in sorted(paths):
        h = base.dirty.get(rel)
        if h is None:
            rest.append(rel)
            continue
        try:
            data = store.get_blob(h)
        except Exception:
            data = b""
        out[rel] = data if bytes_hash(data) == h else b""
    found = texts(workspace, base.commit, base.commit_dir, rest) if base.commit else {}
    out.update((rel, found.get(rel)) for rel in rest)
    return out


def _gone(workspace: Path, rel: str) -> bool:
    return not os.path.lexists(workspace / rel)


def _set(surface: dict[str, str], rel: str, h: str | None) -> None:
    if h is None:
        surface.pop(rel, None)
    else:
        surface[rel] = h
