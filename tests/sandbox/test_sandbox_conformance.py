"""The same behaviour checks against every backend (local and bwrap), with real subprocesses."""

from __future__ import annotations

import os
import secrets
import subprocess
from pathlib import Path

import pytest

from tether.sandbox import TIMEOUT_EXIT_CODE, Receipt, Sandbox
from tether.sandbox.doctor import survivors


def run(sandbox: Sandbox, ws: Path, command: str | list[str], timeout_s: float = 30.0) -> Receipt:
    return sandbox.run(command, cwd=ws, timeout_s=timeout_s)


def test_exit_status_and_streams_are_data(sandbox: Sandbox, workspace: Path) -> None:
    r = run(sandbox, workspace, "echo out; echo err >&2; exit 3")
    assert (r.exit_code, r.ok, r.timed_out) == (3, False, False)
    assert (r.stdout, r.stderr) == ("out\n", "err\n")
    assert (r.stdout_bytes, r.stderr_bytes, r.truncated) == (4, 4, False)
    assert r.backend == sandbox.name and r.cwd == str(workspace.resolve())


def test_shell_command_runs_as_bash_c_would_with_no_descriptor_of_tethers(sandbox: Sandbox, workspace: Path) -> None:
    """$0 is bash and there are no arguments, as for ``bash -c``; and only stdin, stdout and stderr are open (3 is
    the glob's own directory): not bwrap's start pipe, nor a carried secret's pipe."""
    r = run(sandbox, workspace, "echo $0 $#; cd /proc/$$/fd && echo *")
    assert r.ok and r.stdout == "bash 0\n0 1 2 3\n", r.stderr


def test_syntax_error_is_data_after_the_lines_before_it_ran(sandbox: Sandbox, workspace: Path) -> None:
    r = run(sandbox, workspace, "echo before\nfi")
    assert (r.exit_code, r.stdout) == (2, "before\n") and "syntax error" in r.stderr


def test_argv_is_not_reparsed_by_a_shell(sandbox: Sandbox, workspace: Path) -> None:
    r = run(sandbox, workspace, ["printf", "%s|", "a b", "$HOME", ";x"])
    assert r.ok and r.stdout == "a b|$HOME|;x|"
    assert r.command == "printf '%s|' 'a b' '$HOME' ';x'"


def test_missing_program_is_a_failed_receipt_not_an_error(sandbox: Sandbox, workspace: Path) -> None:
    r = run(sandbox, workspace, ["tether-no-such-program"])
    assert r.exit_code == 127 and "tether-no-such-program" in r.stderr


def test_runs_in_the_workspace_and_can_write_it(sandbox: Sandbox, workspace: Path) -> None:
    (workspace / "existing.txt").write_text("host\n")
    r = run(sandbox, workspace, "pwd; echo more >> existing.txt; mkdir -p a/b && echo new > a/b/new.txt")
    assert r.ok, r.stderr
    assert r.stdout.strip() == str(workspace.resolve())
    assert (workspace / "existing.txt").read_text() == "host\nmore\n"
    assert (workspace / "a" / "b" / "new.txt").read_text() == "new\n"


def test_environment_is_an_allowlist_with_guards(
    sandbox: Sandbox, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_TEST_HOST_SECRET", "hunter2")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "hunter3")
    r = run(sandbox, workspace, "env")
    env = dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)
    assert "hunter2" not in r.stdout and "hunter3" not in r.stdout
    for name, value in {"PAGER": "cat", "GIT_PAGER": "cat", "CI": "true", "TERM": "dumb"}.items():
        assert env[name] == value
    assert env["DEBIAN_FRONTEND"] == "noninteractive"


