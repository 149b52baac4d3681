"""The test-integrity checks of a hook session: what the agent did to the tests since the session began.

tether's own loop takes its test baseline before the first model call; a Claude Code or Codex session has no
such moment, so the baseline is taken when the session's run is created (its first hook call, usually
SessionStart): the bytes of the test surface (``tether.verify.testsurface``: test files, ``conftest.py``,
files under ``tests/``, pytest configuration), stored as blobs and named in a ``tests.baseline`` event. It
costs one walk of the project per session, never one per tool call. No test run is part of it (a hook must
answer in milliseconds), so the checks that need the suite's per-test report — a test that disappeared from
the run, a weakened assertion judged by its shape — are not made here; any byte change to the test surface
is, whichever tool made it.

At a stop, the same findings as at a completion claim (``tether.review.test_integrity``):

* ``test_changed`` — a test file or the pytest configuration added, modified or deleted. It blocks the stop
  when tests may not change: ``verification.tests_may_change: false``, or unset and a prompt of the session
  forbids editing tests (the prompts are the session's plan constraints).
* ``special_case`` — a source line the session wrote compares a value with a literal a test uses (and
  ``runner_probe``: it looks at the test run). The lines are found from the file tools' new text; every line
  of a Python file the session touched otherwise (a Bash heredoc: :func:`shell_written`) counts.

A run without a baseline (begun by an older tether) cannot be checked, and says so: fail closed.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tether.envelope.schema import Envelope
from tether.errors import InputError
from tether.events.kinds_baseline import SuiteBaseline
from tether.events.kinds_calls import HookReceived
from tether.events.protocol import Store
from tether.events.store import Event
from tether.state import WRITES, Action, proposed_args
from tether.status import ActionStatus
from tether.verify.testsurface import changes, read_bytes, surface_files

if TYPE_CHECKING:  # the reviewer is imported by the stop that judges: a tool call never pays for it
    from tether.review.reviewer import ReviewFinding

NO_BASELINE = (
    "this session's run has no test baseline (it began before tether took one at a session's start), so "
    "changes to the tests cannot be ruled out; start a new session"
)


def take_baseline(store: Store, workspace: Path, contract: str | None = None) -> SuiteBaseline:
    """The test surface's bytes now, stored as blobs; the event names them by hash. With them, the stamps of the
    files Python loads ahead of source and of the workspace virtualenv's ``bin/`` (``tether.verify.shadowing``):
    the stop's lint and types sensors run a ``.venv/bin`` tool only if it is the one there now, and its tests
    sensor judges new start-up files and extension modules against them, as the loop's do. And in a git workspace the
    commit ``HEAD`` names (:mod:`.origin`): the baseline text of a file a shell command touches later."""
    from tether.verify import shadowing  # a session's first call: never a tool call's

    from .earlier import carry, latest
    from .origin import dirty, head

    origin = head(workspace)
    surface: dict[str, str] = {}
    for path in surface_files(workspace):
        data = read_bytes(workspace, path)
        if data is not None:
            surface[path] = store.put_blob(data)
    kept = dirty(workspace, origin[0]) if origin else {}
    earlier = latest(store, workspace, contract)  # an earlier session's unverified changes are not the user's
    if earlier is None:
        carried, kept_hashes = [], {rel: store.put_blob(data) for rel, data in kept.items()}
    else:
        taken = carry(store, workspace, origin, earlier, surface, kept)
        surface, kept_hashes, carried = taken.surface, taken.dirty, taken.paths
    return SuiteBaseline(
        command="",
        runner="other",
        ok=False,
        detail="a hook session's baseline: the test surface at the session's start (no test run)",
        surface=surface,
        loaders=store.put_blob(shadowing.dump(shadowing.scan(workspace)[0])),
        commit=origin[0] if origin else None,
        commit_dir=origin[1] if origin else "",
        dirty=kept_hashes,
        carried=carried,
        carried_from=earlier.run_id if earlier is not None and carried else "",
        carried_why=earlier.why if earlier is not None and carried else "",
    )


def baseline_of(events: Sequence[Event]) -> SuiteBaseline | None:
    found = next((e for e in events if e.kind == SuiteBaseline.KIND), None)
    return found.data_as(SuiteBaseline) if found is not None else None


def prompts(events: Sequence[Event]) -> list[str]:
    """The user's prompts of the session: they play the part of a plan's constraints."""
    out = []
    for e in events:
        if e.kind == HookReceived.KIND and e.payload.get("event") == "UserPromptSubmit":
            prompt = e.payload.get("detail", {}).get("prompt")
            if isinstance(prompt, str):
                out.append(prompt)
    return out


def findings(
    store: Store,
    env: Envelope,
    workspace: Path,
    events: Sequence[Event],
    actions: Sequence[Action],
    moved: Sequence[str],
) -> list[ReviewFinding]:
    """Changes to the test surface since the baseline, and written lines special-casing a test's literals; ``moved``:
    the Python files touched since the session began (:func:`touched`, one walk a stop)."""
    from tether.review.reviewer import ReviewFinding
    from tether.review.test_integrity import source_findings, surface_findings

    baseline = baseline_of(events)
    if baseline is None:
        return [ReviewFinding("adversarial", "high", NO_BASELINE, check="test_baseline")]

    def blob(h: str) -> bytes | None:
        try:
            return store.get_blob(h)
        except InputError:
            return None

    plan = {"constraints": prompts(events)}
    out = surface_findings(env, plan, changes(baseline.surface, workspace, blob))
    tests = {p: b for p, h in baseline.surface.items() if (b := blob(h)) is not None}
    added = written_lines(workspace, actions, events) | shell_written(workspace, events, actions, moved, baseline, blob)
    sources = {p: b for p in added if (b := read_bytes(workspace, p)) is not None}
    return [*_sourced(out + source_findings(sources, added, tests), baseline), *changed_inputs(events)]


def _sourced(found: list[ReviewFinding], baseline: SuiteBaseline) -> list[ReviewFinding]:
    """Each finding on a file an earlier session's agent left (``baseline.carried``) says so: the user reads that
    the change was not this session's, and which session's it was."""
    from dataclasses import replace

    carried = set(baseline.carried)
    return [replace(f, message=f"{f.message} ({left_by(baseline)})") if f.file in carried else f for f in found]


def left_by(baseline: SuiteBaseline) -> str:
    """Where a carried file's change comes from: "left by session X, which ended unverified"."""
    return f"left by session {baseline.carried_from}, {baseline.carried_why}"


