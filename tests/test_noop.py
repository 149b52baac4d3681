"""The ``outputs.no_op`` grammar: what parses, what is refused, and how each clause is judged (pure)."""

from __future__ import annotations

import pytest

from tether.envelope import noop

REQUIRED = {"snapshot": True, "syntax": True, "tests": True, "lint": False}


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        ("tests pass", [("sensor", "tests")]),
        ("Tests pass.", [("sensor", "tests")]),
        ("required sensors pass and sensor lint passes", [("required", ""), ("sensor", "lint")]),
        ("  never ", [("never", "")]),
        ("sensor  scoped_tests   passes", [("sensor", "scoped_tests")]),
    ],
)
def test_the_grammar(text: str, kinds: list[tuple[str, str]]) -> None:
    assert [(c.kind, c.sensor) for c in noop.parse(text)] == kinds


@pytest.mark.parametrize(
    "text",
    [
        "The tests already pass before any change.",  # prose: not a condition
        "sensor coverage passes",  # not a sensor
        "tests pass or never",  # no 'or'
        "tests pass and",  # a dangling 'and'
        "",
        "sensor tests passes; rm -rf /",
    ],
)
def test_what_is_not_a_condition(text: str) -> None:
    with pytest.raises(ValueError, match="not a clause"):
        noop.parse(text)


def test_each_clause_is_judged_and_anything_but_pass_fails_closed() -> None:
    outcomes = {"snapshot": "PASS", "syntax": "PASS", "tests": "PASS", "lint": "SKIPPED"}
    got = noop.evaluate("required sensors pass and sensor lint passes and sensor types passes", outcomes, REQUIRED)
    assert [(c.clause, c.holds) for c in got] == [
        ("required sensors pass", True),
        ("sensor lint passes", False),
        ("sensor types passes", False),
    ]
    assert got[1].detail == "sensor lint: SKIPPED" and got[2].detail == "sensor types: did not run"
    failing = noop.evaluate("required sensors pass", {**outcomes, "tests": "ERROR"}, REQUIRED)
    assert not failing[0].holds and "tests: ERROR" in failing[0].detail
    assert not noop.evaluate("never", outcomes, REQUIRED)[0].holds
    prose = noop.evaluate("nothing to do", outcomes, REQUIRED)
    assert len(prose) == 1 and not prose[0].holds and "expected clauses joined by 'and'" in prose[0].detail
