"""Right answers: only problems the run introduced, the same tool from any PATH, and ERROR when a tool breaks."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from verify_helpers import BASELINES, diff_now, envelope

from tether.events.kinds_baseline import SuiteBaseline
from tether.sandbox import BwrapSandbox
from tether.sandbox.local import LocalSandbox
from tether.verify import sensors, shadowing
from tether.verify.cascade import completion_verdict, run_cascade
from tether.verify.sensors import SENSORS, SensorContext

OLD_MESS = "import os\nimport sys\n\n\ndef add(a, b):\n    return a + b\n"  # two F401 before the run


def ctx(ws: Path, sandbox: LocalSandbox, changed: list[str], **env: object) -> SensorContext:
    base, blobs = BASELINES[ws]
    return SensorContext(envelope(**env), ws, tuple(changed), sandbox, diff_now(ws), True, base, blobs)


def fake_tool(tmp_path: Path, name: str, body: str) -> str:
    p = tmp_path / "fake-bin" / name
    p.parent.mkdir(exist_ok=True)
    p.write_text("#!/bin/sh\n" + body + "\n")
    p.chmod(0o755)
    return str(p)


def test_lint_reports_only_problems_the_run_introduced(project: Callable[..., Path], sandbox: LocalSandbox) -> None:
    ws = project({"calc.py": OLD_MESS})
    (ws / "calc.py").write_text(OLD_MESS.replace("a + b", "b + a"))  # an honest edit in a messy file
    r = SENSORS["lint"](ctx(ws, sandbox, ["calc.py"]))
    assert r.result == "PASS", r.summary
    assert "2 were there before the run" in r.summary
    (ws / "calc.py").write_text("import json\n" + OLD_MESS)  # one more unused import: the run's
    r = SENSORS["lint"](ctx(ws, sandbox, ["calc.py"]))
    assert r.result == "FAIL" and [d.message for d in r.diagnostics] == ["`json` imported but unused"]
    # The same problem once more is still new: counted, not matched by kind alone.
    (ws / "calc.py").write_text(OLD_MESS + "import os\n")
    r = SENSORS["lint"](ctx(ws, sandbox, ["calc.py"]))
    assert r.result == "FAIL" and len(r.diagnostics) == 1 and r.diagnostics[0].code in ("F401", "F811", "E402")


def test_a_new_file_has_no_baseline_so_all_its_problems_are_the_runs(
    project: Callable[..., Path], sandbox: LocalSandbox
) -> None:
    ws = project()
    (ws / "new.py").write_text(OLD_MESS)
    r = SENSORS["lint"](ctx(ws, sandbox, ["new.py"]))
    assert r.result == "FAIL" and len(r.diagnostics) == 2


def test_types_reports_only_errors_the_run_introduced(project: Callable[..., Path], sandbox: LocalSandbox) -> None:
    old = "def add(a: int, b: int) -> int:\n    return a + b\n\n\ndef bad() -> int:\n    return 'x'\n"
    ws = project({"mypy.ini": "[mypy]\n", "calc.py": old})
    (ws / "calc.py").write_text(old.replace("a + b", "b + a"))
    r = SENSORS["types"](ctx(ws, sandbox, ["calc.py"]))
    assert r.result == "PASS", r.summary
    assert "1 were there before the run" in r.summary
    (ws / "calc.py").write_text(old + "\n\ndef worse() -> str:\n    return 1\n")
    r = SENSORS["types"](ctx(ws, sandbox, ["calc.py"]))
    assert r.result == "FAIL", r.summary
    assert [(d.file, d.line) for d in r.diagnostics] == [("calc.py", 10)]


def test_tools_are_found_the_same_whatever_path_is(
    project: Callable[..., Path], sandbox: LocalSandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ws = project()
    (ws / "calc.py").write_text("import os\n")
    results = []
    for path in (f"{Path(sys.executable).parent}:/usr/bin:/bin", "/usr/bin:/bin", str(tmp_path)):
        monkeypatch.setenv("PATH", path)
        results.append(SENSORS["lint"](ctx(ws, sandbox, ["calc.py"])))
    assert {(r.result, r.tool) for r in results} == {("FAIL", results[0].tool)}
    assert results[0].tool.startswith(str(Path(sys.executable).parent / "ruff")) and "ruff " in results[0].tool
    named = fake_tool(tmp_path, "ruff", 'case "$1" in --version) echo "ruff 9.9.9 (fake)";; *) echo "[]";; esac')
    r = SENSORS["lint"](ctx(ws, sandbox, ["calc.py"], verification={"tools": {"ruff": named}}))
    assert (r.result, r.tool) == ("PASS", f"{named} (ruff 9.9.9 (fake))")  # the envelope's choice, recorded


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ('echo "panic: something broke" >&2; exit 2', "exit 2"),
        ("echo 'this is not json'; exit 1", "exit 1"),
        ('echo \'{"not": "a list"}\'; exit 0', "exit 0"),
    ],
)
def test_a_lint_tool_that_breaks_is_error_never_pass(
    project: Callable[..., Path], sandbox: LocalSandbox, tmp_path: Path, body: str, why: str
) -> None:
    ws = project()
    (ws / "calc.py").write_text("import os\n")
    ruff = fake_tool(tmp_path, "ruff", f'[ "$1" = --version ] && echo ruff 0 && exit 0\n{body}')
    r = SENSORS["lint"](ctx(ws, sandbox, ["calc.py"], verification={"tools": {"ruff": ruff}}))
    assert r.result == "ERROR" and why in r.summary


def test_a_tool_that_hangs_is_error(
    project: Callable[..., Path], sandbox: LocalSandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tether.verify.sensors as sensors

    monkeypatch.setattr(sensors, "LINT_TIMEOUT_S", 1.0)
    ws = project()
    (ws / "calc.py").write_text("import os\n")
    ruff = fake_tool(tmp_path, "ruff", '[ "$1" = --version ] && echo ruff 0 && exit 0\nsleep 30')
    r = SENSORS["lint"](ctx(ws, sandbox, ["calc.py"], verification={"tools": {"ruff": ruff}}))
    assert r.result == "ERROR" and "timed out" in r.summary


def test_mypy_crashing_is_error(project: Callable[..., Path], sandbox: LocalSandbox, tmp_path: Path) -> None:
    ws = project({"mypy.ini": "[mypy]\n"})
    (ws / "calc.py").write_text("x: int = 'a'\n")
    mypy = fake_tool(
        tmp_path, "mypy", '[ "$1" = --version ] && echo mypy 0 && exit 0\necho "INTERNAL ERROR" >&2; exit 2'
    )
    r = SENSORS["types"](ctx(ws, sandbox, ["calc.py"], verification={"tools": {"mypy": mypy}}))
    assert r.result == "ERROR" and "INTERNAL ERROR" in r.summary


def test_a_broken_test_runner_is_error_and_blocks_a_required_sensor(
    project: Callable[..., Path], sandbox: LocalSandbox
) -> None:
    ws = project()
    env = envelope(
        verification={
            "sensors": [{"name": "tests", "required": True}],
            "test_command": f"{sys.executable} -m pytest -q --no-such-option",
        }
    )
    results = run_cascade(env, ws, [], sandbox, diff_now(ws))
    assert results[0].result == "ERROR" and "usage" in results[0].summary
    accepted, reasons = completion_verdict(results, env)
    assert not accepted and "tests could not decide (ERROR)" in reasons[0]


@pytest.mark.bwrap
def test_introduced_only_holds_inside_bubblewrap(project: Callable[..., Path], tmp_path: Path) -> None:
    """The baseline bytes reach the sandboxed tool as an argument: no host path the sandbox cannot see."""
    old = "def add(a: int, b: int) -> int:\n    return a + b\n\n\ndef bad() -> int:\n    return 'x'\n"
    ws = project({"calc.py": OLD_MESS, "typed.py": old, "mypy.ini": "[mypy]\n"})
    box = BwrapSandbox(ws)
    (ws / "calc.py").write_text("import json\n" + OLD_MESS)
    r = SENSORS["lint"](ctx(ws, box, ["calc.py"]))
    assert r.result == "FAIL" and [d.message for d in r.diagnostics] == ["`json` imported but unused"], r.summary
    (ws / "typed.py").write_text(old.replace("a + b", "b + a"))
    r = SENSORS["types"](ctx(ws, box, ["typed.py"]))
    assert r.result == "PASS" and "1 were there before the run" in r.summary, r.summary


def planted_ruff(ws: Path) -> Path:
    """A ruff in the workspace's virtualenv that finds nothing wrong with anything."""
    shim = ws / ".venv" / "bin" / "ruff"
    shim.parent.mkdir(parents=True, exist_ok=True)
    shim.write_text('#!/bin/sh\n[ "$1" = --version ] && echo "ruff 0.0.0" && exit 0\necho "[]"\n')
    shim.chmod(0o755)
    return shim


