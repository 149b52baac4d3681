"""Attenuation: does a child envelope hold no more than its parent's? And: derive such a child.

A sub-run started by the ``delegate`` tool, and a node of a task graph, run under an envelope that may
only *narrow* the one above it. :func:`widenings` lists every way a child reaches beyond its parent, each
naming the child's JSON path, what the child has and what the parent allows; an empty list means the
child only narrows. :func:`narrow` derives a child from a parent and the narrowing asked for, and is
checked by :func:`widenings` before it returns, so it never hands out more than the parent holds.

What "no more" means, section by section (fail closed: what cannot be shown to be narrower is a widening):

* **tools** and **mcp_servers**: a subset by name, each contract identical to the parent's (a child that
  re-declares ``bash`` as ``effects: [read]`` would dodge the approvals its effects imply).
* **filesystem**: the same workspace; ``read`` and ``write`` globs covered by the parent's
  (:mod:`.globcover`, which proves coverage or refuses); every parent ``deny`` glob kept. An unstated
  filesystem reads as the gate reads it: everything readable, nothing writable.
* **network**: each entry covered by a parent entry (name, wildcard, ports); loopback only if the parent
  allows it. **secrets**: each one the parent's (same source, same delivery) for a subset of its tools and
  hosts; ``env_allow`` a subset.
* **permissions**: the same profile; every allow rule one the parent has (the same rule and ``when``);
  every parent deny rule kept as a deny, every parent ask rule kept as an ask or a deny. The gate's
  precedence does not depend on order (:mod:`tether.policy.decision`), so reordering is harmless.
* **budgets**: every dimension at most the parent's; unbounded only where the parent is.
* **sandbox**: no weaker backend (``bwrap`` over ``local``), still required where the parent requires it;
  the workspace trust no looser. **approvals**: every class the parent requires a human for.
* **outputs**: ``max_external`` at most the parent's, types a subset.
* **verification**: the same test command and sensor tools (the host runs them), every required sensor
  still required, test changes no more allowed. **pricing**: the same table, so a child's spend is
  priced as the parent's would be. **skills**: directories a subset, forbidden skills kept.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from tether.errors import InputError, Problem

from .globcover import normalise, uncovered
from .hashing import contract_hash
from .network import HostError, HostRule, parse_rule
from .schema import Budgets, Envelope, Filesystem, Network, Rule, Secret, Trust


@dataclass(frozen=True)
class Widening:
    """One way a child envelope reaches beyond its parent."""

    path: str
    child: str
    parent: str

    def __str__(self) -> str:
        return f"{self.path}: the child has {self.child}; the parent allows {self.parent}"

    def problem(self, file: str = "") -> Problem:
        """As a strict-validation problem (``tether graph run --strict``)."""
        return Problem(self.path, self.child, f"no more than the parent allows: {self.parent}", file)

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "child": self.child, "parent": self.parent}


class NarrowingError(InputError):
    """The narrowing asked for would widen the parent's envelope; every widening is named."""

    def __init__(self, found: Sequence[Widening]) -> None:
        self.widenings = list(found)
        super().__init__("the child would hold more than its parent: " + "; ".join(str(w) for w in found))


def widenings(parent: Envelope, child: Envelope) -> list[Widening]:
    """Every way ``child`` holds more than ``parent`` (empty: it only narrows)."""
    checks: tuple[Callable[[Envelope, Envelope], list[Widening]], ...] = (
        _tools,
        _filesystem,
        _network,
        _secrets,
        _permissions,
        _budgets,
        _isolation,
        _outputs,
        _verification,
        _pricing,
        _skills,
    )
    return [w for check in checks for w in check(parent, child)]


