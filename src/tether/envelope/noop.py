"""``outputs.no_op``: when finishing without any change is the right answer — a small condition, not prose.

A run that changed nothing and sent nothing out may end NO_OP only if the envelope's condition holds on
the untouched workspace. The condition is one or more clauses joined by ``and`` (case and a final full
stop do not matter)::

    required sensors pass      every sensor the envelope marks required passed
    sensor NAME passes         that sensor (syntax, lint, types, scoped_tests, tests, policy) passed
    tests pass                 the same as ``sensor tests passes``
    never                      finishing without a change is never right

The sensors are those of the completion check, run on a workspace the snapshot shows byte for byte as it
was before the agent acted. Parsing is here (strict validation refuses a condition it cannot read);
evaluating it is a pure function of the sensors' outcomes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

SENSORS = ("syntax", "lint", "types", "scoped_tests", "tests", "policy")
GRAMMAR = (
    "clauses joined by 'and': 'required sensors pass', 'sensor NAME passes' (NAME: " + ", ".join(SENSORS) + "), "
    "'tests pass', or 'never'"
)
_SENSOR = re.compile(r"sensor (\w+) passes")


@dataclass(frozen=True)
class Clause:
    """One clause: ``kind`` is ``required``, ``sensor`` (with ``sensor`` set) or ``never``."""

    text: str
    kind: str
    sensor: str = ""


def parse(condition: str) -> list[Clause]:
    """The clauses of ``condition``; ``ValueError`` naming the clause that is not in the grammar."""
    text = " ".join(condition.lower().split()).removesuffix(".")
    clauses: list[Clause] = []
    for part in text.split(" and "):
        part = part.strip()
        if part == "required sensors pass":
            clauses.append(Clause(part, "required"))
        elif part == "never":
            clauses.append(Clause(part, "never"))
        elif part == "tests pass":
            clauses.append(Clause(part, "sensor", "tests"))
        elif (m := _SENSOR.fullmatch(part)) and m.group(1) in SENSORS:
            clauses.append(Clause(part, "sensor", m.group(1)))
        else:
            raise ValueError(f"{part!r} is not a clause the no-op condition knows")
    return clauses


@dataclass(frozen=True)
class ClauseResult:
    """One clause evaluated: whether it holds, and the evidence in words."""

    clause: str
    holds: bool
    detail: str


def evaluate(condition: str, outcomes: Mapping[str, str], required: Mapping[str, bool]) -> list[ClauseResult]:
    """Each clause of ``condition`` against the sensors' ``outcomes`` (PASS, FAIL, SKIPPED, ERROR) by name.

    A sensor that did not run, was SKIPPED or could not decide does not pass: the condition fails closed.
    A condition that does not parse is a single clause that does not hold.
    """
    try:
        clauses = parse(condition)
    except ValueError as e:
        return [ClauseResult(condition, False, f"{e}; expected {GRAMMAR}")]
    return [_one(c, outcomes, required) for c in clauses]


def _one(c: Clause, outcomes: Mapping[str, str], required: Mapping[str, bool]) -> ClauseResult:
    if c.kind == "never":
        return ClauseResult(c.text, False, "the envelope says finishing without a change is never right")
    if c.kind == "sensor":
        got = outcomes.get(c.sensor, "did not run")
        return ClauseResult(c.text, got == "PASS", f"sensor {c.sensor}: {got}")
    names = [n for n, req in required.items() if req]
    failing = [f"{n}: {outcomes.get(n, 'did not run')}" for n in names if outcomes.get(n) != "PASS"]
    detail = "; ".join(failing) if failing else "passed: " + (", ".join(names) or "(no required sensors)")
    return ClauseResult(c.text, not failing, detail)
