"""Strict validation: the checks an envelope must pass before anything runs.

Schema validation (pydantic) answers "is this shaped like an envelope?". Strict
validation answers "is this a complete, honest contract?": bound to its plan,
unmodified since compiled, with every boundary, budget and approval stated.
Every problem is reported, each naming its JSON path, what was found and what
was expected.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from tether.errors import InputError, Problem

from .hashing import contract_hash, plan_hash
from .load import load_plan
from .risks import risky_settings
from .schema import ApprovalClass, Effect, Envelope, Risk

FULL_CONTRACT_FIELDS = ("timeout_s", "idempotent", "on_failure", "evidence", "rollback")


@dataclass(frozen=True)
class Accepted:
    """A risky setting the envelope accepts by an acknowledgement; recorded in ``run.started``."""

    risk: Risk
    path: str
    found: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"risk": self.risk.value, "path": self.path, "found": self.found, "reason": self.reason}


def strict_problems(envelope: Envelope, envelope_path: Path) -> list[Problem]:
    """All strict-validation problems of ``envelope`` (loaded from ``envelope_path``)."""
    return strict_check(envelope, envelope_path)[0]


def accepted_risks(envelope: Envelope, envelope_path: Path) -> list[Accepted]:
    """The risky settings ``envelope`` accepts by acknowledgement (shown in every run's header)."""
    return strict_check(envelope, envelope_path)[1]


def strict_check(envelope: Envelope, envelope_path: Path) -> tuple[list[Problem], list[Accepted]]:
    """Strict-validation problems, and the risks accepted by acknowledgement, of ``envelope``."""
    f = str(envelope_path)
    out: list[Problem] = []

    def add(path: str, found: object, expected: str) -> None:
        out.append(Problem(path, str(found), expected, f))

    # Binding: plan exists and matches; the contract was not edited after compiling.
    plan_file = (envelope_path.parent / envelope.plan.path).resolve()
    if not plan_file.is_file():
        add("$.plan.path", envelope.plan.path, f"an existing intent plan file (looked at {plan_file})")
    else:
        try:
            actual = plan_hash(load_plan(plan_file))
            if actual != envelope.plan.hash:
                add(
                    "$.plan.hash",
                    envelope.plan.hash,
                    f"{actual} (the plan changed since compiling; run tether compile)",
                )
        except InputError as e:
            add("$.plan.path", envelope.plan.path, f"a valid intent plan ({e})")
    expected_contract = contract_hash(envelope)
    if envelope.contract_hash != expected_contract:
        add("$.contract_hash", envelope.contract_hash or "empty", f"{expected_contract} (recompile after editing)")
    if envelope.tool_execution_owner != "host":
        add("$.tool_execution_owner", envelope.tool_execution_owner, "'host' (the model never executes tools)")

    # Tools: anything beyond read carries a full contract, or is irreversible and approval-gated.
    names: set[str] = set()
    approval_required = set(envelope.approvals.require_for)
    for i, t in enumerate(envelope.tools):
        p = f"$.tools[{i}]"
        if t.name in names:
            add(f"{p}.name", t.name, "a unique tool name")
        names.add(t.name)
        if set(t.effects) <= {Effect.READ}:
            continue
        missing = [k for k in FULL_CONTRACT_FIELDS if getattr(t, k) in (None, [], "")]
        covered = Effect.IRREVERSIBLE in t.effects and (
            ApprovalClass.IRREVERSIBLE in approval_required
            or any(r.rule.split("(")[0] == t.name for r in envelope.permissions.ask)
        )
        if missing and not covered:
            for k in missing:
                add(
                    f"{p}.{k}",
                    "missing",
                    f"declared, because tool {t.name!r} has effects {[e.value for e in t.effects]}",
                )

    # Boundaries stated explicitly.
    env = envelope.environment
    if env.filesystem is None:
        add("$.environment.filesystem", "missing", "explicit read, write and deny globs")
    if env.network is None:
        add("$.environment.network", "missing", "an explicit allow list of hosts (may be empty: no network)")
    if env.secrets is None:
        add("$.environment.secrets", "missing", "an explicit list of secret handles (may be empty)")
    else:
        for i, s in enumerate(env.secrets):
            if not s.source.startswith("env:"):
                add(f"$.environment.secrets[{i}].source", s.source, "a handle like env:NAME, never a literal value")

    # Budgets: every one finite.
    for name, value in envelope.budgets.model_dump().items():
        if value is None or (isinstance(value, float) and not math.isfinite(value)):
            add(f"$.budgets.{name}", "missing" if value is None else value, "a finite limit")

    # Approvals cover every effect class that can hurt someone else.
    for cls in ApprovalClass:
        if cls not in approval_required:
            add("$.approvals.require_for", sorted(c.value for c in approval_required), f"to include {cls.value!r}")

    if envelope.outputs.max_external is None:
        add("$.outputs.max_external", "missing", "a number of external outputs allowed (0 for none)")
    if not envelope.outputs.no_op:
        add("$.outputs.no_op", "missing", "the condition under which finishing with no change is correct")
    if envelope.audit is None or not envelope.audit.log:
        add("$.audit.log", "missing", "where the event log lives")

    seen_sensors: set[str] = set()
    for i, sensor in enumerate(envelope.verification.sensors):
        if sensor.name in seen_sensors:
            add(f"$.verification.sensors[{i}].name", sensor.name, "each sensor listed once")
        seen_sensors.add(sensor.name)
    if envelope.control.critical >= envelope.control.warning:
        add("$.control.critical", envelope.control.critical, f"below control.warning ({envelope.control.warning})")

    out.extend(rule_problems(envelope, f))
    risk_problems, accepted = acknowledged(envelope, (envelope_path.parent / env.workspace).resolve(), f)
    return out + risk_problems, accepted


def acknowledged(envelope: Envelope, workspace: Path, file: str) -> tuple[list[Problem], list[Accepted]]:
    """Dangerous settings are problems unless acknowledged; an acknowledgement of nothing is one too."""
    acks: dict[Risk, str] = {}
    out: list[Problem] = []
    for i, ack in enumerate(envelope.acknowledge):
        if ack.risk in acks:
            out.append(Problem(f"$.acknowledge[{i}].risk", ack.risk.value, "each risk acknowledged once", file))
        acks.setdefault(ack.risk, ack.reason)
    accepted: list[Accepted] = []
    taken: set[Risk] = set()
    for r in risky_settings(envelope, workspace):
        if r.risk is not None:
            taken.add(r.risk)
        if r.risk is not None and r.risk in acks:
            accepted.append(Accepted(r.risk, r.path, r.found, acks[r.risk].strip()))
            continue
        accept = f"; or, to accept it, acknowledge: [{{risk: {r.risk.value}, reason: ...}}]" if r.risk else ""
        out.append(Problem(r.path, r.found, r.safer + accept, file))
    for i, ack in enumerate(envelope.acknowledge):
        if ack.risk not in taken:
            out.append(
                Problem(
                    f"$.acknowledge[{i}].risk", ack.risk.value, "a risk this envelope takes (none: remove it)", file
                )
            )
    return out, accepted


def rule_problems(envelope: Envelope, file: str) -> list[Problem]:
    """Rules parse and their match / not_match examples hold (checked by the policy engine)."""
    ids: dict[str, str] = {}
    out: list[Problem] = []
    for kind in ("allow", "ask", "deny"):
        for i, rule in enumerate(getattr(envelope.permissions, kind)):
            if rule.id in ids:
                out.append(
                    Problem(f"$.permissions.{kind}[{i}].id", rule.id, f"a unique id (also in {ids[rule.id]})", file)
                )
            ids[rule.id] = f"permissions.{kind}[{i}]"
    from tether.policy.examples import check_rule_examples

    return out + check_rule_examples(envelope, file)