def with_loaders(c: SensorContext, ws: Path) -> SensorContext:
    """``c`` with a test baseline whose loaders scan is the workspace as it is now (the run's start)."""
    assert c.blobs is not None
    h = c.blobs.put_blob(shadowing.dump(shadowing.scan(ws)[0]))
    base = SuiteBaseline(command="pytest", runner="pytest", ok=False, loaders=h)
    return replace(c, test_baseline=base)


def test_a_tool_planted_in_the_workspace_virtualenv_is_not_run(
    project: Callable[..., Path], sandbox: LocalSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tether's own environment has no ruff, so the workspace's .venv/bin/ruff is found (runner.find_tool): one
    the agent wrote after the run's start is ERROR, never its ``[]``; the one that was there at the start runs."""
    ws = project()
    (ws / "calc.py").write_text("import os\n")
    monkeypatch.setattr(sensors, "find_tool", lambda name, workspace, configured=None: str(ws / ".venv/bin" / name))
    c = with_loaders(ctx(ws, sandbox, ["calc.py"]), ws)
    shim = planted_ruff(ws)
    r = SENSORS["lint"](c)
    assert (r.result, [d.code for d in r.diagnostics]) == ("ERROR", ["lint.tool_changed"]), r.summary
    assert ".venv/bin/ruff" in r.summary
    assert c.blobs is not None and c.test_baseline is not None and c.test_baseline.loaders is not None
    scanned = shadowing.load(c.blobs.get_blob(c.test_baseline.loaders))
    assert [f.code for f in shadowing.judge(ws, scanned)] == ["shadowing.new"]  # the tests sensor refuses it too
    there_before = with_loaders(c, ws)  # the scan made with the shim in place: the user's own tool
    assert SENSORS["lint"](there_before).result == "PASS"
    shim.write_text(shim.read_text().replace("0.0.0", "0.0.1"))  # rewritten since
    assert SENSORS["lint"](there_before).result == "ERROR"
