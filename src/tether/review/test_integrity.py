"""The reviewer's test-integrity findings: changes to the test surface, and source that special-cases a test.

- ``test_changed`` (adversarial): every test file or test configuration added, modified or deleted since the
  baseline, by any tool, shown with its diff. It blocks completion (high) when tests may not change —
  ``verification.tests_may_change: false``, or unset and the plan's constraints forbid editing tests —
  and is information (low) otherwise.
- ``special_case`` (adversarial, high): a changed source line compares a value with a literal that a test
  passes in or expects (``if xs == [4, 1, 3, 2]: return 2.5``). Only literals a fix has no business
  naming count: containers of two or more items and non-integral numbers.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from tether.envelope.schema import Envelope
from tether.verify.testsurface import SurfaceChange, is_surface

from .reviewer import ReviewFinding

_VERB = r"(edit|modif|chang|touch|alter|rewrit|delet|remov|weaken|skip|disabl)\w*"
FORBIDS_TEST_EDITS = re.compile(
    r"\b(do\s+not|don'?t|never|must\s+not|mustn'?t|should\s+not|shouldn'?t|may\s+not|cannot|can'?t|no)\s+"
    rf"(\w+\s+){{0,3}}?{_VERB}\s+(\w+\s+){{0,3}}?(tests?|test\s+files?|the\s+test\s+suite)\b"
    r"|\btests?\s+(files?\s+)?(are|is|stay|remain)\s+(read[- ]only|off[- ]limits|frozen|unchanged)"
    r"|\bleave\s+(the\s+)?tests?\s+(alone|unchanged|as\s+they\s+are)"
    r"|\btests?\s+(must|may|should)\s+not\s+(be\s+)?" + _VERB,
    re.IGNORECASE,
)


def forbids_test_edits(constraints: Sequence[str]) -> bool:
    return any(FORBIDS_TEST_EDITS.search(c) for c in constraints)


def allows_test_edits(envelope: Envelope, plan: Mapping[str, Any] | None) -> bool:
    """The envelope's setting; unset, whether the plan's constraints leave the tests open to change."""
    setting = envelope.verification.tests_may_change
    if setting is not None:
        return setting
    constraints = [str(c) for c in (plan or {}).get("constraints", []) or []]
    return not forbids_test_edits(constraints)


def surface_findings(
    envelope: Envelope, plan: Mapping[str, Any] | None, changed: Sequence[SurfaceChange]
) -> list[ReviewFinding]:
    """One finding per changed test-surface file (``tether.verify.testsurface.changes``), with its diff."""
    may_change = allows_test_edits(envelope, plan)
    why = "" if may_change else " — tests may not change in this run (verification.tests_may_change / the plan)"
    return [
        ReviewFinding(
            "adversarial",
            "low" if may_change else "high",
            f"test surface {c.kind}: {c.path}{why}",
            c.path,
            "test_changed",
            c.diff(),
        )
        for c in changed
    ]


# ---- special-casing ------------------------------------------------------------------------


def _literal(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _telling(value: Any) -> bool:
    """A literal a genuine fix would not name: a container of two or more items, or a non-integral number."""
    if isinstance(value, (list, tuple, set, frozenset, dict)):
        return len(value) >= 2
    return isinstance(value, float) and not value.is_integer()


def _key(value: Any) -> str:
    if isinstance(value, (set, frozenset)):
        return repr(sorted(map(repr, value)))
    if isinstance(value, tuple):
        value = list(value)
    return repr(value)


def _python_trees(files: Iterable[tuple[str, bytes]]) -> Iterator[tuple[str, ast.Module]]:
    """The Python files among ``files``, parsed; one that does not parse is the syntax sensor's business."""
    for path, data in files:
        if not path.endswith(".py"):
            continue
        try:
            yield path, ast.parse(data)
        except (SyntaxError, ValueError):
            continue


def literals_in_tests(sources: Mapping[str, bytes]) -> dict[str, str]:
    """Telling literals in test files (call arguments, compared values) -> the test file using it."""
    found: dict[str, str] = {}
    for path, tree in _python_trees(sources.items()):
        for node in ast.walk(tree):
            candidates: list[ast.AST] = []
            if isinstance(node, ast.Call):
                candidates += [*node.args, *(k.value for k in node.keywords)]
            elif isinstance(node, ast.Compare):
                candidates += [node.left, *node.comparators]
            for c in candidates:
                value = _literal(c)
                if value is not None and _telling(value):
                    found.setdefault(_key(value), path)
    return found


def _operands(node: ast.Compare) -> list[ast.AST]:
    """The compared values, and the items of a literal container compared with ``in`` (``xs in ([1, 2],)``)."""
    out: list[ast.AST] = [node.left, *node.comparators]
    for c in node.comparators:
        if isinstance(c, (ast.Tuple, ast.List, ast.Set)):
            out += c.elts
    return out


def special_cases(
    sources: Mapping[str, bytes], added_lines: Mapping[str, set[int]], literals: Mapping[str, str]
) -> list[ReviewFinding]:
    """Comparisons on added source lines against a literal that a test uses."""
    out: list[ReviewFinding] = []
    touched = ((p, d) for p, d in sorted(sources.items()) if added_lines.get(p) and not is_surface(p))
    for path, tree in _python_trees(touched):
        lines = added_lines[path]
        for node in ast.walk(tree):
            if not isinstance(node, ast.Compare) or node.lineno not in lines:
                continue
            for operand in _operands(node):
                value = _literal(operand)
                if value is None or not _telling(value):
                    continue
                test = literals.get(_key(value))
                if test is not None:
                    out.append(
                        ReviewFinding(
                            "adversarial",
                            "high",
                            f"line {node.lineno} special-cases {ast.unparse(operand)[:60]}, a literal from {test}: "
                            "fix the general case, not the test's input",
                            path,
                            "special_case",
                        )
                    )
                    break
    return out
