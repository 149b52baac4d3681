"""Strict validation, the envelope's own part: the checks that need nothing above this layer.

Schema validation (pydantic) answers "is this shaped like an envelope?". Strict
validation answers "is this a complete, honest contract?": bound to its plan,
unmodified since compiled, with every boundary, budget and approval stated.
Every problem is reported, each naming its JSON path, what was found and what
was expected.

The rules of ``permissions`` can only be judged by the policy engine that applies them (do they
parse, do their examples hold, does an allow rule let the shell run anything), which sits above
this layer; :mod:`tether.policy.strict` composes these checks with those into the whole strict check.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from tether.errors import InputError, Problem

from . import noop
from .hashing import contract_hash, plan_hash
from .load import load_plan
from .network import rule_problems
from .risks import Risky
from .schema import MCP_PREFIX, ApprovalClass, Effect, Envelope, Risk, split_mcp_tool

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


def contract_problems(envelope: Envelope, envelope_path: Path) -> list[Problem]:
    """The problems of ``envelope`` (loaded from ``envelope_path``) that this layer can see, in document order."""
    f = str(envelope_path)
    found = [
        *binding_problems(envelope, envelope_path),
        *tool_problems(envelope),
        *mcp_problems(envelope),
        *boundary_problems(envelope),
        *limit_problems(envelope),
        *rule_id_problems(envelope),
    ]
    return [Problem(path, str(value), expected, f) for path, value, expected in found]


Found = tuple[str, object, str]
"""(JSON path, what was found, what was expected): a problem before it names its file."""


def binding_problems(envelope: Envelope, envelope_path: Path) -> list[Found]:
    """The plan exists and matches its hash; the contract was not edited after compiling; the host runs tools."""
    out: list[Found] = []
    plan_file = (envelope_path.parent / envelope.plan.path).resolve()
    if not plan_file.is_file():
        out.append(("$.plan.path", envelope.plan.path, f"an existing intent plan file (looked at {plan_file})"))
    else:
        try:
            actual = plan_hash(load_plan(plan_file))
            if actual != envelope.plan.hash:
                expected = f"{actual} (the plan changed since compiling; run tether compile)"
                out.append(("$.plan.hash", envelope.plan.hash, expected))
        except InputError as e:
            out.append(("$.plan.path", envelope.plan.path, f"a valid intent plan ({e})"))
    expected_contract = contract_hash(envelope)
    if envelope.contract_hash != expected_contract:
        out.append(
            ("$.contract_hash", envelope.contract_hash or "empty", f"{expected_contract} (recompile after editing)")
        )
    if envelope.tool_execution_owner != "host":
        out.append(("$.tool_execution_owner", envelope.tool_execution_owner, "'host' (the model never executes tools)"))
    return out


def tool_problems(envelope: Envelope) -> list[Found]:
    """Unique names; anything beyond read carries a full contract, or is irreversible and approval-gated."""
    out: list[Found] = []
    names: set[str] = set()
    approval_required = set(envelope.approvals.require_for)
    for i, t in enumerate(envelope.tools):
        if t.name in names:
            out.append((f"$.tools[{i}].name", t.name, "a unique tool name"))
        names.add(t.name)
        if set(t.effects) <= {Effect.READ}:
            continue
        missing = [k for k in FULL_CONTRACT_FIELDS if getattr(t, k) in (None, [], "")]
        covered = Effect.IRREVERSIBLE in t.effects and (
            ApprovalClass.IRREVERSIBLE in approval_required
            or any(r.rule.split("(")[0] == t.name for r in envelope.permissions.ask)
        )
        if not covered:
            because = f"declared, because tool {t.name!r} has effects {[e.value for e in t.effects]}"
            out += [(f"$.tools[{i}].{k}", "missing", because) for k in missing]
    return out


def mcp_problems(envelope: Envelope) -> list[Found]:
    """Every MCP server named once; every ``mcp__…`` contract spelled ``mcp__<server>__<tool>``.

    A contract may name a server that ``mcp_servers`` does not declare: the gateway (``tether mcp-proxy
    --name``) and the agents' hooks govern servers that another program starts. tether's own loop cannot
    run such a tool and refuses it when the run starts (:func:`tether.tools.registry.resolve_tools`).
    """
    out: list[Found] = []
    servers: set[str] = set()
    for i, server in enumerate(envelope.mcp_servers):
        if server.name in servers:
            out.append((f"$.mcp_servers[{i}].name", server.name, "a unique server name"))
        servers.add(server.name)
    for i, t in enumerate(envelope.tools):
        if t.name.startswith(MCP_PREFIX) and split_mcp_tool(t.name) is None:
            out.append((f"$.tools[{i}].name", t.name, "mcp__<server>__<tool>, naming a server and one of its tools"))
    return out


def boundary_problems(envelope: Envelope) -> list[Found]:
    """Filesystem, network and secrets stated explicitly; a secret is a handle, never a value."""
    env = envelope.environment
    out: list[Found] = []
    if env.filesystem is None:
        out.append(("$.environment.filesystem", "missing", "explicit read, write and deny globs"))
    if env.network is None:
        out.append(("$.environment.network", "missing", "an explicit allow list of hosts (may be empty: no network)"))
    else:
        out += rule_problems(env.network.allow, "$.environment.network.allow")
    if env.secrets is None:
        out.append(("$.environment.secrets", "missing", "an explicit list of secret handles (may be empty)"))
    else:
        declared = {t.name for t in envelope.tools}
        for i, s in enumerate(env.secrets):
            if not s.tools:
                out.append((f"$.environment.secrets[{i}].tools", [], "the tools that may receive it (none does now)"))
            for j, name in enumerate(s.tools):
                if name not in declared:
                    out.append((f"$.environment.secrets[{i}].tools[{j}]", name, "a tool declared in $.tools"))
    return out


def limit_problems(envelope: Envelope) -> list[Found]:
    """Every budget finite; approvals cover every effect class; outputs, audit, sensors and control thresholds set."""
    out: list[Found] = []
    for name, value in envelope.budgets.model_dump().items():
        if value is None or (isinstance(value, float) and not math.isfinite(value)):
            out.append((f"$.budgets.{name}", "missing" if value is None else value, "a finite limit"))
    approval_required = set(envelope.approvals.require_for)
    required = sorted(c.value for c in approval_required)
    out += [
        ("$.approvals.require_for", required, f"to include {cls.value!r}")
        for cls in ApprovalClass
        if cls not in approval_required
    ]
    if envelope.outputs.max_external is None:
        out.append(("$.outputs.max_external", "missing", "a number of external outputs allowed (0 for none)"))
    if not envelope.outputs.no_op:
        out.append(
            (
                "$.outputs.no_op",
                "missing",
                f"the condition under which finishing with no change is correct: {noop.GRAMMAR}",
            )
        )
    else:
        try:
            noop.parse(envelope.outputs.no_op)
        except ValueError as e:
            out.append(("$.outputs.no_op", repr(envelope.outputs.no_op), f"{noop.GRAMMAR} ({e})"))
    if envelope.audit is None or not envelope.audit.log:
        out.append(("$.audit.log", "missing", "where the event log lives"))
    seen_sensors: set[str] = set()
    for i, sensor in enumerate(envelope.verification.sensors):
        if sensor.name in seen_sensors:
            out.append((f"$.verification.sensors[{i}].name", sensor.name, "each sensor listed once"))
        seen_sensors.add(sensor.name)
    control = envelope.control
    if control.critical >= control.warning:
        out.append(("$.control.critical", control.critical, f"below control.warning ({control.warning})"))
    return out


def rule_id_problems(envelope: Envelope) -> list[Found]:
    """Every rule id is unique across allow, ask and deny (the gate names a decision by it)."""
    ids: dict[str, str] = {}
    out: list[Found] = []
    for kind in ("allow", "ask", "deny"):
        for i, rule in enumerate(getattr(envelope.permissions, kind)):
            if rule.id in ids:
                out.append((f"$.permissions.{kind}[{i}].id", rule.id, f"a unique id (also in {ids[rule.id]})"))
            ids[rule.id] = f"permissions.{kind}[{i}]"
    return out


def acknowledged(envelope: Envelope, risky: list[Risky], file: str) -> tuple[list[Problem], list[Accepted]]:
    """Dangerous settings are problems unless acknowledged; an acknowledgement of nothing is one too."""
    acks: dict[Risk, str] = {}
    out: list[Problem] = []
    for i, ack in enumerate(envelope.acknowledge):
        if ack.risk in acks:
            out.append(Problem(f"$.acknowledge[{i}].risk", ack.risk.value, "each risk acknowledged once", file))
        acks.setdefault(ack.risk, ack.reason)
    accepted: list[Accepted] = []
    taken: set[Risk] = set()
    for r in risky:
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