def narrow(
    parent: Envelope,
    *,
    tools: Iterable[str] | None = None,
    read: Iterable[str] | None = None,
    write: Iterable[str] | None = None,
    network: Iterable[str] | None = None,
    budget_share: float = 1.0,
    budgets: Budgets | None = None,
) -> Envelope:
    """A child of ``parent`` with fewer tools, a smaller file and network reach and a share of the budgets.

    ``None`` keeps the parent's. Globs are normalised (``./src/**`` → ``src/**``). Each budget is the
    parent's times ``budget_share``, then at most ``budgets`` (what the parent has left, say).
    Secrets follow the tools: a secret is kept for the kept tools that receive it. Raises
    :class:`NarrowingError` naming every widening when what is asked for is not within the parent's.
    """
    if not 0 < budget_share <= 1 or not math.isfinite(budget_share):
        raise InputError(f"budget_share: found {budget_share}; expected a share above 0 and at most 1")
    env = parent.environment
    fs = env.filesystem or Filesystem(read=["**"], write=[], deny=[])
    names = [t.name for t in parent.tools]
    asked = names if tools is None else list(tools)
    kept = {n for n in asked if n in names}
    unknown = [Widening(f"$.tools[{n!r}]", f"tool {n!r}", f"only the tools {names}") for n in asked if n not in names]
    child = parent.model_copy(
        update={
            "tools": [t for t in parent.tools if t.name in kept],
            "environment": env.model_copy(
                update={
                    "filesystem": _child_reach(fs, read, write),
                    "network": _child_network(env.network, network),
                    "secrets": _child_secrets(env.secrets, kept),
                }
            ),
            "budgets": share_budgets(parent.budgets, budget_share, budgets),
        }
    )
    child = child.model_copy(update={"contract_hash": contract_hash(child)})
    found = unknown + widenings(parent, child)
    if found:
        raise NarrowingError(found)
    return child


def _child_secrets(secrets: list[Secret] | None, kept: set[str]) -> list[Secret] | None:
    """The secrets some kept tool receives, each given to the kept tools only."""
    if secrets is None:
        return None
    return [
        s.model_copy(update={"tools": [t for t in s.tools if t in kept]})
        for s in secrets
        if any(t in kept for t in s.tools)
    ]


def _child_reach(fs: Filesystem, read: Iterable[str] | None, write: Iterable[str] | None) -> Filesystem:
    """The parent's file reach with ``read`` and ``write`` (normalised) in place of its own, where given."""
    return Filesystem(
        read=fs.read if read is None else [normalise(g) for g in read],
        write=fs.write if write is None else [normalise(g) for g in write],
        deny=fs.deny,
    )


def _child_network(net: Network | None, network: Iterable[str] | None) -> Network | None:
    """The parent's network, or one allowing ``network`` (its loopback setting kept)."""
    if network is None:
        return net
    return Network(allow=list(network), allow_loopback=net.allow_loopback if net else False)


def share_budgets(parent: Budgets, share: float, ceiling: Budgets | None = None) -> Budgets:
    """Each of the parent's budgets times ``share`` (whole units rounded down), then at most ``ceiling``'s."""
    out: dict[str, Any] = {}
    for name, value in parent.model_dump().items():
        if value is not None:
            value = math.floor(value * share) if isinstance(value, int) else value * share
        cap = getattr(ceiling, name) if ceiling is not None else None
        out[name] = cap if value is None else value if cap is None else min(value, cap)
    return Budgets(**out)


# -- the checks, one per section ----------------------------------------------------------------


def _tools(parent: Envelope, child: Envelope) -> list[Widening]:
    out: list[Widening] = []
    names = [p.name for p in parent.tools]
    for i, t in enumerate(child.tools):
        mine = parent.tool(t.name)
        if mine is None:
            out.append(Widening(f"$.tools[{i}]", f"tool {t.name!r}", f"only the tools {names}"))
        elif mine != t:
            out.append(Widening(f"$.tools[{i}]", f"a changed contract for {t.name!r}", "its own contract, unchanged"))
    servers = {s.name: s for s in parent.mcp_servers}
    for i, s in enumerate(child.mcp_servers):
        if servers.get(s.name) != s:
            out.append(Widening(f"$.mcp_servers[{i}]", f"MCP server {s.name!r}", f"only its servers {sorted(servers)}"))
    return out


def _filesystem(parent: Envelope, child: Envelope) -> list[Widening]:
    pe, ce = parent.environment, child.environment
    out: list[Widening] = []
    if ce.workspace != pe.workspace:
        out.append(Widening("$.environment.workspace", repr(ce.workspace), f"only its workspace {pe.workspace!r}"))
    everything = Filesystem(read=["**"], write=[], deny=[])
    pf, cf = pe.filesystem or everything, ce.filesystem or everything
    for field in ("read", "write"):
        theirs: list[str] = getattr(pf, field)
        for u in uncovered(getattr(cf, field), theirs):
            out.append(Widening(f"$.environment.filesystem.{field}[{u.index}]", f"{u.glob!r} ({u.why})", f"{theirs}"))
    dropped = [g for g in pf.deny if g not in cf.deny]
    if dropped:
        out.append(Widening("$.environment.filesystem.deny", f"{cf.deny} (without {dropped})", f"at least {pf.deny}"))
    return out


