"""kernel/turn.py: what one model call records, from values alone (no provider, no store)."""

from __future__ import annotations

from tether.events.kinds import ActionInvalid, ActionProposed, ModelResponded
from tether.events.kinds_kernel import ModelTruncated
from tether.kernel.turn import counted_usage, fresh_ids, responded
from tether.models.base import ModelResponse, ToolCall, Usage
from tether.state import Action


def reply(*calls: ToolCall, termination: str = "tool_request", usage: Usage | None = None) -> ModelResponse:
    return ModelResponse(
        text="ok",
        tool_calls=calls,
        termination=termination,  # type: ignore[arg-type]
        raw_stop_reason=None,
        usage=usage or Usage(10, 5),
        model="m",
    )


def test_an_id_names_one_call_empty_repeated_in_the_run_or_in_the_reply_ones_get_fresh_ids() -> None:
    calls = [ToolCall("", "a"), ToolCall("old", "b"), ToolCall("x", "c"), ToolCall("x", "d"), ToolCall("y", "e")]
    ids = [call_id for call_id, _ in fresh_ids(3, calls, {"old": Action("old", "x", {}, "h", 0, 0)})]
    assert ids[2] == "x" and ids[4] == "y"
    assert all(ids[i].startswith(f"t3_{i}_") for i in (0, 1, 3))
    assert len(set(ids)) == len(ids)


def test_a_fresh_id_that_a_later_call_of_the_reply_names_is_not_reused() -> None:
    first = fresh_ids(1, [ToolCall("", "a")], {})[0][0]
    ids = [i for i, _ in fresh_ids(1, [ToolCall(first, "a"), ToolCall(first, "b")], {})]
    assert ids[0] == first and ids[1] != first


def test_usage_not_reported_is_an_estimate_marked_as_one() -> None:
    reported = reply(usage=Usage(10, 5))
    assert counted_usage(reported, 999) is reported.usage
    estimated = counted_usage(reply(ToolCall("i", "bash", {"cmd": "ls"}), usage=Usage(reported=False)), 123)
    assert estimated.input_tokens == 123 and estimated.output_tokens > 0 and not estimated.reported


def test_a_cut_off_reply_records_every_call_as_invalid_and_none_runs() -> None:
    calls = fresh_ids(2, [ToolCall("a", "bash", {"cmd": "rm -"}), ToolCall("b", "x", problem="no name")], {})
    batch = responded(2, "m", reply(*(c for _, c in calls), termination="truncated"), calls, Usage(1, 2), 0.5, 1, 64)
    kinds = [type(p) for p in batch]
    assert kinds == [ModelResponded, ActionProposed, ActionInvalid, ActionProposed, ActionInvalid, ModelTruncated]
    invalid = [p for p in batch if isinstance(p, ActionInvalid)]
    assert "max_tokens 64" in invalid[0].error and invalid[1].error == "no name"  # the adapter's own word first
    assert batch[-1] == ModelTruncated(turn=2, max_tokens=64, not_run=["a", "b"])


def test_a_complete_reply_records_only_the_calls_with_a_problem_as_invalid() -> None:
    calls = fresh_ids(0, [ToolCall("a", "bash", {"cmd": "ls"}), ToolCall("b", "", problem="no name")], {})
    batch = responded(0, "m", reply(*(c for _, c in calls)), calls, Usage(1, 2), 0.0, 2, 64)
    assert [type(p) for p in batch] == [ModelResponded, ActionProposed, ActionProposed, ActionInvalid]
    head = batch[0]
    assert isinstance(head, ModelResponded) and head.attempts == 2 and head.cost_usd == 0.0
    assert [(t.id, t.name, t.args) for t in head.tool_calls] == [("a", "bash", {"cmd": "ls"}), ("b", "", {})]


def test_a_refused_reply_records_every_call_as_invalid_and_none_runs() -> None:
    """A refusal (OpenAI's content_filter or message.refusal, Anthropic's refusal stop) with calls in it: the provider
    stopped or filtered the reply, so its calls may be partial and are not what the model was let finish."""
    calls = fresh_ids(4, [ToolCall("a", "bash", {"cmd": "curl x | sh"}), ToolCall("b", "x", problem="no name")], {})
    batch = responded(4, "m", reply(*(c for _, c in calls), termination="refusal"), calls, Usage(1, 2), 0.0, 1, 64)
    assert [type(p) for p in batch] == [ModelResponded, ActionProposed, ActionInvalid, ActionProposed, ActionInvalid]
    invalid = [p for p in batch if isinstance(p, ActionInvalid)]
    assert "refused" in invalid[0].error and invalid[1].error == "no name"


def test_a_call_sent_twice_in_one_reply_under_one_id_is_one_call() -> None:
    """Same id, name and arguments twice in a reply (a server or proxy that repeats a call): run once. The same id
    with other content is another call and gets a fresh id, as before."""
    echo = ToolCall("a", "bash", {"cmd": "echo x >> log"})
    calls = fresh_ids(1, [echo, ToolCall("b", "read"), echo, ToolCall("a", "bash", {"cmd": "ls"}), echo], {})
    assert [(i, c.args) for i, c in calls][:2] == [("a", {"cmd": "echo x >> log"}), ("b", {})]
    assert len(calls) == 3 and calls[2][0] not in ("a", "b") and calls[2][1].args == {"cmd": "ls"}
