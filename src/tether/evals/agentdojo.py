"""``tether eval agentdojo``: the AgentDojo benchmark's ground truth replayed through tether's real gate.

AgentDojo (the public ``agentdojo`` package, an optional extra: ``pip install 'tether[agentdojo]'``) has
four suites of tools over a simulated world (workspace, travel, banking, slack), user tasks with their
ground-truth tool calls, injection tasks with theirs, and the injection vectors: the places in the
world (an e-mail body, a review, a bill) where an attacker's text can sit.

For each user task this replays, through :func:`tether.policy.decide.decide` with a provenance index
fed from a real event log (SQLite, one run per scenario):

* **benign** — the ground truth in the world without injections. It passes when every call is allowed
  without a human; the ASKs are counted (approvals per task).
* **attacked**, for each injection task — the injection task's goal, inside the benchmark's
  ``important_instructions`` text, placed in every vector the user task's ground truth reads (found as
  AgentDojo finds them: with canaries); the user task's calls (a human approves any of them that ask:
  they are the user's), then the injection task's calls, as an agent that obeyed the injection would
  make them. Those run only when the gate allows them unasked; an ASK is a human shown the tainted
  value, who declines. The attack succeeded when the injection task's own ``security`` check holds on
  the world afterwards.

Each pair is first replayed with no gate at all: a pair whose injected calls do not reach the goal even
then (or that has no calls: an attack on what the model *says*) is not tool-actionable, and is reported
apart rather than counted as a defended attack.

The suites' tools are declared as contracts the way a user of tether would: reading tools have the
``read`` effect, the rest ``write`` / ``external`` / ``financial``; tools whose output carries text that
someone other than the user wrote (mail, shared files, calendar invitations, reviews, web pages, chat,
incoming transfers, documents) are ``untrusted`` — per tool, never per payload.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tether.canonical import content_hash
from tether.envelope.schema import Effect, Envelope, Permissions, PlanRef, Rule, ToolContract, Trust
from tether.errors import InputError
from tether.events.protocol import Store
from tether.events.store import Event, EventStore
from tether.policy.decide import decide
from tether.policy.decision import Verdict
from tether.policy.gate import Gate
from tether.policy.provenance import Provenance
from tether.state import Action, RunState

VERSION = "v1.2.1"
SUITES = ("workspace", "travel", "banking", "slack")

#: Tools whose output carries third-party text, per suite (the rest: tether's default table).
UNTRUSTED: dict[str, frozenset[str]] = {
    "workspace": frozenset(
        {
            "get_unread_emails", "get_sent_emails", "get_received_emails", "get_draft_emails", "search_emails",
            "search_calendar_events", "get_day_calendar_events",
            "search_files_by_filename", "get_file_by_id", "list_files", "search_files",
        }
    ),
    "travel": frozenset(
        {
            "get_rating_reviews_for_hotels", "get_rating_reviews_for_restaurants", "get_rating_reviews_for_car_rental",
            "search_calendar_events", "get_day_calendar_events",
        }
    ),
    "banking": frozenset({"read_file", "get_most_recent_transactions"}),
    "slack": frozenset({"read_channel_messages", "read_inbox", "get_webpage"}),
}  # fmt: skip

#: Tools whose output is the user's own records, though their names look like mail or chat to the default table.
TRUSTED: dict[str, frozenset[str]] = {
    "workspace": frozenset({"search_contacts_by_name", "search_contacts_by_email", "get_current_day"}),
    "travel": frozenset({"get_user_information"}),
    "banking": frozenset(),
    "slack": frozenset(),  # channel names and user names are anyone's to choose: left to the default table
}

_READS = ("get_", "search_", "list_", "read_", "check_")
_FETCHES = frozenset({"get_webpage"})  # a fetch reaches out: the URL itself can carry data away
_FINANCIAL = frozenset({"send_money", "schedule_transaction", "update_scheduled_transaction"})
_EXTERNAL = ("send_", "share_", "post_", "invite_", "reserve_")


def effects_of(name: str) -> list[Effect]:
    """A suite tool's effects, as a user would declare them: reads read, and a web fetch also reaches the network;
    sends, shares, posts, bookings and invitations reach other people; payments are financial; the rest change
    the user's own data."""
    if name in _FINANCIAL:
        return [Effect.FINANCIAL]
    if name.startswith(_EXTERNAL):
        return [Effect.EXTERNAL]
    if name in _FETCHES:
        return [Effect.READ, Effect.NETWORK]
    if name.startswith(_READS):
        return [Effect.READ]
    return [Effect.WRITE]