def _hosts(entries: list[str]) -> list[HostRule | None]:
    out: list[HostRule | None] = []
    for e in entries:
        try:
            out.append(parse_rule(e))
        except HostError:
            out.append(None)
    return out


def _host_covered(rule: HostRule, by: HostRule) -> bool:
    if not set(rule.ports) <= set(by.ports):
        return False
    if by.host == "*":
        return True
    if rule.host == "*":
        return False
    if rule.wildcard:
        return by.wildcard and rule.host == by.host
    return by.matches(rule.host)


def _network(parent: Envelope, child: Envelope) -> list[Widening]:
    pn = parent.environment.network or Network(allow=[])
    cn = child.environment.network or Network(allow=[])
    grants = [r for r in _hosts(pn.allow) if r is not None]
    out: list[Widening] = []
    for i, (entry, rule) in enumerate(zip(cn.allow, _hosts(cn.allow), strict=True)):
        if rule is None or not any(_host_covered(rule, g) for g in grants):
            out.append(Widening(f"$.environment.network.allow[{i}]", repr(entry), f"only the hosts {pn.allow}"))
    if cn.allow_loopback and not pn.allow_loopback:
        out.append(Widening("$.environment.network.allow_loopback", "true", "no loopback (false)"))
    return out


def _secrets(parent: Envelope, child: Envelope) -> list[Widening]:
    mine = {s.name: s for s in parent.environment.secrets or ()}
    out: list[Widening] = []
    for i, s in enumerate(child.environment.secrets or ()):
        where = f"$.environment.secrets[{i}]"
        p = mine.get(s.name)
        if p is None:
            out.append(Widening(where, f"secret {s.name!r}", f"only the secrets {sorted(mine)}"))
            continue
        if (s.source, s.delivery) != (p.source, p.delivery):
            out.append(Widening(where, f"secret {s.name!r} from {s.source}", f"{p.source}, delivered as declared"))
        extra_tools = sorted(set(s.tools) - set(p.tools))
        if extra_tools:
            out.append(Widening(f"{where}.tools", f"{extra_tools}", f"only {p.tools}"))
        extra_hosts = sorted(set(s.hosts) - set(p.hosts))
        if extra_hosts:
            out.append(Widening(f"{where}.hosts", f"{extra_hosts}", f"only {p.hosts}"))
    extra_env = sorted(set(child.environment.env_allow) - set(parent.environment.env_allow))
    if extra_env:
        out.append(Widening("$.environment.env_allow", f"{extra_env}", f"only {parent.environment.env_allow}"))
    return out


def _rule_key(rule: Rule) -> tuple[str, str]:
    """What a rule matches: its ``Tool(specifier)`` and its ``when`` (the id, reason and examples do not)."""
    when = rule.when if isinstance(rule.when, str) else repr(sorted(rule.when.items()))
    return rule.rule.strip(), when


def _permissions(parent: Envelope, child: Envelope) -> list[Widening]:
    pp, cp = parent.permissions, child.permissions
    out: list[Widening] = []
    if cp.profile != pp.profile:
        out.append(Widening("$.permissions.profile", repr(cp.profile), f"only its profile {pp.profile!r}"))
    allowed = {_rule_key(r) for r in pp.allow}
    for i, r in enumerate(cp.allow):
        if _rule_key(r) not in allowed:
            out.append(Widening(f"$.permissions.allow[{i}]", f"allow {r.rule!r}", "only its own allow rules"))
    denies = {_rule_key(r) for r in cp.deny}
    asks = {_rule_key(r) for r in cp.ask} | denies
    for kind, rules, kept in (("deny", pp.deny, denies), ("ask", pp.ask, asks)):
        for r in rules:
            if _rule_key(r) not in kept:
                what = "a deny rule" if kind == "deny" else "an ask or deny rule"
                out.append(Widening(f"$.permissions.{kind}", f"no rule {r.rule!r}", f"{r.rule!r} kept as {what}"))
    return out


