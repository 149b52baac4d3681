"""What a step costs around its events, outside the sandbox, the gate and the store (docs/step-cost.md).

    python benchmarks/fold_replay.py [--steps 200] [--repeat 5]

One run of ``benchmarks/loop.py``'s scripted loop (local sandbox, plain workspace) is recorded, then its events
are replayed ``--repeat`` times through what the runtime does with them besides writing them, in the order it
does it: the control fold (with the run state it folds), the transcript and the provenance index take in each
event; ``control.loop.observe`` runs after each ``action.completed``; ``next_step`` (with ``stop_reason``) before
each model call, decision and execution; the prompt's manifest (``Manifests.count``) before each model call; the
provenance check of the arguments (``Provenance.taints``) and the execution review before each decision. The
events are those the loop wrote, parsed once before timing, so the timed part reads no store.

Printed: the tether-process CPU per step (``time.process_time``) of each replay, and their median. For instruction
counts, run it under ``valgrind --tool=callgrind`` with two values of ``--repeat`` and divide the difference by
the extra steps.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def record(n: int) -> tuple[list[Any], Any, Any, Any]:
    """The events of an ``n``-step scripted run, its envelope, plan and the tools as the model was told them."""
    sys.path.insert(0, str(HERE))
    import loop

    from tether.events.store import EventStore
    from tether.kernel import runtime

    drivers: list[runtime.Runtime] = []
    init = runtime.Runtime.__init__

    def keep(self: runtime.Runtime, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        drivers.append(self)

    runtime.Runtime.__init__ = keep  # type: ignore[method-assign]
    try:
        with tempfile.TemporaryDirectory() as root:
            loop.tether_loop(Path(root), "local", False, n)
            rt = drivers[0]
            store = EventStore.open(Path(root) / "tether.db")
            events = list(store.events(rt.run_id))
            store.close()
    finally:
        runtime.Runtime.__init__ = init  # type: ignore[method-assign]
    for e in events:
        _ = e.data  # parsed before timing, as the runtime's own events come with their payload model
    return events, rt.env, rt.plan, rt.tool_specs()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)

    from tether.control.fold import RunFold
    from tether.control.loop import observe, stop_reason
    from tether.events.store import Event
    from tether.kernel.context import Transcript
    from tether.kernel.manifest import Manifests
    from tether.kernel.steps import next_step
    from tether.models.tokens import counter_for
    from tether.policy.provenance import Provenance
    from tether.review.execution import review_action

    events, env, plan, specs = record(args.steps)
    contract = env.tool("bash")
    now = datetime.now(UTC)

    def fresh() -> list[Event]:  # new event objects each replay, holding the same payloads
        return [Event.of(e.run_id, e.seq, e.ts, e.data, e.prev_hash, e.hash) for e in events]

    def replay(log: list[Event]) -> float:
        fold, transcript, index = RunFold(), Transcript(env, plan), Provenance(env)
        manifests, state = Manifests(counter_for("bench")), fold.state
        t0 = time.process_time()
        for e in log:
            kind = e.kind
            if kind == "model.requested":
                next_step(state, env, now, stop_reason(fold))
                manifests.count(transcript, specs)
            elif kind == "review.gate":
                next_step(state, env, now, stop_reason(fold))
                action = state.actions[e.payload["call_id"]]
                index.taints(action.args)
                review_action(contract, action.args, fold, env)
            elif kind == "action.started":
                next_step(state, env, now, stop_reason(fold))
            fold.add(e)
            transcript.add(e)
            index.add(e)
            if kind == "action.completed":
                observe(fold, env)
        return time.process_time() - t0

    steps = sum(1 for e in events if e.kind == "model.requested")
    per_step = [replay(fresh()) / steps * 1e6 for _ in range(args.repeat)]
    out = {"steps": steps, "events": len(events), "cpu_us_per_step": round(statistics.median(per_step), 1)}
    print(json.dumps({**out, "runs": [round(x, 1) for x in per_step]}))


if __name__ == "__main__":
    main()
