"""Running the project's test command with tether's pytest reporter, and reading what it reports.

The reporter (``pytest_plugin/tether_report.py``) is loaded from tether's own install: ``PYTHONPATH`` is set
to that directory and ``PYTEST_ADDOPTS`` to ``-p tether_report``, so any spelling of a pytest command
(``pytest``, ``python -m pytest``, ``py.test tests/``) loads it, and unittest-style suites run through
pytest report the same way. The report file gets a fresh, unguessable name at the workspace root
(``.tether-report-<nonce>.json``; bubblewrap covers ``.tether/`` inside the sandbox) and carries that
nonce; the host opens it without following symlinks, checks the nonce and the shape, and deletes it.
A report that is missing, forged, oversized or malformed is an error, never a pass: verification fails
closed.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shlex
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from tether.events.kinds_baseline import CaseOutcome

from .runner import CommandSandbox, ReceiptLike

PLUGIN_DIR = Path(__file__).resolve().parent / "pytest_plugin"
PLUGIN = "tether_report"
REPORT_PREFIX = ".tether-report-"  # at the workspace root: bubblewrap covers .tether/ inside the sandbox
MAX_REPORT_BYTES = 64 * 1024 * 1024


class ReportError(Exception):
    """The test run's report could not be trusted or read; the message says why."""


class _Raw(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ReportedCase(_Raw):
    id: str
    file: str
    cls: str | None
    function: str
    outcome: CaseOutcome


class CollectError(_Raw):
    id: str
    message: str


class TestReport(_Raw):
    __test__ = False  # not a pytest test class

    nonce: str
    exitstatus: int
    collect_only: bool
    tests: list[ReportedCase]
    deselected: list[str]
    errors: list[CollectError]

    def by_id(self) -> dict[str, ReportedCase]:
        return {t.id: t for t in self.tests}


def runner_of(command: str) -> Literal["pytest", "other"]:
    """``pytest`` when the command runs pytest (``pytest``, ``py.test``, ``python -m pytest``), else ``other``."""
    try:
        words = shlex.split(command)
    except ValueError:
        return "other"
    for w in words:
        name = PurePosixPath(w).name
        if name in ("pytest", "py.test") or name.startswith("pytest-3"):
            return "pytest"
    return "other"


@dataclass(frozen=True)
class Reporting:
    """Where one test run's report goes, and the environment that makes the reporter write it."""

    path: Path
    nonce: str

    @classmethod
    def fresh(cls, workspace: Path) -> Reporting:
        nonce = secrets.token_hex(16)
        return cls(workspace / f"{REPORT_PREFIX}{nonce}.json", nonce)

    def env(self, collect_only: bool = False) -> dict[str, str]:
        addopts = f"-p {PLUGIN}" + (" --collect-only" if collect_only else "")
        return {
            "PYTHONPATH": str(PLUGIN_DIR),
            "PYTEST_ADDOPTS": addopts,
            "TETHER_REPORT": str(self.path),
            "TETHER_REPORT_NONCE": self.nonce,
        }

    def read(self, workspace: Path) -> TestReport:
        """The report, validated; the file is removed whatever happens."""
        try:
            data = _read_nofollow(self.path)
        finally:
            for p in (self.path, self.path.with_name(self.path.name + ".part")):
                with contextlib.suppress(OSError):
                    p.unlink()
        try:
            report = TestReport.model_validate(json.loads(data))
        except (ValueError, ValidationError) as e:
            raise ReportError(f"the test reporter's report {self.path} is malformed: {_first_line(e)}") from e
        if not secrets.compare_digest(report.nonce, self.nonce):
            raise ReportError(f"the test report {self.path} does not carry this run's nonce (forged or stale)")
        return report.model_copy(
            update={"tests": [t.model_copy(update={"file": relative(t.file, workspace)}) for t in report.tests]}
        )


def _read_nofollow(path: Path) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError as e:
        raise ReportError(
            "the test run wrote no report (pytest did not start, crashed, exited early, or the reporter was "
            f"disabled); expected {path}"
        ) from e
    except OSError as e:
        raise ReportError(f"cannot open the test report {path}: {e.strerror}") from e
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ReportError(f"the test report {path} is not a regular file")
        if st.st_size > MAX_REPORT_BYTES:
            raise ReportError(f"the test report {path} is {st.st_size} bytes (limit {MAX_REPORT_BYTES})")
        with os.fdopen(os.dup(fd), "rb") as f:
            return f.read(MAX_REPORT_BYTES + 1)
    finally:
        os.close(fd)


def _first_line(e: Exception) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


def relative(file: str, workspace: Path) -> str:
    root = f"{workspace}/"
    if file.startswith(root) and "/./" not in file and "//" not in file and "/../" not in file:
        return file[len(root) :]  # the common case, without pathlib (a suite reports thousands of tests)
    p = Path(file)
    try:
        return p.relative_to(workspace).as_posix() if p.is_absolute() else p.as_posix()
    except ValueError:
        return file


def run_reported(
    sandbox: CommandSandbox,
    workspace: Path,
    command: str,
    *,
    timeout_s: float,
    env: dict[str, str] | None = None,
    collect_only: bool = False,
) -> tuple[ReceiptLike, TestReport | ReportError]:
    """Run a pytest ``command`` in the sandbox with the reporter; the receipt and the report (or why not)."""
    workspace = workspace.resolve()
    reporting = Reporting.fresh(workspace)
    run_env = {**(env or {}), **reporting.env(collect_only)}
    receipt = sandbox.run(command, cwd=workspace, timeout_s=timeout_s, env=run_env)
    try:
        return receipt, reporting.read(workspace)
    except ReportError as e:
        return receipt, e