def carried_here(workspace: Path, baseline: SuiteBaseline | None) -> list[str]:
    """The files an earlier session's agent left (``baseline.carried``) that are still there: the stop checks them as
    the session's own changes, though this session never touched them."""
    if baseline is None:
        return []
    return [rel for rel in baseline.carried if os.path.lexists(workspace / rel)]


def changed_inputs(events: Sequence[Event]) -> list[ReviewFinding]:
    """Each call that ran with an input other than the one judged (``hook.input_changed``): said at the stop,
    and refusing it when the verdict on what ran refuses (DENY, or ASK: nobody was asked about that input)."""
    from tether.review.reviewer import ReviewFinding

    out = []
    for e in events:
        if e.kind != "hook.input_changed":  # kinds_hooks.HookInputChanged.KIND, a later kind module
            continue
        p = e.payload
        refused = p.get("verdict") != "ALLOW"
        message = (
            f"{p.get('call_id')} ({p.get('tool')}) ran with an input other than the one judged (another hook's"
            f" updatedInput?), recorded as {p.get('ran_as')}; judged after it ran: {p.get('verdict')}"
            f" ({p.get('rule')}): {p.get('reason')}"
        )
        out.append(ReviewFinding("adversarial", "high" if refused else "low", message, check="input_changed"))
    return out


#: How much earlier than the run's start a file's ctime may read and still be this session's: the kernel stamps
#: files from a clock that lags by up to a tick.
CLOCK_SLACK_NS = 50_000_000
#: Folders no stop sensor looks into for touched files: tether's, git's, virtualenvs, caches, installed packages
#: (``tether.snapshot.ALWAYS_SKIPPED``, not imported: a session's first call imports this module, and the
#: snapshot's pathspec is no hook call's).
NOT_SOURCE = frozenset(
    {".git", ".tether", ".venv", "venv", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".tox"}
    | {".nox", ".hypothesis", "node_modules", "site-packages"}
)


def touched(workspace: Path, events: Sequence[Event]) -> list[str]:
    """Workspace-relative Python files touched since the session's run began, whatever touched them.

    A hook session keeps no workspace snapshot, and its receipts say which files only for the file tools: a
    module a Bash command rewrote was never compiled, linted or type-checked at the stop. A file's ctime is set
    by the kernel on every change and no program can set it back, so a ctime at or after the run's start (less
    :data:`CLOCK_SLACK_NS`) means the session touched it (or something did meanwhile: checked all the same).
    One walk of the project per stop, stat only.
    """
    if not events:
        return []
    since = _ns(events[0].ts) - CLOCK_SLACK_NS
    out = []
    for root, dirs, files in os.walk(workspace):
        dirs[:] = [d for d in dirs if d not in NOT_SOURCE]
        for name in files:
            if not name.endswith(".py"):
                continue
            try:
                st = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and st.st_ctime_ns >= since:
                out.append(Path(root, name).relative_to(workspace).as_posix())
    return sorted(out)


