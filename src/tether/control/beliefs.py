"""Beliefs: typed facts derived only from receipts, each citing its evidence and stamped with a generation.

Derivation (receipt -> beliefs):

=====================================  ==============================================  ================
receipt                                 belief key = value                              kind
=====================================  ==============================================  ================
write/edit (completed, changed files)   ``file:<path>`` = True; ``file:<path>.sha256``  file_exists,
                                        = content hash after (when the tool reports it)  file_changed
read/list ok on a path                  ``file:<path>`` = True                          file_exists
any action failing ``not_found``        ``file:<path>`` = False                         file_exists
``run_tests`` (no extra args), exit 0/1 ``tests.failing`` = sorted failing test ids     tests_failing
``bash``: exit 127 / exit 0             ``command:<argv0>`` = False / True              command_available
``sensor.result``                       ``sensor:<name>`` = PASS|FAIL|SKIPPED            sensor
``sensor.result`` tests (PASS/FAIL)     ``tests.failing`` = failing test ids             tests_failing
``sensor.result`` syntax (PASS/FAIL)    ``build.state`` = "ok" | "broken"                build_state
=====================================  ==============================================  ================

Every observation of a key is recorded (re-observing the same value refreshes it), except
``command:*`` which is recorded only when its value changes. The generation is a run-wide
counter: each ``belief.recorded`` has generation = previous maximum + 1. A read pinned to a
generation raises :class:`tether.errors.StaleBelief` if that key was observed again since.

Each belief carries ``confidence``: the source tool's observed reliability at that point,
(ok + 1) / (n + 2) over its earlier receipts (sensors are deterministic: 1.0).

Contradictions: a new observation of a key that differs from the current belief *for the same
state* (same epoch; for ``file:*`` keys, the same number of writes to that file). Severity:
``system_breaking`` for deterministic facts (file existence after a recorded write, build
state, deterministic sensors: the workspace changed outside the log), ``high`` for test
outcomes (flaky tests), ``low`` otherwise.
"""

from __future__ import annotations

from sys import intern

from tether.errors import StaleBelief
from tether.events.kinds_calls import BeliefKind
from tether.events.payload import Payload
from tether.events.store import Event
from tether.records import dataclass
from tether.typeless import cast

from .receipts import ActionRecord, LogView, SensorRecord, seq_of, view

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing (tether/typeless.py)
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence
    from typing import Any

    # a later kind module (payload.LATER): imported where an event of it is made
    from tether.events.kinds_control import BeliefRecorded

STATE_KEYS_PREFIX = ("tests.", "build.", "sensor:")
DETERMINISTIC_SENSORS = frozenset({"sensor:syntax", "sensor:lint", "sensor:types", "sensor:policy"})
READ_TOOLS = frozenset({"read_file", "list_dir"})


@dataclass(frozen=True)
class Belief:
    """What the control layer believes about one key: its value, generation and epoch, the events it cites."""

    key: str
    kind: BeliefKind
    value: Any
    generation: int
    epoch: int
    cites: tuple[str, ...]
    confidence: float = 1.0
    seq: int = -1  # seq of the belief.recorded event

    @property
    def state_dependent(self) -> bool:
        return self.key.startswith(STATE_KEYS_PREFIX)


@dataclass(frozen=True, slots=True)
class Observation:
    """What one receipt says of one belief key. The control fold keeps every receipt's observations for the
    whole run (a new belief replays those after its mark), so it is slotted and its key is interned: the same
    key (``command:true``, ``file:a.py``) comes back receipt after receipt (issue 18)."""

    key: str
    kind: BeliefKind
    value: Any
    epoch: int
    cite: str
    confidence: float


