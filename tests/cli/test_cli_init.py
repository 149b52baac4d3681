"""`tether init` writes a template a newcomer can run at once, and whose parts agree with each other."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

# Long enough that a one-line fix stays under the template's churn budget (30% of the touched file's lines).
BUG = "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(6)) + "def add(a, b):\n    return a - b\n"
TEST = "import sys\nsys.path.insert(0, 'src')\nfrom calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
FIX = {"name": "edit_file", "args": {"path": "src/calc.py", "old": "a - b", "new": "a + b"}}
CHEAT = {"name": "write_file", "args": {"path": "tests/test_calc.py", "content": "def test_add():\n    pass\n"}}
FINISH = {"name": "finish", "args": {"summary": "fixed add"}}


def tether(cwd: Path, *args: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": path or os.environ["PATH"]}
    env.pop("TETHER_DB", None)
    return subprocess.run(
        [sys.executable, "-m", "tether.cli.main", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
        env=env,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    proc = tether(tmp_path, "init")
    assert proc.returncode == 0, proc.stderr
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "calc.py").write_text(BUG)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_calc.py").write_text(TEST)
    return tmp_path


def script(project: Path, *turns: dict[str, object]) -> None:
    (project / "trajectory.yaml").write_text(yaml.safe_dump({"turns": [{"tool_calls": [t]} for t in turns]}))


def events(project: Path) -> list[dict[str, object]]:
    runs = json.loads(tether(project, "runs", "--json").stdout)
    log = tether(project, "log", "show", runs[-1]["run_id"], "--json").stdout
    return [json.loads(line) for line in log.splitlines()]


def test_the_template_agrees_with_itself(tmp_path: Path) -> None:
    assert tether(tmp_path, "init").returncode == 0
    env = yaml.safe_load((tmp_path / "envelope.yaml").read_text())
    plan = yaml.safe_load((tmp_path / "plan.yaml").read_text())
    assert any("tests/" in c for c in plan["constraints"])  # the plan forbids editing the tests …
    assert not any(w.startswith("tests") for w in env["environment"]["filesystem"]["write"])  # … and so does this
    assert env["verification"]["tests_may_change"] is False
    assert env["environment"]["sandbox"] == {"backend": "bwrap", "required": False}
    assert env["plan"]["hash"].startswith("sha256:")  # compiled: valid as written
    assert tether(tmp_path, "validate", "envelope.yaml", "--strict").returncode == 0


def test_init_then_a_scripted_run_completes(project: Path) -> None:
    script(project, FIX, FINISH)
    proc = tether(project, "run", "--headless")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "COMPLETE" in proc.stdout
    sensors = {e["payload"]["sensor"]: e["payload"] for e in events(project) if e["kind"] == "sensor.result"}
    assert sensors["policy"]["result"] == "PASS", sensors["policy"]  # .tether/ (the log, in the workspace) not counted
    assert (project / ".tether" / "tether.db").is_file()
    assert (project / "src" / "calc.py").read_text() == BUG.replace("a - b", "a + b")


def test_the_tests_are_read_only(project: Path) -> None:
    script(project, CHEAT, FIX, FINISH)
    tether(project, "run", "--headless")
    (decided, *_) = [e for e in events(project) if e["kind"] == "action.decided"]
    assert decided["payload"]["verdict"] == "DENY" and decided["payload"]["deciding_rule"] == "path:not-writable"
    assert (project / "tests" / "test_calc.py").read_text() == TEST


def test_without_bubblewrap_the_run_falls_back_visibly(project: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A PATH with no bwrap on it: the run still completes, in the local sandbox, and says so at its start."""
    tools = tmp_path_factory.mktemp("bin")
    for name in ("sh", "bash", "env", "git", "cat", "ls"):
        found = shutil.which(name)
        if found:
            (tools / name).symlink_to(found)
    script(project, FIX, FINISH)
    proc = tether(project, "run", "--headless", path=f"{Path(sys.executable).parent}:{tools}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "sandbox fallback" in proc.stdout
    (started,) = [e for e in events(project) if e["kind"] == "run.started"]
    assert started["payload"]["sandbox"] == "local" and started["payload"]["sandbox_fallback"]
