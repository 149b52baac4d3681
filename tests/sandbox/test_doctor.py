from __future__ import annotations

import json
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from tether.cli import doctor_cmds
from tether.sandbox import BwrapSandbox, LocalSandbox
from tether.sandbox.doctor import (
    LOCAL_DOES_NOT_ISOLATE,
    BackendReport,
    DoctorReport,
    Status,
    check_background_child,
    check_denied_file,
    check_orphan,
    run_doctor,
    scratch,
)
from tether.sandbox.receipt import Receipt

ALL_CHECKS = {
    "interpreter_reachable",
    "workspace_writable",
    "write_outside_workspace",
    "root_only_file",
    "network_outbound",
    "host_loopback",
    "host_env_hidden",
    "background_child_killed",
    "orphan_reaped",
    "timeout_kills",
    "other_process_env",
    "denied_file_hidden",
    "output_bounded",
    "egress_allowlist",
}


def test_local_reports_what_it_does_not_enforce_honestly() -> None:
    report = run_doctor(required=(), backends=("local",))
    (local,) = report.backends
    statuses = {c.name: c.status for c in local.checks}
    assert set(statuses) == ALL_CHECKS
    assert statuses["network_outbound"] is Status.NOT_ENFORCED
    assert statuses["write_outside_workspace"] is Status.NOT_ENFORCED
    assert statuses["host_loopback"] is Status.NOT_ENFORCED
    assert statuses["other_process_env"] is Status.NOT_ENFORCED
    assert statuses["denied_file_hidden"] is Status.NOT_ENFORCED
    assert statuses["egress_allowlist"] is Status.NOT_ENFORCED
    for name in ("host_env_hidden", "background_child_killed", "orphan_reaped", "timeout_kills", "output_bounded"):
        assert statuses[name] is Status.PASS, name
    assert Status.FAIL not in statuses.values()
    said = " ".join(local.does_not_isolate)
    for limit in ("the user's files", "the network", "environments"):
        assert limit in said


@pytest.mark.bwrap
def test_bwrap_passes_every_check() -> None:
    report = run_doctor(required=("bwrap",), backends=("bwrap",))
    (bwrap,) = report.backends
    failed = [c for c in bwrap.checks if c.status is not Status.PASS and c.status is not Status.SKIPPED]
    assert failed == []
    assert {c.name for c in bwrap.checks} == ALL_CHECKS
    assert report.ok


@pytest.mark.bwrap
def test_cli_doctor_json_and_exit_code() -> None:
    app = typer.Typer()
    doctor_cmds.register(app)
    app.command("noop")(lambda: None)  # keep `doctor` a named subcommand
    result = CliRunner().invoke(app, ["doctor", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["ok"] is True
    assert [b["backend"] for b in data["backends"]] == ["bwrap", "local"]
    assert data["backends"][0]["does_not_isolate"] == []
    assert any("environments" in line for line in data["backends"][1]["does_not_isolate"])


def test_cli_doctor_says_what_local_does_not_isolate(capsys: pytest.CaptureFixture[str]) -> None:
    local = BackendReport("local", required=False, available=True, does_not_isolate=LOCAL_DOES_NOT_ISOLATE)
    doctor_cmds.render(DoctorReport([local]))
    out = " ".join(capsys.readouterr().out.split())
    assert "local does not isolate:" in out
    for limit in ("the user's files", "the network", "/proc/PID/environ", "filesystem.deny"):
        assert limit in out


@pytest.mark.bwrap
def test_denied_file_check_fails_without_the_cover() -> None:
    """The check can fail: the same bwrap sandbox without deny globs reads the file."""
    with scratch() as s:
        assert check_denied_file(BwrapSandbox(s.workspace), s).status is Status.FAIL
        assert check_denied_file(BwrapSandbox(s.workspace, deny=[".env"]), s).status is Status.PASS


def test_orphan_check_fails_without_reaping() -> None:
    with scratch() as s:
        box = LocalSandbox()
        box.subreaper = False
        assert check_orphan(box, s).status is Status.FAIL
        assert check_orphan(LocalSandbox(), s).status is Status.PASS


class NoChild(LocalSandbox):
    """Runs every command with ``setsid`` a shell function that starts nothing."""

    def run(self, command: object, **kwargs: Any) -> Receipt:
        assert isinstance(command, str)
        return super().run(f"setsid() {{ :; }}\n{command}", **kwargs)


def test_background_child_check_does_not_read_a_previous_checks_file() -> None:
    """The backends share one workspace, and bwrap's check leaves bg.started there. The next backend's check
    found it at once and read it before its own child wrote it: a child that never started passed, and a
    child writing it meanwhile (truncate, then write) made an empty read, "inconclusive" (a flake under load)."""
    with scratch() as s:
        (s.workspace / "bg.started").write_text("started\n")
        check = check_background_child(NoChild(), s)
    assert check.status is Status.FAIL and "never started" in check.detail, check


def test_cli_doctor_blocks_when_required_bwrap_is_missing(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    app = typer.Typer()
    doctor_cmds.register(app)
    app.command("noop")(lambda: None)
    result = CliRunner().invoke(app, ["doctor", "--json"])
    assert result.exit_code == 4
    bwrap = json.loads(result.output)["backends"][0]
    assert bwrap["available"] is False and "bubblewrap" in bwrap["fix"]