class BeliefView:
    """The current belief per key, folded from ``belief.recorded`` events."""

    def __init__(self, beliefs: dict[str, Belief], generation: int) -> None:
        self._beliefs = beliefs
        self.generation = generation

    @classmethod
    def from_events(cls, events: Iterable[Event]) -> BeliefView:
        beliefs: dict[str, Belief] = {}
        generation = 0
        for e in events:
            if e.kind != "belief.recorded":
                continue
            b = belief_of(e)
            beliefs[b.key] = b
            generation = max(generation, b.generation)
        return cls(beliefs, generation)

    def get(self, key: str) -> Belief | None:
        return self._beliefs.get(key)

    def read(self, key: str, pinned_generation: int | None = None) -> Belief | None:
        """The belief for ``key``; with ``pinned_generation``, raise ``StaleBelief`` if it was re-observed since."""
        b = self._beliefs.get(key)
        if pinned_generation is not None and b is not None and b.generation > pinned_generation:
            raise StaleBelief(
                f"belief {key!r} was re-observed at generation {b.generation} after the pinned generation "
                f"{pinned_generation} (now {b.value!r}, from {', '.join(b.cites)})"
            )
        return b

    def __iter__(self) -> Iterator[Belief]:
        return iter(sorted(self._beliefs.values(), key=lambda b: b.key))

    def __len__(self) -> int:
        return len(self._beliefs)


def _paths(args: dict[str, Any]) -> list[str]:
    out = []
    for k in ("path", "file", "target"):
        v = args.get(k)
        if isinstance(v, str) and v:
            out.append(v.removeprefix("./"))
    return out


def _argv0(command: Any) -> str | None:
    if not isinstance(command, str) or not command.strip():
        return None
    first = command.strip().split()[0]
    return first if "=" not in first else None


def _confidence(history: dict[str, tuple[int, int]], tool: str) -> float:
    ok, n = history.get(tool, (0, 0))
    return round((ok + 1) / (n + 2), 4)


def observations_of_action(a: ActionRecord, lv: LogView, conf: float) -> list[Observation]:
    cite, out = a.event.id, []
    if a.ok and a.changed_files:
        for path in a.changed_files:
            ep = lv.file_writes(path, a.event.seq)
            out.append(Observation(intern(f"file:{path}"), "file_exists", True, ep, cite, conf))
            sha = a.data.get("sha256_after") if a.data.get("path") == path else None
            if isinstance(sha, str):
                out.append(Observation(intern(f"file:{path}.sha256"), "file_changed", sha, ep, cite, conf))
    elif a.ok and a.tool in READ_TOOLS:
        for path in _paths(a.args):
            key, seen = intern(f"file:{path}"), lv.file_writes(path, a.event.seq)
            out.append(Observation(key, "file_exists", True, seen, cite, conf))
    if not a.ok and a.failure_class == "not_found":
        for path in _paths(a.args):
            key, seen = intern(f"file:{path}"), lv.file_writes(path, a.event.seq)
            out.append(Observation(key, "file_exists", False, seen, cite, conf))
    if a.tool == "run_tests" and not a.args.get("args"):
        exit_code = a.data.get("exit_code")
        failing = a.data.get("failing")
        if exit_code in (0, 1) and isinstance(failing, list):
            out.append(Observation("tests.failing", "tests_failing", sorted(map(str, failing)), a.epoch, cite, conf))
    if a.tool == "bash":
        name = _argv0(a.args.get("command"))
        exit_code = a.data.get("exit_code")
        if name and exit_code in (0, 127):
            out.append(Observation(intern(f"command:{name}"), "command_available", exit_code == 0, a.epoch, cite, conf))
    return out


def observations_of_sensor(s: SensorRecord) -> list[Observation]:
    cite = s.event.id
    out = [Observation(intern(f"sensor:{s.sensor}"), "sensor", s.result, s.epoch, cite, 1.0)]
    if s.sensor == "tests" and s.result in ("PASS", "FAIL"):
        failing = sorted(str(d.code or d.file or "?") for d in s.diagnostics) if s.result == "FAIL" else []
        out.append(Observation("tests.failing", "tests_failing", failing, s.epoch, cite, 1.0))
    if s.sensor == "syntax" and s.result in ("PASS", "FAIL"):
        out.append(
            Observation("build.state", "build_state", "ok" if s.result == "PASS" else "broken", s.epoch, cite, 1.0)
        )
    return out


def severity(key: str, previous: Any, observed: Any) -> str:
    if key.startswith("file:") and not key.endswith(".sha256"):
        return "system_breaking" if previous is True and observed is False else "high"
    if key.startswith("file:"):
        return "system_breaking"
    if key == "build.state" or key in DETERMINISTIC_SENSORS:
        return "system_breaking"
    if key.startswith(("tests.", "sensor:")):
        return "high"
    return "low"


