"""The test-integrity comparison: the final test run against the baseline taken before the agent's first write.

Pure: given the baseline (``tests.baseline``), the final run's report and a way to read a file's bytes, it
names every way the suite was made to stop telling the truth, each as a :class:`Problem` naming the test
and the technique:

============== =====================================================================================
technique      what happened to a test the baseline collected
============== =====================================================================================
deleted        its file is gone
renamed        its function is gone from its file (renamed, so no longer collected, or deleted)
deselected     pytest deselected it (``-k``/``-m``/``--deselect`` in ``addopts``, a hook)
uncollected    it is still written but was not collected (a ``conftest.py`` hook, collection config)
skipped        it was skipped (a marker, ``pytest.skip()``, ``skipTest``) and ran at the baseline
xfailed        it was marked expected-to-fail
not_run        it was collected but never reported an outcome
early_return   its body gained a ``return`` (it returns before its assertions)
asserts_dropped its body has fewer assertions than at the baseline
skip_added     its body or decorators gained a skip/xfail
still_failing  ``verification.must_fix`` names it, and it is collected neither at the baseline nor now
regression     it passed at the baseline and fails now
============== =====================================================================================

A test that failed at the baseline and fails now is an ordinary test failure, unless ``must_fix`` leaves it
out (``none``, or a list of ids without it): then it is *tolerated* and does not fail verification.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from tether.events.kinds_baseline import CaseRecord, CaseShape, SuiteBaseline
from tether.quickenum import Quick

from .result import Diagnostic
from .testreport import ReportedCase, TestReport
from .testshape import ShapeReader, find_function
from .testsurface import digest

MustFix = Literal["failing", "none"] | list[str]
FAILING = frozenset({"failed", "error"})


class Technique(StrEnum, metaclass=Quick):
    DELETED = "deleted"
    RENAMED = "renamed"
    DESELECTED = "deselected"
    UNCOLLECTED = "uncollected"
    SKIPPED = "skipped"
    XFAILED = "xfailed"
    NOT_RUN = "not_run"
    EARLY_RETURN = "early_return"
    ASSERTS_DROPPED = "asserts_dropped"
    SKIP_ADDED = "skip_added"
    STILL_FAILING = "still_failing"
    REGRESSION = "regression"


@dataclass(frozen=True)
class Problem:
    test: str
    technique: Technique
    message: str
    file: str

    def diagnostic(self) -> Diagnostic:
        return Diagnostic(self.file, None, f"{self.test}: {self.message}", f"integrity.{self.technique.value}")


Source = Callable[[str], bytes | None]


def compare(baseline: SuiteBaseline, final: TestReport, source: Source, must_fix: MustFix = "failing") -> list[Problem]:
    """Every integrity problem of ``final`` against ``baseline``; ``source(path)`` reads a file's bytes now."""
    now = final.by_id()
    deselected = set(final.deselected)
    reader = ShapeReader(source)
    unchanged = _unchanged_files(baseline, source)
    problems: list[Problem] = []
    for base in baseline.tests:
        case = now.get(base.id)
        if case is None:
            problems.append(_missing(base, base.id in deselected, reader))
            continue
        problems += _outcome(base, case)
        if case.file != base.file or case.file not in unchanged:
            problems += _shape(base, reader.shape(case.file, case.cls, case.function))
    problems += _must_fix(baseline, now, must_fix)
    return problems


def _unchanged_files(baseline: SuiteBaseline, source: Source) -> set[str]:
    """Test files whose bytes are the baseline's: their tests keep their baseline shapes (no need to parse)."""
    return {p for p, h in baseline.surface.items() if (data := source(p)) is not None and digest(data) == h}