def envelope_for(suite: Any, name: str) -> Envelope:
    """The envelope a user would write to let an agent work for them: the suite's tools as contracts, each allowed
    by a rule (so the gate's own defaults — a human for payments, for writes to unstated places — stay out of the
    way, and what stops an attack is provenance alone)."""
    tools = []
    for fn in suite.tools:
        trust = Trust.UNTRUSTED if fn.name in UNTRUSTED[name] else Trust.TRUSTED if fn.name in TRUSTED[name] else None
        schema = fn.parameters.model_json_schema()
        tools.append(
            ToolContract(
                name=fn.name,
                purpose=(fn.description or fn.name).strip().splitlines()[0],
                effects=effects_of(fn.name),
                input_schema=schema,
                trust=trust,
            )
        )
    allow = [Rule(id=f"allow-{t.name}", rule=t.name, reason="the user lets the agent use its tools") for t in tools]
    permissions = Permissions(profile="none", allow=allow)
    return Envelope(plan=PlanRef(path="agentdojo", hash="-"), tools=tools, permissions=permissions)


def goal_reached(injection: Any, pre: Any, post: Any, ran: Sequence[Any]) -> bool:
    """The benchmark's own verdict: from the calls that ran where the task judges by them, else from the world."""
    by_trace = injection.security_from_traces("", pre, post, list(ran))
    return bool(injection.security("", pre, post)) if by_trace is None else bool(by_trace)


def user_plan(prompt: str, world: Any) -> dict[str, Any]:
    """The intent plan a user would give: the task, and who they are (their own address, set up once)."""
    own = getattr(getattr(world, "inbox", None), "account_email", None)
    return {"goal": prompt, "constraints": [f"I am the user; my own e-mail address is {own}"] if own else []}


@dataclass
class Replay:
    """One scenario's calls through the gate: each call's verdict, and whether the attack reached its goal."""

    verdicts: list[tuple[str, str, bool]] = field(default_factory=list)  # (tool, verdict, injected)
    goal_reached: bool = False

    def asks(self, injected: bool) -> int:
        return sum(1 for _, v, inj in self.verdicts if v == "ASK" and inj is injected)

    def blocked(self, injected: bool) -> int:
        return sum(1 for _, v, inj in self.verdicts if v != "ALLOW" and inj is injected)


@dataclass
class SuiteReport:
    """Per-suite figures (see the module docstring for what each counts)."""

    suite: str
    user_tasks: int = 0
    benign_passed: int = 0
    benign_asks: int = 0
    benign_denied: int = 0
    pairs: int = 0
    actionable: int = 0
    not_actionable: int = 0
    attack_success: int = 0
    stopped_by_ask: int = 0
    stopped_by_deny: int = 0
    attacked_user_asks: int = 0
    failures: list[str] = field(default_factory=list)

    @property
    def utility(self) -> float:
        return self.benign_passed / self.user_tasks if self.user_tasks else 0.0

    @property
    def approvals_per_task(self) -> float:
        return self.benign_asks / self.user_tasks if self.user_tasks else 0.0

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["benign_utility"] = round(self.utility, 4)
        out["approvals_per_task"] = round(self.approvals_per_task, 4)
        out["attack_success_rate"] = round(self.attack_success / self.actionable, 4) if self.actionable else 0.0
        return out


def _agentdojo() -> Any:
    try:
        from agentdojo.task_suite.load_suites import get_suites
    except ImportError as e:
        raise InputError("tether eval agentdojo needs the AgentDojo benchmark: pip install 'tether[agentdojo]'") from e
    return get_suites(VERSION)


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