def test_each_command_sees_the_host_environment_as_it_is_then(
    sandbox: Sandbox, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The allowlisted host variables are read per command (through os.environ's own store, decoded once per
    distinct value set): set, changed, set to an undecodable byte, unset and set back between commands, each
    command sees exactly the host's value of that moment; a variable outside the allowlist never."""
    seen = []
    for value in ("Europe/Paris", "UTC", "x\udcff", None, "Europe/Paris"):
        if value is None:
            monkeypatch.delenv("TZ", raising=False)
        else:
            monkeypatch.setenv("TZ", value)
        monkeypatch.setenv("TETHER_TEST_NOT_ALLOWED", str(value))
        r = run(sandbox, workspace, 'echo "${TZ-unset}" "${TETHER_TEST_NOT_ALLOWED-unset}"')
        seen.append(r.stdout)  # the receipt shows an undecodable byte as U+FFFD
    assert seen == ["Europe/Paris unset\n", "UTC unset\n", "x\ufffd unset\n", "unset unset\n", "Europe/Paris unset\n"]


def test_host_values_reads_any_mapping_as_os_environ() -> None:
    from tether.sandbox.environment import host_values

    names = ("PATH", "HOME", "TETHER_TEST_NOPE", "LANG")
    assert host_values(os.environ, names) == {n: os.environ[n] for n in names if n in os.environ}
    assert host_values({"HOME": "/h", "OTHER": "o"}, names) == {"HOME": "/h"}


def test_caller_env_is_passed_but_cannot_undo_guards(sandbox: Sandbox, workspace: Path) -> None:
    r = sandbox.run("echo $MY_VAR $PAGER", cwd=workspace, timeout_s=30, env={"MY_VAR": "given", "PAGER": "less"})
    assert r.stdout == "given cat\n"


def test_stdin_is_closed(sandbox: Sandbox, workspace: Path) -> None:
    r = run(sandbox, workspace, "cat; read line; echo read=$?")
    assert r.ok and r.stdout == "read=1\n"


def test_own_session(sandbox: Sandbox, workspace: Path) -> None:
    r = run(sandbox, workspace, "cut -d' ' -f6 /proc/$$/stat")  # field 6: session id
    assert r.ok and int(r.stdout) != os.getsid(0)


def test_rlimits_applied(sandbox: Sandbox, workspace: Path) -> None:
    r = run(sandbox, workspace, "ulimit -n; ulimit -f; ulimit -t; ulimit -v")
    nofile, fsize_blocks, cpu, vmem_kib = r.stdout.split()
    assert nofile == "1024"
    assert int(fsize_blocks) * 1024 == 1024**3  # bash reports 1024-byte blocks
    assert int(cpu) == 30 + 5
    assert int(vmem_kib) * 1024 == 8 * 1024**3


def test_rlimits_applied_to_an_argv_command_too(sandbox: Sandbox, workspace: Path) -> None:
    """An argv is exec'd by the same bash that sets the limits: soft and hard, as the kernel reports them."""
    r = run(sandbox, workspace, ["cat", "/proc/self/limits"])
    rows = {line[:26].strip(): line[26:].split()[:2] for line in r.stdout.splitlines()[1:]}
    assert rows["Max open files"] == ["1024", "1024"]
    assert rows["Max file size"] == [str(1024**3)] * 2
    assert rows["Max cpu time"] == ["35", "35"]


def test_file_size_limit_stops_a_runaway_write(sandbox: Sandbox, workspace: Path) -> None:
    from tether.sandbox import BwrapSandbox, Limits, LocalSandbox

    small = Limits(file_size_bytes=1024 * 1024)
    box: Sandbox = LocalSandbox(limits=small) if sandbox.name == "local" else BwrapSandbox(workspace, limits=small)
    r = box.run("head -c 5000000 /dev/zero > big.bin", cwd=workspace, timeout_s=30)
    assert not r.ok
    assert (workspace / "big.bin").stat().st_size == 1024 * 1024


def test_timeout_kills_the_whole_tree(sandbox: Sandbox, workspace: Path) -> None:
    marker = "tether-test-to-" + secrets.token_hex(6)
    r = run(sandbox, workspace, f"bash -c 'exec -a {marker} sleep 300' & exec -a {marker} sleep 300", 0.5)
    assert r.timed_out and r.exit_code == TIMEOUT_EXIT_CODE and not r.ok
    assert survivors(marker) == []


def test_setsid_background_child_does_not_outlive_the_command(sandbox: Sandbox, workspace: Path) -> None:
    marker = "tether-test-bg-" + secrets.token_hex(6)
    script = (
        f"setsid bash -c 'touch started; exec -a {marker} sleep 300' >/dev/null 2>&1 & "
        "for i in $(seq 1 500); do [ -e started ] && break; sleep 0.01; done; echo parent-done"
    )
    r = run(sandbox, workspace, script)
    assert r.ok and r.stdout == "parent-done\n"
    assert (workspace / "started").exists()  # the child really ran
    assert survivors(marker) == []


DOUBLE_FORK = (
    "( setsid env -i /bin/sh -c 'sleep 1000 & echo $! > sleeper.pid; wait' >/dev/null 2>&1 & ); "
    "for i in $(seq 1 500); do [ -s sleeper.pid ] && break; sleep 0.01; done"
)
"""A ``sleep 1000`` two forks away, in a new session, with no environment: no group and no token to find."""


def gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1].startswith("Z")  # a zombie is dead (and reaped below if ours)
    except FileNotFoundError:
        return True