def _budgets(parent: Envelope, child: Envelope) -> list[Widening]:
    out: list[Widening] = []
    for name, limit in parent.budgets.model_dump().items():
        mine = getattr(child.budgets, name)
        if limit is not None and (mine is None or not mine <= limit):
            out.append(Widening(f"$.budgets.{name}", "no limit" if mine is None else str(mine), f"at most {limit}"))
    return out


def _isolation(parent: Envelope, child: Envelope) -> list[Widening]:
    ps, cs = parent.environment.sandbox, child.environment.sandbox
    out: list[Widening] = []
    if ps.backend == "bwrap" and cs.backend != "bwrap":
        out.append(Widening("$.environment.sandbox.backend", cs.backend, "bwrap (no weaker sandbox)"))
    if ps.required and not cs.required:
        out.append(Widening("$.environment.sandbox.required", "false", "true (the sandbox may not be skipped)"))
    if parent.environment.trust.workspace is Trust.UNTRUSTED and child.environment.trust.workspace is Trust.TRUSTED:
        out.append(Widening("$.environment.trust.workspace", "trusted", "untrusted"))
    if child.tool_execution_owner != parent.tool_execution_owner:
        out.append(Widening("$.tool_execution_owner", child.tool_execution_owner, parent.tool_execution_owner))
    required = set(parent.approvals.require_for)
    dropped = sorted(c.value for c in required - set(child.approvals.require_for))
    if dropped:
        out.append(
            Widening("$.approvals.require_for", f"no approval for {dropped}", f"{sorted(c.value for c in required)}")
        )
    return out


def _outputs(parent: Envelope, child: Envelope) -> list[Widening]:
    po, co = parent.outputs, child.outputs
    out: list[Widening] = []
    if po.max_external is not None and (co.max_external is None or co.max_external > po.max_external):
        found = "no limit" if co.max_external is None else str(co.max_external)
        out.append(Widening("$.outputs.max_external", found, f"at most {po.max_external}"))
    extra = sorted(set(co.allowed_types) - set(po.allowed_types))
    if extra:
        out.append(Widening("$.outputs.allowed_types", f"{extra}", f"only {po.allowed_types}"))
    return out


def _verification(parent: Envelope, child: Envelope) -> list[Widening]:
    pv, cv = parent.verification, child.verification
    out: list[Widening] = []
    if cv.test_command != pv.test_command:
        out.append(Widening("$.verification.test_command", repr(cv.test_command), repr(pv.test_command)))
    if cv.tools != pv.tools:
        out.append(Widening("$.verification.tools", f"{cv.tools}", f"{pv.tools} (the host runs them)"))
    required = {s.name for s in cv.sensors if s.required}
    for s in pv.sensors:
        if s.required and s.name not in required:
            out.append(Widening("$.verification.sensors", f"{s.name} not required", f"{s.name} required"))
    if pv.tests_may_change is not True and cv.tests_may_change is True:
        out.append(Widening("$.verification.tests_may_change", "true", repr(pv.tests_may_change)))
    return out


def _pricing(parent: Envelope, child: Envelope) -> list[Widening]:
    out: list[Widening] = []
    if child.pricing != parent.pricing:
        out.append(Widening("$.pricing", "a changed price table", "its own table (a child's spend is the parent's)"))
    if child.pricing_file != parent.pricing_file:
        out.append(Widening("$.pricing_file", repr(child.pricing_file), repr(parent.pricing_file)))
    return out


def _skills(parent: Envelope, child: Envelope) -> list[Widening]:
    if child.skills is None and parent.skills is None:
        return []
    ps, cs = parent.skills, child.skills
    pdirs, cdirs = (ps.dirs if ps else []), (cs.dirs if cs else [])
    out: list[Widening] = []
    extra = sorted(set(cdirs) - set(pdirs))
    if extra:
        out.append(Widening("$.skills.dirs", f"{extra}", f"only {pdirs}"))
    if (cs.user if cs else True) and not (ps.user if ps else True):
        out.append(Widening("$.skills.user", "true", "false"))
    dropped = sorted(set(ps.forbid if ps else []) - set(cs.forbid if cs else []))
    if dropped:
        out.append(Widening("$.skills.forbid", f"without {dropped}", f"{ps.forbid if ps else []}"))
    return out