def shell_written(
    workspace: Path,
    events: Sequence[Event],
    actions: Sequence[Action],
    moved: Sequence[str],
    baseline: SuiteBaseline,
    blob: Callable[[str], bytes | None],
) -> dict[str, set[int]]:
    """The lines of each Python file of ``moved`` (:func:`touched`) that the session touched by other means than a
    file tool (a Bash heredoc's cheat was read by nobody): those that are not the file's text in the commit the
    session began on (``baseline.commit``, read by :mod:`.origin`), or every line where there is no such text (no
    repository, a file new since, an object that is not its name). A file a file tool wrote keeps that tool's lines
    only unless it changed after the tool's last receipt (its ctime later: the tool's own write is always before
    its receipt)."""
    done = {e.payload.get("call_id"): _ns(e.ts) for e in events if e.kind == "action.completed"}
    last: dict[str | None, int] = {}
    for a in actions:
        if a.tool in WRITES and a.call_id in done:
            rel = _relative(workspace, str(a.args.get("path")))
            last[rel] = max(last.get(rel, 0), done[a.call_id])
    now: dict[str, bytes] = {}
    for rel in moved:
        try:
            if rel in last and os.lstat(workspace / rel).st_ctime_ns <= last[rel]:
                continue
        except OSError:
            continue
        data = read_bytes(workspace, rel)
        if data is not None:
            now[rel] = data
    old = start_texts(blob, workspace, baseline, sorted(now))
    return {rel: new_lines(old.get(rel), data) for rel, data in now.items()}


def start_texts(
    blob: Callable[[str], bytes | None], workspace: Path, baseline: SuiteBaseline, paths: Sequence[str]
) -> dict[str, bytes]:
    """Each of ``paths``' text when the session began: the user's uncommitted text kept then (``baseline.dirty``), else
    its text in the commit (:mod:`.origin`). A kept text that cannot be read back as the bytes its hash names is not
    replaced by the commit's, which is not what the file held: that file is left out, every line counts."""
    from tether.canonical import bytes_hash

    out: dict[str, bytes] = {}
    rest = []
    for rel in paths:
        h = baseline.dirty.get(rel)
        if h is None:
            rest.append(rel)
        elif (data := blob(h)) is not None and bytes_hash(data) == h:
            out[rel] = data
    if baseline.commit and rest:
        from .origin import texts

        out.update(texts(workspace, baseline.commit, baseline.commit_dir, rest))
    return out


def new_lines(before: bytes | None, after: bytes) -> set[int]:
    """The 1-based numbers of the lines of ``after`` that are not ``before``'s (inserted or replaced, by
    :class:`difflib.SequenceMatcher`); every line when there is no ``before``."""
    lines = after.decode("utf-8", errors="replace").splitlines()
    if before is None:
        return set(range(1, len(lines) + 1))
    import difflib

    old = before.decode("utf-8", errors="replace").splitlines()
    opcodes = difflib.SequenceMatcher(None, old, lines, autojunk=False).get_opcodes()
    return {j + 1 for tag, _, _, j1, j2 in opcodes if tag in ("replace", "insert") for j in range(j1, j2)}


def _ns(ts: str) -> int:
    return int(datetime.fromisoformat(ts).timestamp() * 1_000_000_000)


def written_lines(workspace: Path, actions: Sequence[Action], events: Sequence[Event]) -> dict[str, set[int]]:
    """Per workspace-relative file, the numbers of its lines now whose text one of the session's edits wrote (read
    from each edit's proposal in ``events``, the session's log: the fold keeps no text a write wrote, state.py
    ``kept_args``)."""
    texts: dict[str, set[str]] = {}
    for a in actions:
        path = a.args.get("path")
        if a.status is not ActionStatus.COMPLETED or not a.ok or a.tool not in WRITES:
            continue
        rel = _relative(workspace, path) if isinstance(path, str) else None
        if rel is not None:
            new = _new_text(proposed_args(events, a))
            texts.setdefault(rel, set()).update(line.strip() for line in new if line.strip())
    out: dict[str, set[int]] = {}
    for rel, wrote in texts.items():
        data = read_bytes(workspace, rel)
        if data is None:
            continue
        lines = data.decode("utf-8", errors="replace").splitlines()
        numbers = {n for n, line in enumerate(lines, 1) if line.strip() in wrote}
        if numbers:
            out[rel] = numbers
    return out


def _relative(workspace: Path, path: str) -> str | None:
    p = Path(path)
    p = p if p.is_absolute() else workspace / p
    try:
        return p.resolve().relative_to(workspace).as_posix()
    except ValueError:
        return None  # outside the project: not the tests' business


def _new_text(args: dict[str, Any]) -> Iterator[str]:
    """The lines an edit wrote: a Write's content, an Edit's new string, a MultiEdit's, a patch's + lines."""
    for key in ("content", "new"):
        if isinstance(args.get(key), str):
            yield from args[key].splitlines()
    for edit in args.get("edits") or ():
        if isinstance(edit, dict) and isinstance(edit.get("new_string"), str):
            yield from edit["new_string"].splitlines()
    if isinstance(args.get("patch"), str):
        yield from (line[1:] for line in args["patch"].splitlines() if line.startswith("+"))
