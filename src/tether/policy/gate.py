"""The gate: a proposed tool call in, a :class:`Decision` out.

``Gate.decide`` is pure apart from resolving paths (symlinks, ``..``). The order of thought:

1. unknown tool → DENY (``default:unknown-tool``); fail closed;
2. per simple command (shell tools) or per call (other tools), collect findings from the
   envelope's rules, the built-in profile, the place checks (:mod:`.paths`) and the effect
   defaults, each tagged with its layer;
3. resolve them by precedence (:func:`.decision.resolve`), take the strictest across the parts
   of a shell string, then apply the control state.

A *shell tool* is a tool whose contract has the ``exec`` effect, called with a string
``command`` (judged by :mod:`.shellgate`, which a gate imports at its first such call); a *file tool* is called with a
string ``path``.
"""

from __future__ import annotations

import os

from tether.envelope.schema import EFFECT_APPROVAL_CLASS, Effect, Envelope, Rule, ToolContract
from tether.status import ControlState

from .decision import Decision, Finding, Layer, RuleMatch, Verdict, resolve
from .defaults import default_envelope
from .paths import PathPolicy, WalkBudget, done_walking, walking
from .rules import CompiledRule, compile_rules

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

    from .shellgate import ShellGate


class Gate:
    """Turns proposals into decisions for one envelope, workspace and control state."""

    def __init__(
        self,
        envelope: Envelope,
        workspace: str | os.PathLike[str],
        *,
        control: ControlState = ControlState.NORMAL,
        run_rules: Sequence[Rule] = (),
    ) -> None:
        self.envelope = envelope
        self.control = control
        perms = envelope.permissions
        self.deny = compile_rules(perms.deny, Verdict.DENY)
        self.ask = compile_rules(perms.ask, Verdict.ASK)
        self.allow = compile_rules(perms.allow, Verdict.ALLOW)
        self.run = compile_rules(list(run_rules), Verdict.ALLOW)
        self.paths = PathPolicy(workspace, envelope.environment.filesystem)
        self.workspace = self.paths.workspace
        self.coding = perms.profile == "coding"
        self._shells: ShellGate | None = None

    # -- public -----------------------------------------------------------------------------

    def decide(self, tool: str, args: Mapping[str, Any]) -> Decision:
        """Decide one call. Never raises: a failure inside the analysis is an ASK naming the failure. The folder
        walks of one decision share a budget (:class:`~tether.policy.paths.WalkBudget`)."""
        token = walking(WalkBudget())
        try:
            return self._decide(tool, args)
        except Exception as e:  # the gate must survive any input; a human decides what it could not
            m = RuleMatch("gate:error", Verdict.ASK, f"the gate could not analyse this call ({type(e).__name__}: {e})")
            return Decision(m.verdict, m.id, m.reason, (m,))
        finally:
            done_walking(token)

    def _decide(self, tool: str, args: Mapping[str, Any]) -> Decision:
        contract = self.envelope.tool(tool)
        if contract is None:
            m = RuleMatch("default:unknown-tool", Verdict.DENY, f"tool {tool!r} is not in the envelope")
            return Decision(m.verdict, m.id, m.reason, (m,))
        effects_ = set(contract.effects)
        command = args.get("command")
        if Effect.EXEC in effects_ and isinstance(command, str):
            decision, read_only = self._shell_gate().decide(tool, command, args)
        elif isinstance(args.get("path"), str):
            decision = self._file(contract, str(args["path"]), args)
            read_only = effects_ == {Effect.READ}
        else:
            decision = self._other(contract, args)
            read_only = effects_ == {Effect.READ}
        return self._control(self._approval_floor(contract, decision), read_only)

    def _approval_floor(self, contract: ToolContract, decision: Decision) -> Decision:
        """``approvals.require_for``: an effect class it lists is a floor of ASK that no allow rule, profile or
        "approve for this run" rule lifts — only a human answering this very call does. A DENY stays DENY."""
        require = set(self.envelope.approvals.require_for)
        floor = [_needs_human(e) for e in contract.effects if EFFECT_APPROVAL_CLASS.get(e) in require]
        if not floor:
            return decision
        matches = tuple(dict.fromkeys((*decision.matches, *floor)))
        if decision.verdict is not Verdict.ALLOW:
            return Decision(decision.verdict, decision.deciding_rule, decision.reason, matches)
        return Decision(Verdict.ASK, floor[0].id, floor[0].reason, matches)

    def _shell_gate(self) -> ShellGate:
        """The judge of this gate's shell calls, made at the first: a gate that sees none (a hook process deciding a
        Read or an Edit, most of an agent's calls) never imports the shell's reading (:mod:`.shellgate`)."""
        if self._shells is None:
            from .shellgate import ShellGate

            self._shells = ShellGate(self.paths, coding=self.coding, deny=self.deny, rules=self._rules)
        return self._shells

    # -- files and other tools --------------------------------------------------------------

    def _file(self, contract: ToolContract, raw: str, args: Mapping[str, Any]) -> Decision:
        path = self.paths.resolve(raw, self.workspace)
        rel = self.paths.relative(path) if path is not None else None
        effects_ = set(contract.effects)
        out: list[Finding] = []
        if path is None:
            out.append(Finding.of(Layer.HARD, "path:unknown", Verdict.DENY, f"cannot resolve {raw!r}"))
        elif Effect.WRITE in effects_:
            verdict = self.paths.write(path)
            if verdict is not None:
                out.append(verdict.finding())
            dot = self.paths.dotfile(path)
            if dot is not None:
                out.append(Finding(RuleMatch(dot.rule_id, dot.verdict, dot.reason), Layer.PROFILE))
        if (path is not None and Effect.READ in effects_) or (path is not None and Effect.WRITE not in effects_):
            verdict = self.paths.read(path, shell=False) if path is not None else None
            if verdict is not None:
                out.append(verdict.finding())
            out += self._contents(contract, raw, path, args)
        out += self._rules(contract.name, args, lambda r: r.matches_path(rel, raw))
        out += self._effect_defaults(contract, file_tool=True)
        return resolve(out, RuleMatch("default:effects", Verdict.ASK, "no default for these effects"))

    def _contents(self, contract: ToolContract, raw: str, path: str, args: Mapping[str, Any]) -> list[Finding]:
        """A call that says it reads the contents of every file under its path (``contents: true``: a hook's Grep)
        reads files chosen at run time, as ``grep -r`` does: the deny list may match them. The flag only ever
        tightens a decision, so whoever sets it (a model too) cannot widen one."""
        reach = self.paths.deny_reach(path) if args.get("contents") is True else None
        if reach is None:
            return []
        why = f"{contract.name} reads the files under {raw}; filesystem.deny {reach!r} may match them"
        return [Finding.of(Layer.HARD, "path:denied", Verdict.DENY, why)]

    def _other(self, contract: ToolContract, args: Mapping[str, Any]) -> Decision:
        out = self._rules(contract.name, args, lambda r: r.matches_subject(args))
        if Effect.EXEC in contract.effects:
            out.append(Finding.of(Layer.DEFAULT, "default:exec-no-command", Verdict.ASK, "exec without a command"))
        out += self._effect_defaults(contract, file_tool=False)
        return resolve(out, RuleMatch("default:effects", Verdict.ASK, "no default for these effects"))

    def _effect_defaults(self, contract: ToolContract, *, file_tool: bool) -> list[Finding]:
        """The effects' defaults, a read's last: of findings of one verdict the first decides (``resolve``), and a call
        that reads and writes (an Edit) is allowed as a write inside the writable set, not as a read."""
        out: list[Finding] = []
        require = set(self.envelope.approvals.require_for)
        for e in sorted(contract.effects, key=lambda effect: effect is Effect.READ):
            if e is Effect.READ:
                out.append(Finding.of(Layer.DEFAULT, "default:read", Verdict.ALLOW, "reads are allowed"))
            elif e is Effect.WRITE:
                if file_tool:
                    out.append(
                        Finding.of(Layer.DEFAULT, "default:write", Verdict.ALLOW, "writes inside the writable set")
                    )
                else:
                    out.append(Finding.of(Layer.DEFAULT, "default:write", Verdict.ASK, "writes to an unstated place"))
            elif e is Effect.NETWORK:
                out.append(Finding.of(Layer.DEFAULT, "default:network", Verdict.ASK, "network access needs approval"))
            elif e in EFFECT_APPROVAL_CLASS:
                cls = EFFECT_APPROVAL_CLASS[e]
                if not require or cls in require:
                    out.append(Finding(_needs_human(e), Layer.DEFAULT))
                else:
                    reason = f"approvals.require_for does not list {cls.value}"
                    out.append(Finding.of(Layer.DEFAULT, f"default:{e.value}", Verdict.ALLOW, reason))
        return out

    # -- rules and control ------------------------------------------------------------------

    def _rules(self, tool: str, args: Mapping[str, Any], matches: Any) -> list[Finding]:
        out: list[Finding] = []
        for rules, layer in ((self.deny, Layer.HARD), (self.ask, Layer.USER), (self.allow, Layer.USER)):
            out += [_rule_finding(r, layer) for r in rules if r.applies(tool, args) and matches(r)]
        out += [_rule_finding(r, Layer.RUN) for r in self.run if r.applies(tool, args) and matches(r)]
        return out

    def _control(self, decision: Decision, read_only: bool) -> Decision:
        state = self.control
        if state is ControlState.NORMAL or read_only or decision.verdict is Verdict.DENY:
            return decision
        if state is ControlState.CAUTIOUS:
            if decision.verdict is Verdict.ASK:
                return decision
            m = RuleMatch(
                "control:cautious", Verdict.ASK, "control state CAUTIOUS: anything beyond reading needs a human"
            )
        elif state is ControlState.BLOCKED:
            m = RuleMatch("control:blocked", Verdict.DENY, "control state BLOCKED: only read-only actions run")
        else:
            m = RuleMatch("control:human-required", Verdict.DENY, "control state HUMAN_REQUIRED: a human must step in")
        return Decision(m.verdict, m.id, m.reason, (m, *decision.matches))


def _needs_human(effect: Effect) -> RuleMatch:
    cls = EFFECT_APPROVAL_CLASS[effect]
    return RuleMatch(f"approval:{cls.value}", Verdict.ASK, f"{effect.value} effects need a human ({cls.value})")


def _rule_finding(rule: CompiledRule, layer: Layer) -> Finding:
    reason = rule.reason or f"{rule.verdict.name.lower()} rule {rule.id}"
    return Finding(RuleMatch(rule.id, rule.verdict, reason), layer)


def shell_decision(
    command: str, envelope: Envelope | None = None, workspace: str | os.PathLike[str] | None = None
) -> Decision:
    """Decide a shell command for the built-in ``bash`` tool (convenience for CLIs and tests)."""
    env = envelope or default_envelope()
    tool = next((t.name for t in env.tools if Effect.EXEC in t.effects), "bash")
    return Gate(env, workspace or os.getcwd()).decide(tool, {"command": command})


__all__ = ["Gate", "shell_decision"]
