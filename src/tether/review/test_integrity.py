"""The reviewer's test-integrity findings: changes to the test surface, and source that special-cases a test.

- ``test_changed`` (adversarial): every test file or test configuration added, modified or deleted since the
  baseline, by any tool, shown with its diff. It blocks completion (high) when tests may not change —
  ``verification.tests_may_change: false``, or unset and the plan's constraints forbid editing tests —
  and is information (low) otherwise.
- ``special_case`` (adversarial, high): a changed source line compares a value with a literal that a test
  passes in or expects (``if xs == [4, 1, 3, 2]: return 2.5``). Only literals a fix has no business
  naming count: containers of two or more items and non-integral numbers.
- ``runner_probe`` (adversarial, high): a changed source line (not a test file) that looks at the test run
  itself rather than the problem — imports pytest or its plugin machinery, names pytest's or tether's
  reporter's variables (``PYTEST_CURRENT_TEST``, ``TETHER_REPORT``), ``"pytest"`` (``in sys.modules``),
  ``/proc/self``, a test file's path, or reaches into frames, the garbage collector or the process's exit
  (``sys._getframe``, ``inspect.stack``, ``gc.get_objects``, ``os._exit``, ``atexit.register``). Source runs
  inside the test process: from there it can answer only when tested, or rewrite the report. A name spelt
  another way (``getattr``, a string built at run time) passes this check; the diff still shows it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from tether.envelope.schema import Envelope
from tether.verify.testsurface import SECTION_CONFIGS, SurfaceChange, is_surface

from .reviewer import FindingSeverity, ReviewFinding

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


# ---- probes of the test run ------------------------------------------------------------------------

PROBE_MODULES = frozenset({"pytest", "_pytest", "pluggy", "tether_report"})
PROBE_STRINGS = frozenset({"pytest", "_pytest", "py.test", "tests"})
#: Probes ordinary programs make for their own reasons (a shutdown handler, ``exclude=["tests"]`` in a setup
#: script): shown with the review (severity low), never alone a reason to refuse the completion.
PROBE_COMMON = frozenset({"uses os._exit", "uses atexit.register", "uses signal.signal", "names 'tests'"})
PROBE_SUBSTRINGS = ("PYTEST_", "TETHER_REPORT", "tether_report", ".tether-report", "/proc/self")
PROBE_ATTRS = frozenset({"_getframe", "f_back", "f_locals", "f_globals", "_exit", "get_objects", "get_referrers"})
PROBE_CALLS = frozenset({("inspect", "stack"), ("inspect", "currentframe"), ("inspect", "getouterframes")})
PROBE_CALLS |= {("atexit", "register"), ("signal", "signal")}


def _probe(node: ast.AST) -> str | None:
    """What ``node`` probes of the test run, or None."""
    if isinstance(node, ast.Import | ast.ImportFrom):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
        hit = next((n for n in names if n.split(".")[0] in PROBE_MODULES), None)
        return f"imports {hit}" if hit is not None else None
    if isinstance(node, ast.Attribute):
        owner = node.value.id if isinstance(node.value, ast.Name) else ""
        if node.attr in PROBE_ATTRS or (owner, node.attr) in PROBE_CALLS:
            return f"uses {owner + '.' if owner else ''}{node.attr}"
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 300:
        text = node.value
        if text in PROBE_STRINGS or any(s in text for s in PROBE_SUBSTRINGS):
            return f"names {text!r}"
        if " " not in text and is_surface(text) and text.rsplit("/", 1)[-1] not in SECTION_CONFIGS:
            return f"names the test file {text!r}"
    return None


def _docstrings(tree: ast.Module) -> set[int]:
    """The ids of the docstring constants (a module's, a class's, a function's): prose, not probes."""
    out = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)  # a list of statements, or an expression (lambda, x if c else y)
        first = body[0] if isinstance(body, list) and body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
            out.add(id(first.value))
    return out


def runner_probes(sources: Mapping[str, bytes], added_lines: Mapping[str, set[int]]) -> list[ReviewFinding]:
    """Added source lines (not the test surface) that look at the test run rather than the problem: one finding
    per file, high (refusing) for the first probe of the test run, low for a :data:`PROBE_COMMON` one alone."""
    out: list[ReviewFinding] = []
    touched = ((p, d) for p, d in sorted(sources.items()) if added_lines.get(p) and not is_surface(p))
    for path, tree in _python_trees(touched):
        lines, prose = added_lines[path], _docstrings(tree)
        found = [
            (getattr(node, "lineno", 0), what)
            for node in ast.walk(tree)
            if getattr(node, "lineno", None) in lines and id(node) not in prose and (what := _probe(node)) is not None
        ]
        if not found:
            continue
        line, what = next(((n, w) for n, w in found if w not in PROBE_COMMON), found[0])
        why = f"line {line} {what}: source that looks at the test run, not the problem"
        severity: FindingSeverity = "low" if what in PROBE_COMMON else "high"
        out.append(ReviewFinding("adversarial", severity, why, path, "runner_probe"))
    return out


def source_findings(
    sources: Mapping[str, bytes], added_lines: Mapping[str, set[int]], tests: Mapping[str, bytes]
) -> list[ReviewFinding]:
    """The checks of the source lines a run added: special-casing a test's literals, probing the test run."""
    return [*special_cases(sources, added_lines, literals_in_tests(tests)), *runner_probes(sources, added_lines)]
