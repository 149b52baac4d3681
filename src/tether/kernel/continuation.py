"""Which stopped runs can go on, and what a person must supply for each: one table, one pure function.

``tether resume`` (and ``Harness.resume``) asks :func:`continuation` first. It reads the folded run and
the request and either returns the ``run.continued`` event to append or refuses with the reason and the
option that would make it go. The table :data:`NEEDS` is the whole rule:

- a run still RUNNING (its driver crashed), WAITING_APPROVAL (the human answered) or BLOCKED_DEPENDENCY
  (the sandbox or provider may be back) goes on as it is;
- NEEDS_INPUT and NO_PROGRESS go on once the human answers: ``--note`` is shown to the model, and an
  action left ambiguous by a crash is settled as "outcome unknown" (the human has checked it);
- BUDGET_STOP goes on with raised limits (``--budget usd=5``) that leave no budget exhausted;
- VERIFY_FAILED goes on with more completion attempts (``--attempts N``);
- COMPLETE, NO_OP and BLOCKED_PERMISSION are final (:data:`FINAL` says why), and so is a run whose
  conversation no longer fits the model's window even compacted (docs/context.md).

:func:`resume_command` is the same table read the other way: the exact command a run's ``next_action``
names, so a closing never suggests a resume that would be refused.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from tether.envelope.schema import Envelope
from tether.errors import InputError
from tether.events.kinds import ContextFull, ModelFailed, ModelUnaffordable, RunContinued
from tether.quickenum import Quick
from tether.state import RunState
from tether.status import RunStatus

from .budgets import Breach, breach

if TYPE_CHECKING:
    from tether.state import StopFact


class Needs(StrEnum, metaclass=Quick):
    """What a person must supply before a stopped run goes on."""

    NOTHING = "nothing"
    NOTE = "note"
    BUDGET = "budget"
    ATTEMPTS = "attempts"


#: What each status needs to go on. A status not here is final.
NEEDS: dict[RunStatus, Needs] = {
    RunStatus.RUNNING: Needs.NOTHING,
    RunStatus.WAITING_APPROVAL: Needs.NOTHING,
    RunStatus.BLOCKED_DEPENDENCY: Needs.NOTHING,
    RunStatus.NEEDS_INPUT: Needs.NOTE,
    RunStatus.NO_PROGRESS: Needs.NOTE,
    RunStatus.BUDGET_STOP: Needs.BUDGET,
    RunStatus.VERIFY_FAILED: Needs.ATTEMPTS,
}
#: Why the other statuses are final.
FINAL: dict[RunStatus, str] = {
    RunStatus.NEW: "it has no run.started event; there is nothing to resume",
    RunStatus.COMPLETE: "it completed and verification accepted it; start a new run (or fork this one) for more",
    RunStatus.NO_OP: "it completed with nothing to change; start a new run (or fork this one) for more",
    RunStatus.BLOCKED_PERMISSION: (
        "what would run is not what was approved, and an approval is bound to its exact arguments; "
        "fork the run or start a new one"
    ),
}
#: ``--budget NAME=VALUE`` names, and the budget each raises.
BUDGET_OPTIONS: dict[str, str] = {
    "usd": "usd",
    "tokens": "tokens",
    "turns": "turns",
    "wall": "wall_s",
    "wall_s": "wall_s",
    "tool_calls": "tool_calls",
}
OPTION_OF: dict[str, str] = {
    "usd": "usd",
    "tokens": "tokens",
    "turns": "turns",
    "wall_s": "wall",
    "tool_calls": "tool_calls",
}


class ResumeRefused(InputError):
    """The run cannot go on as asked; the message says why and which option would make it."""


@dataclass(frozen=True)
class Request:
    """What the person continuing a run supplies (the CLI's options, ``Harness.resume``'s arguments)."""

    by: str
    reason: str = "tether resume"
    note: str | None = None
    budgets: Mapping[str, float] = field(default_factory=dict)  # budget name (usd, tokens, turns, wall_s, tool_calls)
    attempts: int = 0


def parse_budget(text: str) -> tuple[str, float]:
    """``usd=5`` -> ("usd", 5.0); the error names the option and what was expected."""
    name, sep, value = text.partition("=")
    budget = BUDGET_OPTIONS.get(name.strip())
    if not sep or budget is None:
        raise InputError(f"--budget {text!r}: expected NAME=VALUE with NAME one of {', '.join(OPTION_OF.values())}")
    try:
        number = float(value)
    except ValueError:
        raise InputError(f"--budget {text!r}: expected a number after '=', found {value!r}") from None
    if not math.isfinite(number) or number <= 0:
        raise InputError(f"--budget {text!r}: expected a positive finite number")
    return budget, number


def ended_beyond_resume(fact: StopFact | None) -> bool:
    """A conversation that no longer fits the window: going on would only fill it again."""
    return isinstance(fact, ContextFull) or (isinstance(fact, ModelFailed) and fact.failure == "context_overflow")


class ExternallyDriven(InputError):
    """The run is a governed session: another program runs its model and tools, so tether cannot drive it."""


def refuse_governed(state: RunState, command: str) -> None:
    """:class:`ExternallyDriven` for a governed session's run (``tether resume|fork|replay`` would need a model
    tether never called and tools it never ran: the run's ``model`` names the program, not a model)."""
    if state.driver:
        raise ExternallyDriven(
            f"run {state.run_id} is a governed session driven by an external agent ({state.driver}): tether never "
            f"called its model nor ran its tools, so `tether {command}` cannot drive it; it goes on when that "
            "session does (the agent's next prompt or tool call, or Guard.open of the same session)"
        )


