"""Reading the run's log: receipts joined with their proposals, epochs, signatures and windows.

Pure helpers shared by every control module. A *receipt* is an ``action.completed``,
``action.failed`` or ``sensor.result`` event; beliefs are derived only from receipts.
An *epoch* is the number of workspace-changing actions (completed actions with changed
files) before an event: two observations in the same epoch saw the same workspace state.
The *window* is everything after the latest ``recovery.switched``: behavioural
diagnostics and stuck detection look only at the current strategy's attempt.
"""

from __future__ import annotations

import re
from _bisect import bisect_right

from tether.canonical import content_hash
from tether.events.kinds_calls import ActionCompleted, ActionFailed, ActionProposed, DiagnosticsComputed
from tether.events.store import Event
from tether.memo import cache, cached_property
from tether.records import dataclass, field

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing (tether/typeless.py)
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any, Protocol

    class Proposal(Protocol):
        """What a receipt joins from its call's proposal (a :class:`tether.state.Action` has both)."""

        @property
        def args(self) -> dict[str, Any]: ...
        @property
        def args_hash(self) -> str: ...

    # later kind modules (payload.LATER): the view reads them by their kind's string
    from tether.events.kinds_control import DiagnosticData, RecoverySwitched, SensorResultEvent

RECEIPT_KINDS = frozenset({ActionCompleted.KIND, ActionFailed.KIND, "sensor.result"})
#: What the control layer writes itself; every other event is new input for it.
CONTROL_KINDS = frozenset(
    {
        "belief.recorded",
        "contradiction.detected",
        DiagnosticsComputed.KIND,
        "control.changed",
        "recovery.switched",
        "stuck.detected",
        "plan.updated",
        "hypothesis.recorded",
    }
)


@cache
def _volatile() -> re.Pattern[str]:
    """Durations and addresses that differ between two runs of one call (compiled at first use)."""
    return re.compile(r"\b\d+(?:\.\d+)?\s?(?:s|ms|sec|seconds)\b|0x[0-9a-f]+|\bin \d+\.\d+s\b")


_VOLATILE_KEYS = frozenset({"duration_s", "timeout_s", "stdout_bytes", "stderr_bytes"})


def seq_of(event_id: str) -> int:
    """The seq part of a ``run#seq`` citation (-1 when malformed)."""
    _, _, tail = event_id.rpartition("#")
    return int(tail) if tail.isdigit() else -1


def normalise_text(text: str, limit: int = 2000) -> str:
    """Text with durations and addresses blanked, so identical outcomes compare equal."""
    return _volatile().sub("#", text.strip())[:limit]


@dataclass(frozen=True)
class ActionRecord:
    """One action receipt joined with its proposal."""

    event: Event
    call_id: str
    tool: str
    args: dict[str, Any]
    args_hash: str
    ok: bool
    failure_class: str | None
    text: str
    data: dict[str, Any]
    changed_files: tuple[str, ...]
    epoch: int

    @property
    def identity(self) -> tuple[str, str]:
        return (self.tool, self.args_hash)

    @cached_property
    def observation(self) -> str:
        """Hash of what the action observed (volatile parts removed): polling with changing output differs."""
        data = {k: v for k, v in self.data.items() if k not in _VOLATILE_KEYS}
        return content_hash([self.ok, self.failure_class, normalise_text(self.text), _stable(data)])

    @cached_property
    def failure_signature(self) -> str | None:
        if self.ok:
            return None
        failing = self.data.get("failing")
        if isinstance(failing, list) and failing:
            return content_hash(["tests", sorted(str(f) for f in failing)])
        return content_hash([self.tool, self.failure_class, normalise_text(self.text, 400)])


_PLAIN = frozenset({int, float, bool, type(None)})
"""Values :func:`_stable` returns as they are: a dict's are kept without a call for each (issue 18)."""


def _stable(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: v if type(v) in _PLAIN else _stable(v) for k, v in data.items() if k not in _VOLATILE_KEYS}
    if isinstance(data, list):
        return [_stable(v) for v in data]
    if isinstance(data, str):
        return normalise_text(data, 400)
    return data


