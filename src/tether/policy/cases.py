"""Policy tests users keep in their repositories: a table of calls and expected decisions.

A cases file is a YAML list (or a mapping with a ``cases`` list) of entries::

    - command: "git push origin main"      # shorthand for the envelope's shell tool
      expect: ASK
    - tool: write_file
      args: {path: .github/workflows/ci.yml}
      expect: DENY
      why: CI config is protected           # optional, shown on mismatch

``run_cases`` decides each with a :class:`~tether.policy.gate.Gate` and reports mismatches.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tether.envelope.load import read_document
from tether.envelope.schema import Effect, Envelope
from tether.errors import ParseError

from .decision import Decision, Verdict
from .gate import Gate


@dataclass(frozen=True)
class Case:
    index: int
    tool: str
    args: Mapping[str, Any]
    expect: Verdict
    why: str = ""

    @property
    def label(self) -> str:
        command = self.args.get("command")
        return str(command) if isinstance(command, str) else f"{self.tool} {dict(self.args)}"


@dataclass(frozen=True)
class Outcome:
    case: Case
    decision: Decision

    @property
    def ok(self) -> bool:
        return self.decision.verdict is self.case.expect


def shell_tool(envelope: Envelope) -> str:
    return next((t.name for t in envelope.tools if Effect.EXEC in t.effects), "bash")


def parse_cases(data: Any, envelope: Envelope, file: str = "") -> list[Case]:
    if isinstance(data, Mapping) and "cases" in data:
        data = data["cases"]
    if not isinstance(data, list):
        raise ParseError(f"{file}: expected a list of cases (or a mapping with 'cases')")
    out: list[Case] = []
    for i, entry in enumerate(data):
        where = f"{file}: $[{i}]"
        if not isinstance(entry, Mapping):
            raise ParseError(f"{where}: expected a mapping with command/tool and expect")
        expect = str(entry.get("expect", "")).upper()
        if expect not in Verdict.__members__:
            raise ParseError(f"{where}.expect: found {entry.get('expect')!r}; expected ALLOW, ASK or DENY")
        if "command" in entry:
            tool, args = str(entry.get("tool", shell_tool(envelope))), {"command": str(entry["command"])}
        elif "tool" in entry and isinstance(entry.get("args", {}), Mapping):
            tool, args = str(entry["tool"]), dict(entry.get("args", {}))
        else:
            raise ParseError(f"{where}: expected 'command' or 'tool' with 'args' (a mapping)")
        out.append(Case(i, tool, args, Verdict[expect], str(entry.get("why", ""))))
    return out


def load_cases(path: Path, envelope: Envelope) -> list[Case]:
    """Read a policy test table (YAML or JSON: tool, args or command, expected decision); errors name the field."""
    return parse_cases(read_document(path), envelope, str(path))


def run_cases(cases: list[Case], gate: Gate) -> list[Outcome]:
    """Decide every case with ``gate``; each outcome holds the case and the decision (``ok`` when they agree)."""
    return [Outcome(c, gate.decide(c.tool, c.args)) for c in cases]