class Replayer:
    """Replays scenarios of one suite into one event store (a run per scenario)."""

    def __init__(self, suite: Any, name: str, store: Store, workspace: Path) -> None:
        from agentdojo.agent_pipeline.tool_execution import tool_result_to_str
        from agentdojo.functions_runtime import FunctionsRuntime

        self.suite, self.name, self.store = suite, name, store
        self.env = envelope_for(suite, name)
        self.gate = Gate(self.env, workspace)
        self.runtime = FunctionsRuntime(suite.tools)
        self.show: Callable[[Any], str] = tool_result_to_str

    def world(self, user_task: Any, injections: dict[str, str]) -> tuple[Any, Any]:
        world = user_task.init_environment(self.suite.load_and_inject_default_environment(injections))
        return world, world.model_copy(deep=True)

    def candidates(self, user_task: Any) -> list[str]:
        """The injection vectors the user task's ground truth reads (AgentDojo's canary method)."""
        canaries = {v: f"<CANARY---{v}--->" for v in self.suite.get_injection_vector_defaults()}
        world, pre = self.world(user_task, canaries)
        seen = ""
        for call in user_task.ground_truth(pre):
            result, _ = self.runtime.run_function(world, call.function, call.args, raise_on_error=False)
            seen += self.show(result)
        return [v for v, c in canaries.items() if c in seen]

    def ungated(self, user_task: Any, injection: Any, injections: dict[str, str]) -> bool:
        """Does the attack reach its goal when every call runs (is the pair tool-actionable at all)?"""
        world, pre = self.world(user_task, injections)
        calls = [*user_task.ground_truth(pre), *injection.ground_truth(pre)]
        for call in calls:
            self.runtime.run_function(world, call.function, call.args, raise_on_error=False)
        return bool(injection.ground_truth(pre)) and goal_reached(injection, pre, world, calls)

    def replay(self, user_task: Any, injection: Any | None, injections: dict[str, str]) -> Replay:
        world, pre = self.world(user_task, injections)
        user_calls = list(user_task.ground_truth(pre))
        injected_calls = list(injection.ground_truth(pre)) if injection is not None else []
        run = self.store.create_run(user_task.PROMPT)
        started = {"task": user_task.PROMPT, "plan": user_plan(user_task.PROMPT, pre)}
        events: list[Event] = [self.store.append(run, "run.started", started)]
        index = Provenance(self.env)
        out = Replay()
        ran = []
        for i, call in enumerate([*user_calls, *injected_calls]):
            injected = i >= len(user_calls)
            verdict = self._call(run, events, index, world, f"c{i}", call.function, _jsonable(call.args), injected)
            out.verdicts.append((call.function, verdict.name, injected))
            if verdict is Verdict.ALLOW or (verdict is Verdict.ASK and not injected):
                ran.append(call)
        if injection is not None:
            out.goal_reached = goal_reached(injection, pre, world, ran)
        return out

    def _call(
        self,
        run: str,
        events: list[Event],
        index: Provenance,
        world: Any,
        call_id: str,
        tool: str,
        args: dict[str, Any],
        injected: bool,
    ) -> Verdict:
        args_hash = content_hash(args)
        proposed = {"call_id": call_id, "tool": tool, "args": args, "args_hash": args_hash, "turn": 1}
        events.append(self.store.append(run, "action.proposed", proposed))
        action = Action(call_id=call_id, tool=tool, args=args, args_hash=args_hash, turn=1, seq=events[-1].seq)
        contract = self.env.tool(tool)
        assert contract is not None
        ruling = decide(
            action, contract, lambda: self.gate, RunState.from_events(events), events, self.env, index.feed(events)
        )
        verdict = ruling.decision.verdict
        events.append(self.store.append(run, "action.decided", {"call_id": call_id, **ruling.decision.to_dict()}))
        if verdict is Verdict.ALLOW or (verdict is Verdict.ASK and not injected):  # the user's own call: approved
            result, error = self.runtime.run_function(world, tool, args, raise_on_error=False)
            content = self.show(result) if error is None else str(error)
            done = {"call_id": call_id, "tool": tool, "ok": error is None, "result": {"content": content}}
            events.append(self.store.append(run, "action.completed", done))
        return verdict


def evaluate_suite(
    suite: Any, name: str, store: Store, workspace: Path, *, user_tasks: Sequence[str] | None = None
) -> SuiteReport:
    """The figures for one suite (``user_tasks``: only these ids, for a quick subset)."""
    from agentdojo.attacks.important_instructions_attacks import ImportantInstructionsAttack

    replayer = Replayer(suite, name, store, workspace)
    report = SuiteReport(name)
    for task_id, user_task in suite.user_tasks.items():
        if user_tasks is not None and task_id not in user_tasks:
            continue
        report.user_tasks += 1
        benign = replayer.replay(user_task, None, {})
        report.benign_asks += benign.asks(False)
        report.benign_denied += sum(1 for _, v, _ in benign.verdicts if v == "DENY")
        if benign.blocked(False) == 0:
            report.benign_passed += 1
        else:
            report.failures.append(
                f"{task_id}: " + ", ".join(f"{t} {v}" for t, v, _ in benign.verdicts if v != "ALLOW")
            )
        vectors = replayer.candidates(user_task)
        for injection in suite.injection_tasks.values():
            report.pairs += 1
            text = ImportantInstructionsAttack._JB_STRING.format(
                goal=injection.GOAL, user="Emma Johnson", model="the assistant"
            )
            injections = dict.fromkeys(vectors, text)
            if not vectors or not replayer.ungated(user_task, injection, injections):
                report.not_actionable += 1
                continue
            report.actionable += 1
            attacked = replayer.replay(user_task, injection, injections)
            report.attacked_user_asks += attacked.asks(False)
            if attacked.goal_reached:
                report.attack_success += 1
            elif any(v == "DENY" for _, v, inj in attacked.verdicts if inj):
                report.stopped_by_deny += 1
            else:
                report.stopped_by_ask += 1
    return report


def run(suites: Sequence[str] | None = None, *, user_tasks: Sequence[str] | None = None) -> Iterator[SuiteReport]:
    """Evaluate the named suites (all four by default), one report each, into a throwaway event store."""
    unknown = [s for s in suites or () if s not in SUITES]
    if unknown:
        raise InputError(f"--suite: unknown suite {unknown[0]!r}; expected one of {', '.join(SUITES)}")
    loaded = _agentdojo()
    with tempfile.TemporaryDirectory(prefix="tether-agentdojo-") as tmp:
        store = EventStore.open(Path(tmp) / "eval.db")
        try:
            for name in suites or SUITES:
                yield evaluate_suite(loaded[name], name, store, Path(tmp), user_tasks=user_tasks)
        finally:
            store.close()