@dataclass(frozen=True)
class SensorRecord:
    """One sensor's result in the log, and whether the envelope requires it."""

    event: Event
    sensor: str
    result: str
    required: bool
    diagnostics: tuple[DiagnosticData, ...]
    epoch: int

    @cached_property
    def failure_signature(self) -> str | None:
        if self.result != "FAIL":
            return None
        codes = sorted(str(d.code) for d in self.diagnostics if "::" in (d.code or ""))
        if codes:
            return content_hash(["tests", codes])
        return content_hash(
            [
                "sensor",
                self.sensor,
                sorted(f"{d.file}:{d.line}:{d.message}" for d in self.diagnostics),
            ]
        )


@dataclass
class LogView:
    """Everything the control modules read, extracted in one pass (or grown one event at a time: :meth:`add`).

    ``keep=False`` (the run's incremental fold) keeps no per-event lists: the receipts and epochs of the
    whole run would grow with it, and the fold reads only the epoch, the proposals and the writes.
    """

    events: Sequence[Event]
    actions: list[ActionRecord] = field(default_factory=list)
    sensors: list[SensorRecord] = field(default_factory=list)
    epoch_at: dict[int, int] = field(default_factory=dict)  # seq -> epoch of that event
    file_epoch_at: dict[tuple[int, str], int] = field(default_factory=dict)
    epoch: int = 0
    window_start: int = -1  # seq of the latest recovery.switched (-1: whole run)
    # call id -> (args, args hash) of its proposal: what a receipt joins, not the whole payload (one per call)
    _proposals: dict[str, tuple[dict[str, Any], str]] = field(default_factory=dict, repr=False)
    # When given (the run's fold: its RunState keeps every call's proposal, folded before this view sees the
    # event), the proposals are read from it instead of being kept a second time (issue 18).
    proposals: Mapping[str, Proposal] | None = field(default=None, repr=False)
    # path -> seqs of the ok actions that changed it, in log order; ``_ordered`` while those seqs only grow.
    _writes: dict[str, list[int]] = field(default_factory=dict, repr=False)
    _ordered: bool = field(default=True, repr=False)
    keep: bool = field(default=True, repr=False)

    def in_window(self, e: Event) -> bool:
        return e.seq > self.window_start

    def file_writes(self, path: str, upto_seq: int) -> int:
        """Ok actions with ``seq <= upto_seq`` that changed ``path``."""
        seqs = self._writes.get(path, [])
        if self._ordered:
            return bisect_right(seqs, upto_seq)
        return sum(1 for s in seqs if s <= upto_seq)

    def add(self, e: Event) -> ActionRecord | SensorRecord | None:
        """Take in the next event of the log; the receipt record it produced, if any."""
        if self.keep:
            self.epoch_at[e.seq] = self.epoch
        handler = _VIEW_BY_KIND.get(e.kind)
        return handler(self, e, e.data) if handler is not None else None

    def _proposed(self, e: Event, p: ActionProposed) -> None:
        if self.proposals is None:
            self._proposals[p.call_id] = (p.args, p.args_hash)

    def _proposal(self, call_id: str) -> tuple[dict[str, Any], str] | None:
        if self.proposals is None:
            return self._proposals.get(call_id)
        a = self.proposals.get(call_id)
        return None if a is None else (a.args, a.args_hash)

    def _switched(self, e: Event, p: RecoverySwitched) -> None:
        self.window_start = e.seq

    def _action(self, e: Event, p: ActionCompleted | ActionFailed) -> ActionRecord:
        action = _memo(e) if self.keep else None
        if not isinstance(action, ActionRecord):
            action = _action_record(e, p, self._proposal(p.call_id), self.epoch)
        if self.keep:
            _remember(action)
            self.actions.append(action)
        if action.ok:
            for path in set(action.changed_files):
                seqs = self._writes.setdefault(path, [])
                if seqs and seqs[-1] > e.seq:
                    self._ordered = False
                seqs.append(e.seq)
        if action.changed_files:  # only a completed action reports changed files
            self.epoch += 1
        return action

    def _sensor(self, e: Event, p: SensorResultEvent) -> SensorRecord:
        known = _memo(e) if self.keep else None
        sensor = known if isinstance(known, SensorRecord) else _sensor_record(e, p, self.epoch)
        if self.keep:
            _remember(sensor)
            self.sensors.append(sensor)
        return sensor


