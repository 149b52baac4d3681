"""The pure parts of one model call: the events that record it, made from what the call gave.

:meth:`tether.kernel.runtime.Runtime.call_model` does the effects (the prompt, the provider, the appends); what
it records is decided here from values alone, so the shape of a recorded turn can be read (and tested) apart
from the provider and the store.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace

from tether.canonical import content_hash
from tether.errors import ProviderError
from tether.events.kinds import ActionInvalid, ActionProposed, ModelFailed, ModelResponded
from tether.events.kinds_kernel import ModelRequested, ModelTruncated
from tether.events.payload import Payload
from tether.models.base import Model, ModelResponse, ToolCall, Usage
from tether.models.window import OutputBudget, estimate_tokens
from tether.state import Action

from .budgets import CallCap
from .manifest import Counted, Record, as_payload
from .stops import WINDOW_SETTING

#: Why a call in a reply cut off at the output limit does not run (its arguments may be cut off too).
TRUNCATED_CALL = (
    "not run: your reply was cut off at the token limit (max_tokens {max_tokens}), so this call's arguments may "
    "be incomplete; repeat it in full if it is still needed"
)

#: Why a call in a refused reply does not run: the provider filtered or stopped the reply (OpenAI's
#: ``content_filter`` or ``message.refusal``, Anthropic's ``refusal`` stop), so the call may be partial and is not
#: one the model was let finish. Fail closed: the run then stops for a human, as for any refusal.
REFUSED_CALL = "not run: the provider refused or filtered this reply, so its calls were not run"


#: Why a call in a reply under a stop word tether does not know (vLLM's ``abort``, OpenRouter's ``error``, Anthropic's
#: ``pause_turn``, …) does not run: only the words :mod:`tether.models.termination` lists say the calls are meant;
#: any other says the reply ended some other way, so its calls may be partial. Fail closed: the run stops for a human.
UNMEANT_CALL = (
    "not run: the provider ended this reply with stop reason {reason!r}, which does not say its calls are meant"
)


#: Why a call that repeats one an earlier reply carried (its id, tool and arguments) does not run: a server or a
#: proxy replaying a reply. A model calling again gets a new id from any server that sends ids; a server that sends
#: none gets a fresh id from the host each time, so its calls never look replayed.
REPLAYED_CALL = (
    "not run: this call repeats call {id!r} of turn {turn} (the same id, tool and arguments), as a server replaying "
    "an earlier reply sends it; it ran then. Call the tool again if you mean to run it again"
)


def window_setting(model: Model) -> str:
    """Where the model's server sets its context size, for the messages that tell a human to raise it (a model
    without a profile: the generic words)."""
    setting: str = getattr(getattr(model, "profile", None), "window_setting", WINDOW_SETTING)
    return setting


def requested(
    turn: int, model: str, prompt: Counted, budget: OutputBudget, cap: CallCap, kept: int, new: list[Record]
) -> ModelRequested:
    """``model.requested``: what is about to be sent and what it may cost at most, written before the call so a
    crash during it leaves the request on record; the manifest holds only the records the previous call's did
    not (``kept`` of them are shared)."""
    return ModelRequested(
        turn=turn,
        model=model,
        n_messages=len(prompt.messages),
        max_tokens=cap.max_tokens,
        prompt_tokens_est=budget.prompt_tokens,
        capped_by=cap.capped_by,
        worst_case_usd=cap.worst_case_usd,
        counter=prompt.counter,
        tools_tokens=prompt.tools_tokens,
        manifest=as_payload(new),
        manifest_kept=kept,
    )


def failed(turn: int, model: str, e: ProviderError, setting: str) -> ModelFailed:
    """``model.failed``: the provider's error once the retries are spent, with what the control layer needs to
    tell a passing failure from one a human must fix (a window the provider stated, and where it is set)."""
    return ModelFailed(
        turn=turn,
        model=model,
        error=str(e),
        transient=e.transient,
        status=e.status,
        attempts=e.attempts,
        failure=e.failure,
        window=getattr(e, "window", None),
        window_setting=setting,
    )


def fresh_ids(turn: int, tool_calls: Sequence[ToolCall], known: Mapping[str, Action]) -> list[tuple[str, ToolCall]]:
    """Each call with the id it is recorded under: its own, unless it is empty or already taken (by an earlier
    call of the run, in ``known``, or of this response), when it gets a fresh one, so an id names one call.

    A call the reply repeats whole (its id, name and arguments again: a server or a proxy joining a stream that
    sends a call twice) is one call and is kept once, so its side effect runs once. A call that repeats one an
    earlier reply carried is kept under a fresh id with :data:`REPLAYED_CALL` as its problem: never run twice.

    ``known`` is looked up, never copied: a copy of the run's ids at every step would grow with the run."""
    seen = set[str]()
    sent: list[ToolCall] = []
    calls = []
    for i, c in enumerate(tool_calls):
        if c.id and c in sent:  # the same call again, under its own id
            continue
        sent.append(c)
        earlier = known.get(c.id) if c.id else None
        if (
            earlier is not None
            and not c.problem
            and (earlier.tool, earlier.args_hash) == (c.name, content_hash(c.args))
        ):
            c = replace(c, problem=REPLAYED_CALL.format(id=c.id, turn=earlier.turn))
        taken = not c.id or earlier is not None or c.id in seen
        call_id = f"t{turn}_{i}_{uuid.uuid4().hex[:6]}" if taken else c.id
        seen.add(call_id)
        calls.append((call_id, c))
    return calls