def _explain(key: str, prev: Belief, obs: Observation) -> str:
    if key.startswith("file:") and prev.value is True and obs.value is False:
        return (
            f"{key[5:]} was reported present by {', '.join(prev.cites)} but {obs.cite} found it missing, "
            "with no recorded write in between"
        )
    return (
        f"{key} was {prev.value!r} (from {', '.join(prev.cites)}) and is now {obs.value!r} (from {obs.cite}) "
        "for the same workspace state"
    )


def belief_of(e: Event) -> Belief:
    """The belief a ``belief.recorded`` event records."""
    p = cast("BeliefRecorded", e.data)
    return Belief(p.key, p.kind, p.value, p.generation, p.epoch, tuple(p.cites), p.confidence, e.seq)


def belief_mark(current: dict[str, Belief]) -> int:
    """The newest receipt cited by the current beliefs: receipts up to it have been observed."""
    return max((seq_of(c) for b in current.values() for c in b.cites), default=-1)


def record_observations(
    observations: Sequence[Observation],
    current: dict[str, Belief],
    generation: int,
    out: list[Payload],
) -> int:
    """One receipt's step of :func:`derive`: append its events to ``out``, update ``current``; the new generation."""
    if not observations:
        return generation
    import tether.events.kinds_control as kinds  # here: a hook's call has none; `import … as`: see budgets.cap_call

    for obs in observations:
        prev = current.get(obs.key)
        if obs.kind == "command_available" and prev is not None and prev.value == obs.value:
            continue
        if prev is not None and prev.epoch == obs.epoch and prev.value != obs.value:
            out.append(
                kinds.ContradictionDetected(
                    key=obs.key,
                    severity=severity(obs.key, prev.value, obs.value),
                    previous=prev.value,
                    observed=obs.value,
                    explanation=_explain(obs.key, prev, obs),
                    cites=[*prev.cites, obs.cite],
                )
            )
        generation += 1
        out.append(
            kinds.BeliefRecorded(
                key=obs.key,
                kind=obs.kind,
                value=obs.value,
                generation=generation,
                epoch=obs.epoch,
                cites=[obs.cite],
                confidence=obs.confidence,
            )
        )
        current[obs.key] = Belief(obs.key, obs.kind, obs.value, generation, obs.epoch, (obs.cite,), obs.confidence)
    return generation


def derive(events: Sequence[Event], lv: LogView | None = None) -> list[Payload]:
    """New ``belief.recorded`` and ``contradiction.detected`` events for receipts not yet observed.

    Receipts after the newest cited receipt are processed in log order (a high-water mark, so
    re-running on a log that includes the output adds nothing).
    """
    lv = lv or view(events)
    bv = BeliefView.from_events(events)
    current = {b.key: b for b in bv}
    mark = belief_mark(current)
    history: dict[str, tuple[int, int]] = {}
    receipts: list[tuple[int, ActionRecord | SensorRecord]] = [(a.event.seq, a) for a in lv.actions]
    receipts += [(s.event.seq, s) for s in lv.sensors]
    generation = bv.generation
    out: list[Payload] = []
    for seq, r in sorted(receipts, key=lambda t: t[0]):
        if isinstance(r, ActionRecord):
            conf = _confidence(history, r.tool)
            ok, n = history.get(r.tool, (0, 0))
            history[r.tool] = (ok + int(r.ok), n + 1)
            if seq <= mark:
                continue
            observations = observations_of_action(r, lv, conf)
        else:
            if seq <= mark:
                continue
            observations = observations_of_sensor(r)
        generation = record_observations(observations, current, generation, out)
    return out


def tool_reliability(events: Sequence[Event]) -> dict[str, dict[str, Any]]:
    """Observed success rate per tool, and failures per failure class (for ``tether show``)."""
    stats: dict[str, dict[str, Any]] = {}
    for a in view(events).actions:
        s = stats.setdefault(a.tool, {"calls": 0, "ok": 0, "failures": {}})
        s["calls"] += 1
        if a.ok:
            s["ok"] += 1
        else:
            cls = a.failure_class or "failed"
            s["failures"][cls] = s["failures"].get(cls, 0) + 1
    for s in stats.values():
        s["success_rate"] = round(s["ok"] / s["calls"], 4) if s["calls"] else 0.0
    return dict(sorted(stats.items()))
