"""The transcript lets through at once the kinds every step appends that it never reads (``PASSED_OVER``): none of
them may be one its code reads, and a log holding them builds the same messages as without them."""

from __future__ import annotations

import inspect

from tether.envelope.schema import Envelope
from tether.events.store import Event
from tether.kernel import context
from tether.kernel.context import PASSED_OVER, Transcript


def test_no_kind_passed_over_is_named_by_the_transcript_s_code() -> None:
    source = inspect.getsource(context)
    body = source.split("PASSED_OVER = frozenset(", 1)[1].split(")", 1)[1]  # all but the set's own definition
    for kind in PASSED_OVER:
        assert f'"{kind}"' not in body and f"'{kind}'" not in body, kind


def test_the_kinds_passed_over_change_no_message() -> None:
    env = Envelope.model_validate({"plan": {"path": "p.yaml", "hash": "h"}})
    calls = [{"id": "c1", "name": "bash", "args": {"command": "true"}}]
    core = [
        ("run.started", {"task": "t"}),
        ("model.responded", {"text": "", "tool_calls": calls, "termination": "tool_request"}),
        ("action.completed", {"call_id": "c1", "tool": "bash", "ok": True, "result": {"content": "done"}}),
        ("model.responded", {"text": "ok", "tool_calls": [], "termination": "end_turn"}),
    ]
    noise = [(k, {"anything": 1}) for k in sorted(PASSED_OVER)]
    mixed = [core[0], *noise, core[1], *noise, core[2], *noise, core[3], *noise]

    def built(log: list[tuple[str, dict[str, object]]]) -> list[object]:
        events = [Event("r", i, "", kind, payload) for i, (kind, payload) in enumerate(log)]
        return [(m.role, m.content, m.tool_call_id) for m in Transcript(env).feed(events).messages()]

    assert built(mixed) == built(core) and len(built(core)) == 6  # with the no-tool-call note