#: What :meth:`LogView.add` does per kind (events of other kinds are not parsed at all), by the kind's string.
_VIEW_BY_KIND: dict[str, Callable[[LogView, Event, Any], ActionRecord | SensorRecord | None]] = {
    ActionProposed.KIND: LogView._proposed,
    "recovery.switched": LogView._switched,
    ActionCompleted.KIND: LogView._action,
    ActionFailed.KIND: LogView._action,
    "sensor.result": LogView._sensor,
}


def _text(result: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    data = result.get("data")
    data = data if isinstance(data, dict) else {k: v for k, v in result.items() if k != "content"}
    content = result.get("content")
    return (str(content) if content is not None else ""), data


#: Receipt records by their event's chain hash. A chain hash covers the event and, through ``prev_hash``,
#: everything before it, so the record built for it (proposal joined, epoch counted) can never differ:
#: reusing it keeps each record's cached observation and signature, so a run's control layer hashes
#: each receipt once instead of once per ``observe``. Only chained events (64-hex hashes) are memoised;
#: synthetic events (``observe``'s pending output, hand-built test events) are always rebuilt.
_RECORDS: dict[str, ActionRecord | SensorRecord] = {}
_RECORDS_MAX = 100_000


def _memo(e: Event) -> ActionRecord | SensorRecord | None:
    return _RECORDS.get(e.hash) if len(e.hash) == 64 else None


def _remember(record: ActionRecord | SensorRecord) -> None:
    if len(record.event.hash) == 64:
        if len(_RECORDS) >= _RECORDS_MAX:
            _RECORDS.clear()
        _RECORDS[record.event.hash] = record


def view(events: Sequence[Event]) -> LogView:
    lv = LogView(events)
    for e in events:
        lv.add(e)
    return lv


def _action_record(
    e: Event, p: ActionCompleted | ActionFailed, prop: tuple[dict[str, Any], str] | None, epoch: int
) -> ActionRecord:
    args = dict(prop[0]) if prop is not None else {}
    args_hash = (prop[1] if prop is not None else "") or content_hash(args)
    if isinstance(p, ActionFailed):
        failure = _failure(p.failure_class, False)
        return ActionRecord(e, p.call_id, p.tool, args, args_hash, False, failure, p.error, {}, (), epoch)
    text, data = _text(p.result)
    failure = _failure(p.result.get("failure_class"), p.ok)
    return ActionRecord(e, p.call_id, p.tool, args, args_hash, p.ok, failure, text, data, tuple(p.changed_files), epoch)


def _failure(failure: Any, ok: bool) -> str | None:
    return str(failure) if failure else (None if ok else "failed")


def _sensor_record(e: Event, p: SensorResultEvent, epoch: int) -> SensorRecord:
    return SensorRecord(e, p.sensor, p.result, p.required, tuple(p.diagnostics), epoch)


def last_control_seq(events: Sequence[Event], kinds: frozenset[str]) -> int:
    return max((e.seq for e in events if e.kind in kinds), default=-1)


class IntentCalls:
    """The successful calls of one intent tool (``plan``, ``hypothesis``), with the arguments each was proposed with.

    The arguments are on ``action.proposed`` and the success on ``action.completed``; the plan and hypothesis
    folds both need the pair joined, so they share this one joiner.
    """

    #: The kinds :meth:`completed` reads; for any other event it does nothing and returns None.
    KINDS = frozenset({ActionProposed.KIND, ActionCompleted.KIND})

    def __init__(self, tool: str) -> None:
        self.tool = tool
        self._proposed: dict[str, dict[str, Any]] = {}

    def completed(self, e: Event) -> dict[str, Any] | None:
        """Take in ``e``; the call's arguments when ``e`` completes a successful call of the tool, else None."""
        if e.kind == ActionProposed.KIND:
            proposed = e.data_as(ActionProposed)
            if proposed.tool == self.tool:
                self._proposed[proposed.call_id] = dict(proposed.args)
        elif e.kind == ActionCompleted.KIND:
            done = e.data_as(ActionCompleted)
            if done.tool == self.tool and done.ok:
                return self._proposed.get(done.call_id, {})
        return None
