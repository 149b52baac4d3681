"""The one decider: a proposed call and the run so far in, the final typed :class:`Decision` out.

"Where is this verdict decided?" — here. Four layers, in this order; each may settle the verdict:

1. **repeat denial** — an identical call (same tool, same argument hash) that a rule or a human
   denied earlier is denied again without asking the gate (``kernel:denied-before``). Denials that
   came from the run's passing condition (control state, execution review, this layer) are not final:
   the same call may be right once the run has recovered.
2. **external outputs** — a call whose tool reaches outside the workspace (its contract's effects: network,
   shared, published, financial, credentialed) is denied once the run's external outputs reach
   ``outputs.max_external`` (``outputs:max-external``, naming the limit). The count is the run's
   executed external calls plus those already allowed or waiting for a human, so two calls in one turn
   cannot both slip under the limit. Checked before the gate: no human is asked for a call that cannot run.
3. **the gate** (:class:`tether.policy.gate.Gate`) — envelope rules, the built-in profile, places,
   effect defaults and the control state. A gate that cannot even be built is an ASK (``gate:error``):
   a broken gate must not kill the run, a human decides instead.
4. **taint** (:func:`tether.policy.taint.escalate`) — a call beyond reading whose arguments hold a value
   that first appeared in untrusted output, and not in the user's words (:mod:`tether.policy.provenance`),
   is escalated: DENY by an envelope rule ``when: tainted(args.NAME)``, else ASK, naming each value, its
   argument and the event that brought it (docs/trust.md).
5. **execution review** (:func:`tether.review.execution.review_action`) of an ALLOW whose effects go
   beyond reading: a refusal turns it into DENY (``review:gate``), or into ASK (``review:escalate``)
   once ``ESCALATE_AFTER`` reviews in a row have refused.

Pure apart from what the gate resolves on disk (symlinks): the kernel performs nothing here, it
records the :class:`Ruling` — the review's own event first, then ``action.decided``.
"""

from __future__ import annotations

from _collections_abc import Sequence  # collections.abc's, without the collections package

from tether.envelope.schema import Effect, Envelope, ToolContract
from tether.records import dataclass
from tether.review.execution import ESCALATE_AFTER, ReviewResult, review_action
from tether.state import Action, RunState
from tether.status import ActionStatus

from .decision import Decision, RuleMatch, Verdict
from .gate import Gate
from .provenance import Provenance
from .taint import escalate

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from collections.abc import Callable

    from tether.control.fold import History

#: Rule prefixes whose denials depend on the run's condition at the time, not on the call itself.
TRANSIENT_DENIALS = ("control:", "review:", "kernel:")


@dataclass(frozen=True)
class Ruling:
    """The final decision, and the execution review behind it when one ran (it is logged as ``review.gate``)."""

    decision: Decision
    review: ReviewResult | None = None


def decide(
    action: Action,
    contract: ToolContract,
    gate: Callable[[], Gate],
    state: RunState,
    events: History,
    env: Envelope,
    provenance: Provenance | None = None,
) -> Ruling:
    """The verdict on ``action`` (see the module docstring for the layers and their order).

    ``gate`` builds (or returns the cached) gate for the run's current control state and run rules;
    it is only called when the repeat-denial layer has not already settled the call. ``events`` is the
    run's log, or the control fold of it that the kernel keeps. ``provenance`` is the run's index, already
    fed the log (the kernel keeps one); without it the index is built here from the log's events.
    """
    earlier = denied_before(state, action)
    if earlier is not None:
        reason = f"an identical call ({earlier.call_id}) was denied: {earlier.reason}; it is not retried as-is"
        return Ruling(_single("kernel:denied-before", Verdict.DENY, reason))
    limit = external_limit(action, contract, state, env)
    if limit is not None:
        return Ruling(_single("outputs:max-external", Verdict.DENY, limit))
    decision = _gate(gate, action)
    if set(contract.effects) == {Effect.READ}:
        return Ruling(decision)
    if decision.verdict is not Verdict.DENY:
        index = provenance if provenance is not None else _provenance(events, env)
        decision = escalate(decision, action.tool, index.taints(action.args), env)
    if decision.verdict is not Verdict.ALLOW:
        return Ruling(decision)
    review = review_action(contract, action.args, events, env, state)
    return Ruling(decision if review.ok else _refused(decision, review, state.review_refusals + 1), review)


def _provenance(events: History, env: Envelope) -> Provenance:
    if not isinstance(events, Sequence):  # a fold keeps no events to build the index from
        raise TypeError("decide: pass the run's provenance index with a fold of its log")
    return Provenance(env).feed(events)


def denied_before(state: RunState, action: Action) -> Action | None:
    """An earlier identical call (same tool, same argument hash) that a rule or a human denied for good."""
    for other in state.same_calls.get((action.tool, action.args_hash), ()):  # the identical calls, oldest first
        if other.status is not ActionStatus.DENIED or state.actions.get(other.call_id) is not other:
            continue
        transient = other.deciding_rule.startswith(TRANSIENT_DENIALS) and other.approval_id is None
        if other.seq < action.seq and not transient:
            return other
    return None


#: Action statuses that mean the call ran, runs now, or will run once a human says yes.
COMMITTED = frozenset(
    {ActionStatus.DECIDED, ActionStatus.WAITING, ActionStatus.STARTED, ActionStatus.COMPLETED, ActionStatus.FAILED}
)


def external_limit(action: Action, contract: ToolContract, state: RunState, env: Envelope) -> str | None:
    """Why ``action`` would exceed ``outputs.max_external``, or None when it is not external or still fits."""
    limit = env.outputs.max_external
    if limit is None or not contract.external_output:
        return None
    committed = set(state.external_calls)
    for (status, tool), calls in state.calls_by.items():  # by (status, tool): no scan of every call of the run
        c = env.tool(tool) if status in COMMITTED else None
        if c is not None and c.external_output:
            committed.update(k for k in calls if k != action.call_id)
    if len(committed) < limit:
        return None
    effects = ", ".join(sorted(e.value for e in contract.effects))
    return (
        f"outputs.max_external is {limit} and the run has {len(committed)} external output(s) executed, allowed "
        f"or awaiting approval; {action.tool} ({effects}) would be one more"
    )


def _gate(gate: Callable[[], Gate], action: Action) -> Decision:
    try:
        return gate().decide(action.tool, action.args)
    except Exception as e:  # Gate.decide never raises; building the gate (bad run rules) may
        return _single("gate:error", Verdict.ASK, f"the gate failed ({type(e).__name__}: {e}); a human decides")


def _refused(allowed: Decision, review: ReviewResult, refusals: int) -> Decision:
    """The gate allowed, the execution review refused: deny, or ask a human once refusals repeat."""
    escalate = refusals >= ESCALATE_AFTER
    rule, verdict = ("review:escalate", Verdict.ASK) if escalate else ("review:gate", Verdict.DENY)
    reason = "; ".join(review.reasons[:3])
    if escalate:
        reason += f" ({ESCALATE_AFTER} consecutive review failures: a human decides)"
    return Decision(verdict, rule, reason, (*allowed.matches, RuleMatch(rule, verdict, reason)))


def _single(rule: str, verdict: Verdict, reason: str) -> Decision:
    m = RuleMatch(rule, verdict, reason)
    return Decision(verdict, rule, reason, (m,))