def test_double_forked_child_is_gone_when_the_command_returns(sandbox: Sandbox, workspace: Path) -> None:
    r = run(sandbox, workspace, DOUBLE_FORK)
    assert r.ok, r.stderr
    pid = int((workspace / "sleeper.pid").read_text())
    if sandbox.name == "bwrap":
        return  # the pid is in the sandbox's own namespace; the doctor's orphan check proves it from the host
    assert gone(pid)


def test_double_forked_child_is_gone_after_a_timeout(sandbox: Sandbox, workspace: Path) -> None:
    marker = "tether-test-orphan-" + secrets.token_hex(6)
    script = f"( setsid env -i /bin/sh -c 'exec -a {marker} sleep 1000' >/dev/null 2>&1 & ); exec sleep 300"
    r = run(sandbox, workspace, script, 0.5)
    assert r.timed_out
    assert survivors(marker) == []


def test_background_child_holding_the_pipe_does_not_hang_the_receipt(sandbox: Sandbox, workspace: Path) -> None:
    r = run(sandbox, workspace, "setsid sleep 300 & echo quick", 60)
    assert r.ok and not r.timed_out and r.stdout == "quick\n"


def test_output_is_bounded_and_counted(sandbox: Sandbox, workspace: Path) -> None:
    r = run(sandbox, workspace, "head -c 30000000 /dev/zero | tr '\\0' a; echo tail-marker; echo e >&2")
    assert r.stdout_bytes == 30_000_000 + len("tail-marker\n")
    assert r.truncated and r.ok
    assert len(r.stdout) < 70_000
    assert r.stdout.startswith("aaaa") and r.stdout.endswith("tail-marker\n")
    assert "bytes omitted" in r.stdout
    assert r.stderr == "e\n" and r.stderr_bytes == 2


def test_signal_death_is_128_plus_signal(sandbox: Sandbox, workspace: Path) -> None:
    r = run(sandbox, workspace, ["bash", "-c", "kill -TERM $$"])
    assert r.exit_code == 128 + 15


def test_receipt_round_trips_as_json(sandbox: Sandbox, workspace: Path) -> None:
    r = run(sandbox, workspace, "echo hi")
    assert Receipt.model_validate_json(r.model_dump_json()) == r


def test_a_limit_that_cannot_be_set_does_not_skip_the_others(tmp_path: Path) -> None:
    """The limits share one ``2>/dev/null``: a ulimit that fails (open files above the kernel's ``nr_open``, which
    not even root may set) leaves the ones after it applied, and prints nothing."""
    from tether.sandbox.limits import Limits

    script = Limits(open_files=2**40).ulimit_script(100, unprivileged=True)
    done = subprocess.run(
        ["bash", "-c", f"{script}\nulimit -t; ulimit -f; ulimit -Hf; ulimit -u"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.split() == ["105", str(1024**2), str(1024**2), "1024"]
