"""tether's pytest reporter: every collected test and how it ended, written as JSON for the host.

tether loads this module into the project's test run with ``-p tether_report`` and ``PYTHONPATH`` set to
this directory of tether's own (read-only) install, never from the workspace. It imports only the standard
library and pytest, so it works under whatever interpreter the project's test command uses.

Environment (set by tether, inert without it):

``TETHER_REPORT``        where to write the report (a fresh, unguessable name for each run)
``TETHER_REPORT_NONCE``  echoed into the report; the host rejects a report without it

The report lists each collected test (node id, file, class, function name as written) with its outcome:
``passed``, ``failed``, ``error`` (setup or teardown failed), ``skipped``, ``xfailed``, ``xpassed`` or
``not_run``; the tests deselected (``-k``, ``-m``, ``--deselect``, a hook calling ``pytest_deselected``);
collection errors; and pytest's exit status. An in-process reporter can be subverted by code in the same
process (a ``conftest.py``), which is why tether also treats any change to test files and test
configuration as a finding of its own.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest


class Recorder:
    def __init__(self, path: str, nonce: str) -> None:
        self.path, self.nonce = path, nonce
        self.tests: dict[str, dict[str, Any]] = {}
        self.deselected: list[str] = []
        self.errors: list[dict[str, str]] = []

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        for item in session.items:
            cls = getattr(item, "cls", None)
            self.tests[item.nodeid] = {
                "id": item.nodeid,
                "file": str(item.path),
                "cls": cls.__qualname__ if cls is not None else None,
                "function": getattr(item, "originalname", None) or item.name,
                "outcome": "not_run",
            }

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        self.deselected.extend(i.nodeid for i in items)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.errors.append({"id": report.nodeid, "message": str(report.longrepr)[-2000:]})

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        test = self.tests.get(report.nodeid)
        if test is None:
            return
        xfail = hasattr(report, "wasxfail")
        if report.when == "call":
            if report.passed:
                test["outcome"] = "xpassed" if xfail else "passed"
            elif report.skipped:
                test["outcome"] = "xfailed" if xfail else "skipped"
            else:
                test["outcome"] = "failed"
        elif report.failed:  # setup or teardown
            test["outcome"] = "error"
        elif report.skipped:  # skipped in setup: a marker, a fixture calling pytest.skip()
            test["outcome"] = "xfailed" if xfail else "skipped"

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        report = {
            "nonce": self.nonce,
            "exitstatus": int(exitstatus),
            "collect_only": bool(session.config.option.collectonly),
            "tests": list(self.tests.values()),
            "deselected": self.deselected,
            "errors": self.errors,
        }
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        tmp = f"{self.path}.part"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(report, f)
        os.replace(tmp, self.path)


def pytest_configure(config: pytest.Config) -> None:
    path, nonce = os.environ.get("TETHER_REPORT"), os.environ.get("TETHER_REPORT_NONCE")
    if path and nonce and not hasattr(config, "workerinput"):
        config.pluginmanager.register(Recorder(path, nonce), "tether_report_recorder")
