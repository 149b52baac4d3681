from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from verify_helpers import BASELINES, VENV_BIN, diff_now, envelope

from tether.sandbox.local import LocalSandbox
from tether.verify import completion_verdict, run_cascade
from tether.verify.cascade import cascade_events
from tether.verify.scope import select_tests
from tether.verify.sensors import SENSORS, SensorContext, configured_type_checker

ALL = [{"name": n, "required": True} for n in ("syntax", "policy", "lint", "types", "scoped_tests", "tests")]


def ctx(ws: Path, sandbox: LocalSandbox, changed: list[str], **env: object) -> SensorContext:
    base, blobs = BASELINES[ws]
    return SensorContext(envelope(**env), ws, tuple(changed), sandbox, diff_now(ws), True, base, blobs)


def test_syntax_fails_with_file_and_line(project: Callable[..., Path], sandbox: LocalSandbox) -> None:
    ws = project()
    (ws / "calc.py").write_text("def add(a, b):\n    return a +\n")
    r = SENSORS["syntax"](ctx(ws, sandbox, ["calc.py"]))
    assert r.result == "FAIL"
    assert r.diagnostics[0].file == "calc.py" and r.diagnostics[0].line == 2
    (ws / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    assert SENSORS["syntax"](ctx(ws, sandbox, ["calc.py"])).result == "PASS"


def test_lint_runs_ruff_and_reports_codes(
    project: Callable[..., Path], sandbox: LocalSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", f"{VENV_BIN}:/usr/bin:/bin")
    ws = project()
    (ws / "calc.py").write_text("import os\n\ndef add(a, b):\n    return a + b\n")
    r = SENSORS["lint"](ctx(ws, sandbox, ["calc.py"]))
    assert r.result == "FAIL", r.summary
    assert any(d.code == "F401" and d.file == "calc.py" and d.line == 1 for d in r.diagnostics)
    (ws / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    assert SENSORS["lint"](ctx(ws, sandbox, ["calc.py"])).result == "PASS"


def test_missing_tool_is_skipped_never_pass(
    project: Callable[..., Path], sandbox: LocalSandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ws = project({"pyproject.toml": "[tool.mypy]\nstrict = true\n"})
    (ws / "calc.py").write_text("import os\n")
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    gone = {"verification": {"tools": {"ruff": str(empty / "ruff"), "mypy": "mypy-not-installed"}}}
    assert SENSORS["lint"](ctx(ws, sandbox, ["calc.py"], **gone)).result == "SKIPPED"
    assert SENSORS["types"](ctx(ws, sandbox, ["calc.py"], **gone)).result == "SKIPPED"
    r = SENSORS["tests"](ctx(ws, sandbox, [], verification={"test_command": "pytest-that-does-not-exist -q"}))
    assert r.result == "SKIPPED"


def test_types_uses_configured_mypy(
    project: Callable[..., Path], sandbox: LocalSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", f"{VENV_BIN}:/usr/bin:/bin")
    ws = project({"mypy.ini": "[mypy]\n"})
    assert configured_type_checker(ws) == "mypy"
    (ws / "calc.py").write_text("def add(a: int, b: int) -> int:\n    return 'x'\n")
    r = SENSORS["types"](ctx(ws, sandbox, ["calc.py"]))
    assert r.result == "FAIL", r.summary
    assert r.diagnostics[0].file == "calc.py" and r.diagnostics[0].line == 2
    (ws / "mypy.ini").unlink()
    assert SENSORS["types"](ctx(ws, sandbox, ["calc.py"])).result == "SKIPPED"


def test_tests_sensor_names_failing_tests(project: Callable[..., Path], sandbox: LocalSandbox) -> None:
    ws = project()
    assert SENSORS["tests"](ctx(ws, sandbox, [])).result == "PASS"
    (ws / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    r = SENSORS["tests"](ctx(ws, sandbox, ["calc.py"]))
    assert r.result == "FAIL"
    assert [d.code for d in r.diagnostics] == ["tests/test_calc.py::test_add"]
    assert r.diagnostics[0].file == "tests/test_calc.py" and r.diagnostics[0].line == 5
    assert "1 failed" in r.summary


def test_scoped_tests_select_by_imports(project: Callable[..., Path], sandbox: LocalSandbox) -> None:
    ws = project(
        {
            "src/pkg/__init__.py": "",
            "src/pkg/core.py": "def f():\n    return 1\n",
            "src/pkg/api.py": "from .core import f\n\ndef g():\n    return f()\n",
            "tests/test_api.py": (
                "import sys\nsys.path.insert(0, 'src')\nfrom pkg.api import g\n\n\ndef test_g():\n    assert g() == 1\n"
            ),
        }
    )
    assert select_tests(ws, ["src/pkg/core.py"]) == ["tests/test_api.py"]  # transitive: api imports core
    assert select_tests(ws, ["calc.py"]) == ["tests/test_calc.py"]
    assert select_tests(ws, ["tests/test_util.py"]) == ["tests/test_util.py"]
    (ws / "util.py").write_text("def shout(s):\n    return s\n")
    r = SENSORS["scoped_tests"](ctx(ws, sandbox, ["util.py"]))
    assert r.result == "FAIL" and [d.code for d in r.diagnostics] == ["tests/test_util.py::test_shout"]
    assert "1 test files selected" in r.summary
    assert SENSORS["scoped_tests"](ctx(ws, sandbox, ["README.md"])).result == "SKIPPED"


def test_policy_write_set_secrets_and_churn(project: Callable[..., Path], sandbox: LocalSandbox) -> None:
    ws = project()
    (ws / "notes.txt").write_text("hello\n")
    r = SENSORS["policy"](ctx(ws, sandbox, []))
    assert r.result == "FAIL" and r.diagnostics[0].code == "policy.write_set" and r.diagnostics[0].file == "notes.txt"
    (ws / "notes.txt").unlink()
    key = "AKIA" + "ABCDEFGHIJKLMNOP"
    (ws / "calc.py").write_text(f"KEY = '{key}'\n\ndef add(a, b):\n    return a + b\n")
    r = SENSORS["policy"](ctx(ws, sandbox, ["calc.py"]))
    secret = [d for d in r.diagnostics if d.code == "policy.secret"]
    assert secret and secret[0].line == 1 and key not in secret[0].message
    (ws / "calc.py").write_text("def add(a, b):\n    return b + a\n")
    assert SENSORS["policy"](ctx(ws, sandbox, ["calc.py"])).result == "PASS"
    r = SENSORS["policy"](ctx(ws, sandbox, ["calc.py"], budgets={"churn_pct": 5}))
    assert r.result == "FAIL" and r.diagnostics[0].code == "policy.churn"
    d = diff_now(ws)
    assert (d.insertions, d.deletions, d.touched_lines) == (1, 1, 3)  # the touched file only, old lines and new
    r = SENSORS["policy"](ctx(ws, sandbox, ["calc.py"], budgets={"churn_lines": 1}))
    assert r.result == "FAIL" and r.diagnostics[0].code == "policy.churn_lines"


def test_churn_is_measured_within_the_touched_files(project: Callable[..., Path], sandbox: LocalSandbox) -> None:
    body = "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(100))
    ws = project({"big.py": body, "other.py": body})
    (ws / "big.py").write_text(body.replace("return x + 7\n", "return x - 7\n"))
    d = diff_now(ws)
    assert d.paths == ["big.py"] and d.churn_pct is not None and d.churn_pct < 1  # 2 of 401 lines
    (ws / "big.py").write_text("".join(f"def g{i}(y):\n    return y * {i}\n\n\n" for i in range(100)))
    rewrite = diff_now(ws)
    assert rewrite.churn_pct is not None and rewrite.churn_pct > 60  # every non-blank line rewritten, whatever the repo
    r = SENSORS["policy"](ctx(ws, sandbox, ["big.py"], budgets={"churn_pct": 50}))
    assert r.result == "FAIL" and r.diagnostics[0].code == "policy.churn"


def test_policy_without_a_usable_snapshot_is_error_never_pass(
    project: Callable[..., Path], sandbox: LocalSandbox
) -> None:
    ws = project()
    os.mkfifo(ws / "pipe")  # unreadable as a file: the final snapshot has an error
    r = SENSORS["policy"](ctx(ws, sandbox, []))
    assert r.result == "ERROR" and "pipe" in r.summary


def test_tether_dir_and_caches_are_not_part_of_the_diff(project: Callable[..., Path], sandbox: LocalSandbox) -> None:
    ws = project({".gitignore": ""})
    (ws / ".tether").mkdir()
    (ws / ".tether" / "tether.db").write_text("x")
    (ws / "__pycache__").mkdir()
    (ws / "__pycache__" / "calc.cpython-311.pyc").write_text("x")
    assert diff_now(ws).paths == []


def test_cascade_stops_at_first_failure_and_verdict(project: Callable[..., Path], sandbox: LocalSandbox) -> None:
    ws = project()
    env = envelope(verification={"sensors": ALL[:2] + ALL[5:], "test_command": f"{sys.executable} -m pytest -q"})
    (ws / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    results = run_cascade(env, ws, ["calc.py"], sandbox, diff_now(ws))
    assert [(r.sensor, r.result) for r in results] == [("syntax", "PASS"), ("policy", "PASS"), ("tests", "FAIL")]
    accepted, reasons = completion_verdict(results, env)
    assert not accepted and "tests FAILED" in reasons[0]
    (ws / "calc.py").write_text("def add(a, b):\n    return a +\n")
    results = run_cascade(env, ws, ["calc.py"], sandbox, diff_now(ws))
    assert [r.result for r in results] == ["FAIL", "SKIPPED", "SKIPPED"]
    assert results[2].summary == "not reached: syntax failed"
    (ws / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    results = run_cascade(env, ws, ["calc.py"], sandbox, diff_now(ws))
    assert completion_verdict(results, env) == (True, [])
    events = cascade_events(results, env, trigger="completion", changed_files=["calc.py"])
    assert [p.KIND for p in events] == ["sensor.result"] * 3 + ["verify.completed"]
    assert events[-1].model_dump()["accepted"] is True


def test_optional_failure_is_reported_but_does_not_gate_completion(
    project: Callable[..., Path], sandbox: LocalSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", f"{VENV_BIN}:/usr/bin:/bin")
    ws = project()
    sensors = [{"name": "lint", "required": False}, {"name": "scoped_tests", "required": False}, ALL[5]]
    env = envelope(verification={"sensors": sensors, "test_command": f"{sys.executable} -m pytest -q"})
    (ws / "calc.py").write_text("import os\n\n\ndef add(a, b):\n    return a + b\n")  # lint: F401
    results = run_cascade(env, ws, ["calc.py"], sandbox, diff_now(ws))
    assert [(r.sensor, r.result) for r in results] == [("lint", "FAIL"), ("scoped_tests", "PASS"), ("tests", "PASS")]
    assert results[0].diagnostics[0].code == "F401"
    assert completion_verdict(results, env) == (True, [])
    # A failing scoped run predicts the full suite's failure: the cascade stops, and the reason names the failure.
    (ws / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    results = run_cascade(env, ws, ["calc.py"], sandbox, diff_now(ws))
    assert [(r.sensor, r.result) for r in results] == [("lint", "PASS"), ("scoped_tests", "FAIL"), ("tests", "SKIPPED")]
    accepted, reasons = completion_verdict(results, env)
    assert not accepted and "tests was SKIPPED: not reached: scoped_tests failed" in reasons[0]
    assert "tests/test_calc.py::test_add" in reasons[0]


def test_required_sensor_skipped_blocks_completion(project: Callable[..., Path], sandbox: LocalSandbox) -> None:
    ws = project()
    env = envelope(verification={"sensors": [{"name": "types", "required": True}]})
    results = run_cascade(env, ws, ["calc.py"], sandbox, diff_now(ws))
    assert results[0].result == "SKIPPED"
    accepted, reasons = completion_verdict(results, env)
    assert not accepted and "types was SKIPPED" in reasons[0]
    optional = envelope(verification={"sensors": [{"name": "types", "required": False}]})
    assert completion_verdict(run_cascade(optional, ws, ["calc.py"], sandbox, diff_now(ws)), optional)[0]
