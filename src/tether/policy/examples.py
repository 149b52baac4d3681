"""Policies that test themselves: every rule parses and does what its examples show.

``match`` examples must be matched by the rule, ``not_match`` examples must not. An example is
a string (the command for a shell tool, the path for a file tool, the subject otherwise) or a
mapping of tool arguments. Called by ``tether validate --strict``; a rule that does not do what
its author showed makes the envelope invalid.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tether.envelope.schema import Effect, Envelope, Rule
from tether.errors import Problem

from .decision import Verdict
from .paths import PathPolicy
from .rules import CompiledRule, RuleConditionError, RuleSyntaxError, parse
from .shell import analyse

_SHELL_NAMES = frozenset({"bash", "sh", "shell", "zsh"})
_EXAMPLE_WORKSPACE = Path("/tether-example-workspace")


def check_rule_examples(envelope: Envelope, file: str = "") -> list[Problem]:
    problems: list[Problem] = []
    paths = PathPolicy(_EXAMPLE_WORKSPACE, None)
    for section, verdict in (("deny", Verdict.DENY), ("ask", Verdict.ASK), ("allow", Verdict.ALLOW)):
        rules: list[Rule] = getattr(envelope.permissions, section)
        for i, rule in enumerate(rules):
            where = f"$.permissions.{section}[{i}]"
            try:
                compiled = parse(rule, verdict)
            except RuleConditionError as e:
                problems.append(Problem(f"{where}.when", repr(rule.when), str(e), file))
                continue
            except RuleSyntaxError as e:
                problems.append(Problem(f"{where}.rule", repr(rule.rule), f"Tool or Tool(specifier): {e}", file))
                continue
            contract = envelope.tool(compiled.tool)
            if contract is None:
                known = ", ".join(t.name for t in envelope.tools) or "none declared"
                problems.append(Problem(f"{where}.rule", compiled.tool, f"a tool in $.tools ({known})", file))
                continue
            shell = Effect.EXEC in contract.effects or compiled.tool in _SHELL_NAMES
            for key, want in (("match", True), ("not_match", False)):
                for j, example in enumerate(getattr(rule, key)):
                    got = _matches(compiled, example, shell, paths)
                    if got is None:
                        problems.append(
                            Problem(
                                f"{where}.{key}[{j}]", repr(example)[:80], "a string or a mapping of arguments", file
                            )
                        )
                    elif got != want:
                        expected = "the rule to match it" if want else "the rule not to match it"
                        problems.append(
                            Problem(
                                f"{where}.{key}[{j}]",
                                f"{example!r} {'does not match' if want else 'matches'}"[:120],
                                expected,
                                file,
                            )
                        )
    return problems


def _matches(rule: CompiledRule, example: Any, shell: bool, paths: PathPolicy) -> bool | None:
    if isinstance(example, str):
        args: Mapping[str, Any] = {"command": example} if shell else {"path": example}
    elif isinstance(example, Mapping):
        args = {str(k): v for k, v in example.items()}
    else:
        return None
    if rule.tainted is None and not rule.when_holds(args):  # taint is run state: examples show tool and specifier
        return False
    if shell and isinstance(args.get("command"), str):
        return any(rule.matches_command(c) for c in analyse(str(args["command"]), paths.workspace).commands)
    if isinstance(args.get("path"), str):
        raw = str(args["path"])
        resolved = paths.resolve(raw, paths.workspace)
        rel = paths.relative(resolved) if resolved is not None else None
        return rule.matches_path(rel, raw)
    return rule.matches_subject(args)