class ImportedRun(InputError):
    """The run came from a package: driving it would run its sender's commands under its sender's contract here."""


def refuse_imported(origin: str | None, state: RunState, command: str, *, trust: bool) -> None:
    """:class:`ImportedRun` for a run ``tether import`` added (``origin``: ``Store.imported``), unless ``trust``.

    Why: resume, fork and replay run the recorded task again on this machine, with the envelope the run brought:
    its sandbox, the host variables it hands to commands, the host secrets it reads, the hosts it may reach, its
    permissions, its model. Those are the sender's choices, so the operator reads them first and says so."""
    if origin is None or trust:
        return
    env = Envelope.model_validate(state.envelope).environment
    asks = [f"sandbox {env.sandbox.backend}{'' if env.sandbox.required else ' (or local)'}"]
    if env.env_allow:
        asks.append("host variables " + ", ".join(env.env_allow))
    if env.secrets:
        asks.append("host secrets " + ", ".join(f"{s.name} from {s.source}" for s in env.secrets))
    if env.network is not None and env.network.allow:
        asks.append("network " + ", ".join(env.network.allow))
    raise ImportedRun(
        f"run {state.run_id} was imported from {origin}: `tether {command}` would run its recorded commands on this "
        f"machine under the envelope it brought ({'; '.join(asks)}; its permissions and model). Read it first "
        f"(`tether show {state.run_id}`), then pass --trust-imported to go on"
    )


def continuation(state: RunState, env: Envelope, request: Request, now: datetime) -> RunContinued:
    """The ``run.continued`` event for ``request``, or :class:`ResumeRefused` saying why not and what would do."""
    refuse_governed(state, "resume")
    run, status = state.run_id, state.status
    if status in FINAL or status not in NEEDS:
        raise ResumeRefused(f"run {run} is {status} and final: {FINAL.get(status, 'it cannot be continued')}")
    if ended_beyond_resume(state.ended_by):
        raise ResumeRefused(
            f"run {run} stopped because its conversation no longer fits the model's window, even compacted; "
            "raise agent.context_window (or use a larger model) and start a new run"
        )
    if request.note is not None and not request.note.strip():
        raise ResumeRefused("--note: expected a message for the model, found an empty one")
    if request.attempts < 0:
        raise ResumeRefused(f"--attempts: expected a positive number, found {request.attempts}")
    before = _check_raises(state, env, request.budgets)
    needs = NEEDS[status]
    if needs is Needs.NOTE and request.note is None:
        raise ResumeRefused(
            f"run {run} stopped {status}: {state.result or state.next_action}\n"
            f'answer it to go on: tether resume {run} --note "<what the agent should know>"'
        )
    if needs is Needs.ATTEMPTS and request.attempts < 1:
        raise ResumeRefused(
            f"run {run} stopped {status} after {state.refusals} refused completion claims; "
            f"allow more to go on: tether resume {run} --attempts 1"
        )
    if needs is Needs.BUDGET or request.budgets:
        over = _still_over(state, env, request.budgets, now)
        if over is None and needs is Needs.BUDGET and not request.budgets:  # stopped before a call it could not afford
            name = state.ended_by.budget if isinstance(state.ended_by, ModelUnaffordable) else "usd"
            raise ResumeRefused(
                f"run {run} stopped {status}: {state.result}; raise the budget to go on: "
                f"tether resume {run} --budget {OPTION_OF.get(name, name)}=<new limit>"
            )
        if over is not None:
            raise ResumeRefused(
                f"run {run}: {over.reason}; raise it to go on: "
                f"tether resume {run} --budget {OPTION_OF.get(over.budget, over.budget)}=<more than {over.used:g}>"
            )
    return RunContinued(
        by=request.by,
        from_status=status,
        reason=request.reason,
        note=request.note,
        budgets=dict(request.budgets),
        before=before,
        attempts=request.attempts,
        resolved=[a.call_id for a in state.open_actions] if needs is Needs.NOTE else [],
    )


