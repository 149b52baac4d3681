"""A run's model table (prices and limits from its price file) is the one it started with: on resume and replay."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from tether import EventStore, Harness
from tether.cli.demo_cmds import prepare
from tether.envelope.hashing import contract_hash
from tether.envelope.load import load_envelope
from tether.events.kinds_kernel import ModelRequested
from tether.kernel.replay import replay
from tether.models.base import Message, ModelResponse, ToolSpec
from tether.models.function import FunctionModel

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "bugfix"
MODEL = "function:local-llm-2026-01-01"  # a dated snapshot of the model the price file declares


class Crash(BaseException):
    """The process dying inside the model call: the request is logged, nothing after it runs."""


def crashing(messages: list[Message], tools: list[ToolSpec]) -> ModelResponse:
    raise Crash()


def price_file(base: Path, window: int) -> None:
    entry = {"input_per_mtok": 0, "output_per_mtok": 0, "context_window": window, "max_output_tokens": 100_000}
    (base / "prices.json").write_text(json.dumps({"local-llm": entry}))


def requests(db: Path, run_id: str) -> list[ModelRequested]:
    with EventStore.open(db) as store:
        return [e.data_as(ModelRequested) for e in store.events(run_id) if e.kind == ModelRequested.KIND]


def test_a_resume_keeps_the_window_the_run_started_with(tmp_path: Path) -> None:
    base = prepare(EXAMPLE, tmp_path)
    env = load_envelope(base / "envelope.yaml").model_copy(update={"pricing_file": "prices.json"})
    sealed = env.model_copy(update={"contract_hash": contract_hash(env)}).model_dump(mode="json", exclude_none=True)
    (base / "envelope.yaml").write_text(json.dumps(sealed))
    price_file(base, 5_000)
    db = base / "t.db"
    h = Harness(base / "envelope.yaml", model=FunctionModel(crashing, name=MODEL), db=db, sandbox="local")
    with contextlib.suppress(Crash):
        h.run("Fix the bug.")
    with EventStore.open(db) as store:
        (info,) = store.runs()
        started = store.events(info.run_id)[0].payload
    assert started["prices"] == {"local-llm": {"input_per_mtok": 0, "output_per_mtok": 0, **started_limits(5_000)}}
    (first,) = requests(db, info.run_id)
    assert first.max_tokens == 5_000 - (first.prompt_tokens_est or 0)  # the file's window, through the prefix

    price_file(base, 500_000)  # the operator edits the file while the run is stopped
    with contextlib.suppress(Crash):
        h.resume(info.run_id)
    _, resumed = requests(db, info.run_id)
    assert resumed.max_tokens == 5_000 - (resumed.prompt_tokens_est or 0)  # still the window the run began with

    with EventStore.open(db) as store:
        report = replay(store, info.run_id, sandbox="local", keep=tmp_path / "kept")
    replayed = requests(tmp_path / "kept" / "replay.db", report.replay_run)
    assert replayed and all(r.max_tokens == 5_000 - (r.prompt_tokens_est or 0) for r in replayed)  # and a replay


def started_limits(window: int) -> dict[str, int]:
    return {"context_window": window, "max_output_tokens": 100_000}