def _missing(base: CaseRecord, deselected: bool, reader: ShapeReader) -> Problem:
    def p(t: Technique, msg: str) -> Problem:
        return Problem(base.id, t, msg, base.file)

    if deselected:
        return p(Technique.DESELECTED, "deselected (it ran at the baseline): -k/-m/--deselect in the config or a hook")
    exists, tree = reader.tree(base.file)
    if not exists:
        return p(Technique.DELETED, f"not collected: {base.file} is gone (deleted or renamed)")
    if tree is not None and find_function(tree, base.cls, base.function) is None:
        where = f"{base.cls}.{base.function}" if base.cls else base.function
        return p(Technique.RENAMED, f"not collected: {where} is no longer in {base.file} (renamed or deleted)")
    return p(
        Technique.UNCOLLECTED,
        "not collected although it is still written: removed from collection (a conftest.py hook, "
        "collection settings or the test command)",
    )


def _outcome(base: CaseRecord, case: ReportedCase) -> list[Problem]:
    out = case.outcome
    if out == base.outcome or out == "passed":
        return []
    if out == "skipped":
        return [Problem(base.id, Technique.SKIPPED, f"skipped now; it was {base.outcome} at the baseline", base.file)]
    if out == "xfailed":
        return [Problem(base.id, Technique.XFAILED, f"xfailed now; it was {base.outcome} at the baseline", base.file)]
    if out == "not_run":
        return [Problem(base.id, Technique.NOT_RUN, "collected but never ran (the session stopped early?)", base.file)]
    if out in FAILING and base.outcome in ("passed", "xpassed"):
        return [Problem(base.id, Technique.REGRESSION, f"{out} now; it passed at the baseline", base.file)]
    return []


def _shape(base: CaseRecord, now: CaseShape | None) -> list[Problem]:
    was = base.shape
    if was is None or now is None:
        return []
    out: list[Problem] = []
    if now.returns > was.returns:
        out.append(
            Problem(
                base.id,
                Technique.EARLY_RETURN,
                f"{now.returns - was.returns} return statement(s) added: it returns before its assertions",
                base.file,
            )
        )
    if now.asserts < was.asserts:
        out.append(
            Problem(
                base.id,
                Technique.ASSERTS_DROPPED,
                f"{was.asserts} assertion(s) at the baseline, {now.asserts} now",
                base.file,
            )
        )
    if now.skips > was.skips:
        out.append(Problem(base.id, Technique.SKIP_ADDED, "a skip/xfail was added to it", base.file))
    return out


def must_fix_ids(baseline: SuiteBaseline, must_fix: MustFix) -> list[str]:
    if must_fix == "none":
        return []
    if must_fix == "failing":
        return [t.id for t in baseline.tests if t.outcome in FAILING]
    return list(must_fix)


def _must_fix(baseline: SuiteBaseline, now: dict[str, ReportedCase], must_fix: MustFix) -> list[Problem]:
    """Named in ``must_fix`` yet collected neither at the baseline nor now (a failing one is a plain failure)."""
    known = {t.id for t in baseline.tests}
    return [
        Problem(
            test_id, Technique.STILL_FAILING, "named by verification.must_fix; not collected", test_id.split("::")[0]
        )
        for test_id in must_fix_ids(baseline, must_fix)
        if test_id not in known and test_id not in now
    ]


def tolerated_failures(baseline: SuiteBaseline, must_fix: MustFix) -> set[str]:
    """Tests that failed at the baseline and that ``must_fix`` does not require to pass: they may still fail."""
    required = set(must_fix_ids(baseline, must_fix))
    return {t.id for t in baseline.tests if t.outcome in FAILING and t.id not in required}


def describe(problems: Sequence[Problem]) -> str:
    techniques = sorted({p.technique.value for p in problems})
    tests = sorted({p.test for p in problems})
    shown = ", ".join(tests[:3]) + ("…" if len(tests) > 3 else "")
    return f"test integrity: {len(problems)} problem(s) ({', '.join(techniques)}) in {shown}"


def baseline_shapes(tests: Sequence[ReportedCase], source: Source) -> list[CaseRecord]:
    """Baseline records for a report's tests, each with its function's shape read from ``source``."""
    reader = ShapeReader(source)
    return [
        CaseRecord(
            id=t.id,
            file=t.file,
            cls=t.cls,
            function=t.function,
            outcome=t.outcome,
            shape=reader.shape(t.file, t.cls, t.function),
        )
        for t in tests
    ]
