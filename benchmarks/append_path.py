"""The append path of one governed step, K times: tether-process CPU per step (docs/step-cost.md).

    python benchmarks/append_path.py [--steps 1000]

One step of ``benchmarks/loop.py``'s scripted loop is recorded first (the payloads ``Runtime.append_many`` is
given in a short run, the third step's); then the step is replayed K times as the runtime appends it: each
payload built (validated), validated again and chained by ``Batch.add``, written by ``append_batch`` in the
step's two transactions (the lease held, the one before the command synced), and folded by the control fold
(``RunFold``: run state, receipts, plan, beliefs) and the provenance index. Printed: CPU per step
(``time.process_time``, after 50 warm-up steps). For instruction counts, run it under
``valgrind --tool=callgrind`` at two values of ``--steps`` and divide the difference by the extra steps.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def record_step() -> list[list[tuple[str, dict[str, Any]]]]:
    """The payloads of one step of the scripted loop, grouped by ``Runtime.append_many`` call."""
    sys.path.insert(0, str(HERE))
    import loop

    from tether.kernel import runtime

    calls: list[list[tuple[str, dict[str, Any]]]] = []
    append_many = runtime.Runtime.append_many

    def recording(self: runtime.Runtime, items: Any, **how: Any) -> Any:
        calls.append([(i.KIND, i.model_dump(mode="json")) for i in items])
        return append_many(self, items, **how)

    runtime.Runtime.append_many = recording  # type: ignore[method-assign]
    try:
        with tempfile.TemporaryDirectory() as root:
            loop.tether_loop(Path(root), "local", False, 4)
    finally:
        runtime.Runtime.append_many = append_many  # type: ignore[method-assign]
    starts = [i for i, c in enumerate(calls) if c[0][0] == "model.requested"]
    return calls[starts[2] : starts[3]]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    args = parser.parse_args(argv)

    from tether.control.fold import RunFold
    from tether.envelope.schema import Envelope, PlanRef
    from tether.events.payload import model_of
    from tether.events.store import Batch, EventStore
    from tether.policy.provenance import Provenance

    step = record_step()
    with tempfile.TemporaryDirectory() as root:
        store = EventStore.open(Path(root) / "t.db")
        run = store.create_run("append path", [], lease=True)
        fold, index = RunFold(), Provenance(Envelope(plan=PlanRef(path="p", hash="h")))
        head = store.head(run)

        def one() -> None:
            nonlocal head
            batch = Batch(run, head)
            for n, group in enumerate(step):
                items = [model_of(kind).model_validate(payload) for kind, payload in group]
                durable = any(item.KIND == "action.started" for item in items)
                for e in batch.add(store.redactor, items, durable=durable):
                    fold.add(e)
                    index.add(e)
                if durable or n == len(step) - 1:
                    store.append_batch(batch)
                    head = batch.head
                    batch = Batch(run, head)

        for _ in range(50):
            one()
        t0 = time.process_time()
        for _ in range(args.steps):
            one()
        per_step = (time.process_time() - t0) / args.steps
        store.release(run)
        store.close()
    kinds = [kind for group in step for kind, _ in group]
    print(json.dumps({"events_per_step": len(kinds), "cpu_us_per_step": round(per_step * 1e6, 1), "kinds": kinds}))


if __name__ == "__main__":
    main()