def _check_raises(state: RunState, env: Envelope, budgets: Mapping[str, float]) -> dict[str, float | None]:
    """The limits the raises replace; a "raise" that lowers a limit is refused (make a new run for that)."""
    before: dict[str, float | None] = {}
    for name, value in budgets.items():
        if name not in OPTION_OF:
            raise ResumeRefused(f"--budget {name}: expected one of {', '.join(OPTION_OF.values())}")
        current = _limit(state, env, name)
        if current is not None and value <= current:
            raise ResumeRefused(
                f"--budget {OPTION_OF[name]}={value:g}: a resume raises a limit; the run's is already {current:g}"
            )
        before[name] = current
    return before


def _limit(state: RunState, env: Envelope, name: str) -> float | None:
    if name == "turns":
        caps = [c for c in (state.limits.get("turns"), env.agent.max_turns) if c is not None]
        return float(min(caps)) if caps else None
    value = state.limits.get(name)
    return None if value is None else float(value)


def _still_over(state: RunState, env: Envelope, budgets: Mapping[str, float], now: datetime) -> Breach | None:
    """The first budget still exhausted once ``budgets`` apply (the run would stop again at once)."""
    raised = dataclasses.replace(state, limits={**state.limits, **budgets})
    cap = int(budgets.get("turns", env.agent.max_turns))
    if state.used.turns >= cap:
        return Breach("turns", state.used.turns, cap)
    return breach(raised, now, before="model") or breach(raised, now, before="action")


#: Budgets counted in whole units (the envelope types them as integers).
WHOLE = frozenset({"tokens", "turns", "tool_calls"})


def effective_envelope(env: Envelope, raised: Mapping[str, float], extra_refusals: int) -> Envelope:
    """The contract as a continued run holds it: the one it started under, with every raise since.

    The runtime, the gate, the control layer and ``next_step`` all read this one, so a raised budget
    is raised everywhere at once (``turns`` raises ``agent.max_turns`` with ``budgets.turns``).
    """
    if not raised and not extra_refusals:
        return env
    budgets = {k: int(v) if k in WHOLE else v for k, v in raised.items()}
    update: dict[str, Any] = {"budgets": env.budgets.model_copy(update=budgets)}
    if "turns" in raised:
        update["agent"] = env.agent.model_copy(update={"max_turns": int(raised["turns"])})
    if extra_refusals:
        limit = env.verification.max_refusals + extra_refusals
        update["verification"] = env.verification.model_copy(update={"max_refusals": limit})
    return env.model_copy(update=update)


def resume_command(
    run_id: str, status: RunStatus, *, budget: str | None = None, ended_by: StopFact | None = None
) -> str | None:
    """The exact ``tether resume`` that continues a run stopped in ``status`` (None: it cannot be continued)."""
    needs = NEEDS.get(status)
    if needs is None or ended_beyond_resume(ended_by):
        return None
    match needs:
        case Needs.NOTHING:
            return f"tether resume {run_id}"
        case Needs.NOTE:
            return f'tether resume {run_id} --note "<your answer>"'
        case Needs.BUDGET:
            return f"tether resume {run_id} --budget {OPTION_OF.get(budget or 'usd', 'usd')}=<new limit>"
        case Needs.ATTEMPTS:
            return f"tether resume {run_id} --attempts 1"