def counted_usage(response: ModelResponse, prompt_tokens: int) -> Usage:
    """The response's usage; when the provider reported none, an estimate (the prompt's, and the reply's text
    and calls counted), marked as one, so the budgets count the call all the same."""
    usage = response.usage
    if usage.reported:
        return usage
    written = response.text + "".join(c.name + json.dumps(c.args) for c in response.tool_calls)
    return Usage(prompt_tokens, estimate_tokens(written), reported=False)


def responded(
    turn: int,
    model: str,
    response: ModelResponse,
    calls: Sequence[tuple[str, ToolCall]],
    usage: Usage,
    cost: float,
    attempts: int,
    max_tokens: int,
) -> list[Payload]:
    """A turn's events, appended together (a turn is recorded whole or not at all): ``model.responded``, an
    ``action.proposed`` per call, an ``action.invalid`` for each call that cannot run (the adapter's problem,
    a reply cut off at ``max_tokens``: its arguments may be cut too, a refused reply, or one under a stop word that
    does not say its calls are meant (``termination`` ``unknown``); told to the model as the
    call's result, never executed), and ``model.truncated`` when the reply was cut off."""
    batch: list[Payload] = [
        ModelResponded(
            turn=turn,
            model=model,
            text=response.text,
            tool_calls=[{"id": call_id, "name": c.name, "args": c.args} for call_id, c in calls],
            termination=response.termination,
            raw_stop_reason=response.raw_stop_reason,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            usage_reported=usage.reported,
            cost_usd=cost,
            attempts=attempts,
        )
    ]
    cut_off = response.termination == "truncated"
    refused = REFUSED_CALL if response.termination == "refusal" else ""
    if response.termination == "unknown":
        refused = UNMEANT_CALL.format(reason=response.raw_stop_reason)
    for call_id, c in calls:
        batch.append(
            ActionProposed(call_id=call_id, tool=c.name, args=c.args, args_hash=content_hash(c.args), turn=turn)
        )
        problem = c.problem or (TRUNCATED_CALL.format(max_tokens=max_tokens) if cut_off else "") or refused
        if problem:
            batch.append(ActionInvalid(call_id=call_id, tool=c.name, error=problem))
    if cut_off:
        batch.append(ModelTruncated(turn=turn, max_tokens=max_tokens, not_run=[i for i, _ in calls]))
    return batch
