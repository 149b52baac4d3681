"""The context engine: time to build a call's context at turn 50, 500 and 5,000, and tokens per turn.

A synthetic run (each turn: the model's reply, one read through the gate, a ~1,500-character result) is
built in memory and fed to the kernel's own code: ``Transcript`` (the messages, from the log) and
``Manifests`` (each message's tokens and hash, what every ``model.requested`` records).

Prints, at each turn:

* **incremental**: what the runtime does before a call — feed the turn's new events to the live
  transcript, count and hash the messages (settled ones cached) — with and without compaction;
* **rebuild**, the baseline measured in the same run: the same prompt built from the whole log from
  scratch (what ``tether show --context`` and a resume do once), and the ratio between the two;
* **tokens** of the prompt, with compaction (``compact_at`` 0.7 of an 8,192-token window, the digest
  summary, ``kernel/compaction.py``'s own cut and invariant block) and without.

Times are the median of ``REPEAT`` builds (the machine is shared). Run: ``python benchmarks/context.py``.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from tether.envelope.schema import ContextSettings, Envelope
from tether.events.store import Event
from tether.kernel.compaction import digest, invariants, over, plan_cut
from tether.kernel.context import Transcript
from tether.kernel.manifest import Manifests
from tether.models.base import ToolSpec
from tether.models.tokens import ESTIMATOR

TURNS = (50, 500, 5_000)
WINDOW = 8_192
REPEAT = 5
ENV = Envelope.model_validate({"plan": {"path": "p.yaml", "hash": "h"}, "agent": {"instructions": "Be careful."}})
SPECS = [
    ToolSpec("read_file", "Read a slice of a file.", {"type": "object", "properties": {"path": {"type": "string"}}})
]
SETTINGS = ContextSettings()
RESULT = "\n".join(f"{n:>6}\tvalue_{n} = compute(value_{n - 1}) + {n}  # step {n}" for n in range(1, 30))


def turn_events(i: int) -> list[tuple[str, dict[str, Any]]]:
    call = f"c{i}"
    return [
        (
            "model.responded",
            {
                "turn": i,
                "model": "bench",
                "text": f"Turn {i}: reading the next part of the module.",
                "tool_calls": [{"id": call, "name": "read_file", "args": {"path": f"src/m{i % 50}.py"}}],
                "termination": "tool_request",
            },
        ),
        (
            "action.proposed",
            {
                "call_id": call,
                "tool": "read_file",
                "args": {"path": f"src/m{i % 50}.py"},
                "args_hash": f"h{i}",
                "turn": i,
            },
        ),
        ("action.decided", {"call_id": call, "verdict": "ALLOW", "deciding_rule": "default", "reason": "read"}),
        ("action.completed", {"call_id": call, "tool": "read_file", "ok": True, "result": {"content": RESULT}}),
    ]


class Run:
    """A growing synthetic log, its live transcript and manifests, compacting like the runtime when asked."""

    def __init__(self, compact: bool) -> None:
        self.compact = compact
        self.events: list[Event] = []
        self.transcript = Transcript(ENV)
        self.manifests = Manifests(ESTIMATOR)
        self.add([("run.started", {"task": "Survey the modules and report."})])

    def add(self, items: list[tuple[str, dict[str, Any]]]) -> None:
        for kind, payload in items:
            self.events.append(Event("bench", len(self.events), "t", kind, payload))

    def prompt_tokens(self) -> int:
        """Build the next call's context (compacting first when over the threshold); its tokens."""
        counted = self.manifests.count(self.transcript.feed(self.events), SPECS)
        if self.compact and over(counted.total, WINDOW, SETTINGS):
            kept = invariants(self.events, "")
            reserve = SETTINGS.summary_tokens + ESTIMATOR.count(kept)
            cut = plan_cut(self.transcript, counted, WINDOW, SETTINGS, reserve)
            if cut is not None:
                summary = digest(self.events, cut.first_seq, cut.last_seq)
                fields = {"first_seq": cut.first_seq, "last_seq": cut.last_seq, "method": "digest"}
                self.add([("context.compacted", {**fields, "summary": summary, "invariants": kept})])
                counted = self.manifests.count(self.transcript.feed(self.events), SPECS)
        return counted.total


def ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def main() -> None:
    runs = {"compacted": Run(compact=True), "uncompacted": Run(compact=False)}
    tokens: dict[str, dict[int, int]] = {name: {} for name in runs}
    times: dict[str, dict[int, list[float]]] = {name: {t: [] for t in TURNS} for name in runs}
    rebuild: dict[int, list[float]] = {t: [] for t in TURNS}
    last = max(TURNS)
    for i in range(last + REPEAT):
        for name, run in runs.items():
            run.add(turn_events(i))
            started = time.perf_counter()
            total = run.prompt_tokens()
            elapsed = time.perf_counter() - started
            for t in TURNS:
                if t <= i < t + REPEAT:
                    times[name][t].append(elapsed)
                    tokens[name].setdefault(t, total)
        for t in TURNS:
            if t <= i < t + REPEAT:
                events = runs["uncompacted"].events
                started = time.perf_counter()
                Manifests(ESTIMATOR).count(Transcript(ENV).feed(events), SPECS)
                rebuild[t].append(time.perf_counter() - started)
    compactions = sum(1 for e in runs["compacted"].events if e.kind == "context.compacted")
    print(f"context build per call (median of {REPEAT}), {WINDOW}-token window, compact_at {SETTINGS.compact_at}")
    print(
        f"{'turn':>6} {'incremental':>12} {'+compaction':>12} {'rebuild':>10} {'rebuild/inc':>12}"
        f" {'tokens':>8} {'+compaction':>12}"
    )
    for t in TURNS:
        inc, comp, full = ms(times["uncompacted"][t]), ms(times["compacted"][t]), ms(rebuild[t])
        print(
            f"{t:>6} {inc:>10.3f}ms {comp:>10.3f}ms {full:>8.2f}ms {full / inc:>11.1f}x"
            f" {tokens['uncompacted'][t]:>8} {tokens['compacted'][t]:>12}"
        )
    print(
        f"{compactions} compactions in {last + REPEAT} turns; the compacted prompt never exceeded "
        f"{max(tokens['compacted'].values())} tokens"
    )


if __name__ == "__main__":
    main()
