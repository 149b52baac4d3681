"""The real command: a whole Claude Code session through `tether hook claude-code` and the daemon, then
`tether log verify` and `tether show` on its run; the daemon's start-up races, stale sockets and permissions."""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hookkit import payload, wait_for

from tether.events.store import EventStore
from tether.hooks.client import ask
from tether.hooks.command import launcher_command
from tether.hooks.daemon import stop_daemon
from tether.hooks.session import run_id_for

TETHER = [sys.executable, "-m", "tether.cli.main"]


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A daemon on a socket of its own for this module's tests; stopped at the end."""
    sock = tmp_path_factory.mktemp("d") / "hookd.sock"
    proc = subprocess.Popen([*TETHER, "daemon", "--socket", str(sock), "--idle", "120"])
    wait_for(sock)
    yield sock
    assert stop_daemon(str(sock))
    assert proc.wait(timeout=30) == 0
    assert not sock.exists(), "the daemon removes its socket"


def run(args: list[str], env: dict[str, str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TETHER, *args], input=stdin, capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.slow
def test_a_whole_session_through_the_command_is_one_verified_run(daemon: Path, tmp_path: Path) -> None:
    env = {**os.environ, "TETHER_HOOK_SOCKET": str(daemon), "CLAUDE_PROJECT_DIR": str(tmp_path)}
    db = tmp_path / ".tether" / "tether.db"

    def hook(event: str, **fields: object) -> subprocess.CompletedProcess[str]:
        out = run(["hook", "claude-code"], env, json.dumps(payload(f"claude-code.{event}", tmp_path, **fields)))
        assert out.returncode in (0, 2), out.stderr
        return out

    def decision(out: subprocess.CompletedProcess[str]) -> str:
        return str(json.loads(out.stdout)["hookSpecificOutput"]["permissionDecision"])

    hook("SessionStart")
    hook("UserPromptSubmit")
    assert decision(hook("PreToolUse", tool_input={"command": "ls"}, tool_use_id="t1")) == "allow"
    hook("PostToolUse", tool_input={"command": "ls"}, tool_use_id="t1")
    assert decision(hook("PreToolUse", tool_input={"command": "timeout 5 rm -rf /"}, tool_use_id="t2")) == "deny"
    hook("PostToolUse", tool_input={"command": "timeout 5 rm -rf /"}, tool_use_id="t2")  # ran anyway: a bypass
    assert decision(hook("PreToolUse", tool_input={"command": "bash -c 'git push -f'"}, tool_use_id="t3")) == "ask"
    write = {"file_path": str(tmp_path / ".tether" / "envelope.yaml"), "content": "x"}
    assert decision(hook("PreToolUse", tool_name="Write", tool_input=write, tool_use_id="t4")) == "deny"
    assert hook("Stop").stdout == ""
    hook("SessionEnd")
    assert hook("PreToolUse", tool_input={"command": "ls"}, tool_use_id="t5").stdout, "answered after a SessionEnd too"
    broken = run(["hook", "claude-code"], env, '{"hook_event_name": "PreToolUse", "session_id": ')
    assert broken.returncode == 2 and "not JSON" in broken.stderr, "truncated input is refused"

    sid = str(payload("claude-code.PreToolUse", tmp_path)["session_id"])
    run_id = run_id_for("claude-code", sid)
    verify = run(["log", "verify", run_id, "--db", str(db)], env)
    assert verify.returncode == 0 and "chain intact" in verify.stdout, verify.stdout + verify.stderr
    show = run(["show", run_id, "--db", str(db)], env)
    assert show.returncode in (0, 3), show.stderr
    for seen in ("coding:deny-rm-root", "coding:ask-git-push", "path:protected", "RUNNING", "BYPASSED t2 (bash)"):
        assert seen in show.stdout, seen


PROBE = """
import json, sys
from tether.cli.main import main
try:
    main(["hook", "claude-code"])
except SystemExit as e:
    code = e.code
print(json.dumps({"exit": code, "heavy": sorted(m for m in ("pydantic", "typer", "sqlite3") if m in sys.modules)}))
"""


def test_a_call_the_daemon_answers_imports_no_heavy_module(daemon: Path, tmp_path: Path) -> None:
    env = {**os.environ, "TETHER_HOOK_SOCKET": str(daemon)}
    data = json.dumps(payload("claude-code.PreToolUse", tmp_path, tool_input={"command": "ls"}))
    out = subprocess.run([sys.executable, "-c", PROBE], input=data, capture_output=True, text=True, env=env, timeout=60)
    lines = out.stdout.splitlines()
    assert json.loads(lines[0])["hookSpecificOutput"]["permissionDecision"] == "allow"
    assert json.loads(lines[-1]) == {"exit": 0, "heavy": []}


def test_the_console_command_is_answered_by_the_relay_without_typing(daemon: Path, tmp_path: Path) -> None:
    """``tether hook`` as its own process asks the daemon through the relay, as the launcher does: neither the hook's
    entry nor its client (which import ``typing``: more instructions than the rest of the call) is imported."""
    env = {**os.environ, "TETHER_HOOK_SOCKET": str(daemon), "CLAUDE_PROJECT_DIR": str(tmp_path)}
    data = json.dumps(payload("claude-code.PreToolUse", tmp_path, tool_input={"command": "ls"}))
    command = [sys.executable, "-X", "importtime", "-m", "tether.cli.main", "hook", "claude-code"]
    out = subprocess.run(command, input=data, capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0 and json.loads(out.stdout)["hookSpecificOutput"]["permissionDecision"] == "allow"
    imported = {line.split("|")[-1].strip() for line in out.stderr.splitlines() if line.startswith("import time:")}
    assert {"_socket", "tether.hooks.relay"} <= imported, "the daemon was asked, by the relay"
    heavy = {"typing", "json", "tether.hooks.entry", "tether.hooks.client", "pydantic", "typer", "sqlite3"}
    assert not imported & heavy, sorted(imported & heavy)


def test_the_console_command_whose_relay_fails_refuses(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A relay that raises ends the console command with a refusal, exit 2, never 1 (nor a traceback's 1)."""
    from tether.cli import main as cli_main
    from tether.hooks import relay

    def broken(argv: list[str]) -> bytes | None:
        raise OSError("the relay broke")

    monkeypatch.setattr(relay, "launch", broken)
    with pytest.raises(SystemExit) as ended:
        cli_main._hook(["claude-code"], own_process=True)
    assert ended.value.code == 2
    assert "fail closed" in capsys.readouterr().err


def test_the_socket_is_private_and_a_stranger_directory_is_not_used(
    daemon: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert stat.S_IMODE(daemon.stat().st_mode) == 0o600
    assert stat.S_IMODE(daemon.parent.stat().st_mode) == 0o700
    open_dir = tmp_path / "open"
    open_dir.mkdir(mode=0o777)
    open_dir.chmod(0o777)
    monkeypatch.setenv("TETHER_HOOK_SOCKET", str(open_dir / "s.sock"))
    assert ask({"agent": "claude-code"}, b"{}") is None, "a world-writable directory is refused"


def test_the_socket_appears_only_once_the_daemon_listens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A client that finds the socket file connects at once: bound but not yet listening, its connect was refused
    and the call was decided cold (seen under load as a test's first call missing the daemon)."""
    import socket
    import threading

    from tether.hooks.daemon import serve

    sock = tmp_path / "s" / "d.sock"
    sock.parent.mkdir(mode=0o700)
    seen: list[bool] = []
    listen = socket.socket.listen

    def spy(self: socket.socket, *args: int) -> None:
        if self.family == socket.AF_UNIX:
            seen.append(os.path.lexists(sock))
        listen(self, *args)

    monkeypatch.setattr(socket.socket, "listen", spy)
    daemon = threading.Thread(target=serve, args=(str(sock),), kwargs={"idle_s": 60.0})
    daemon.start()
    wait_for(sock)
    assert stat.S_IMODE(sock.stat().st_mode) == 0o600
    assert stop_daemon(str(sock))
    daemon.join(timeout=30)
    assert seen == [False], "the socket file existed before the daemon listened"
    assert sorted(p.name for p in sock.parent.iterdir()) == ["d.sock.lock"], "nothing left behind"


def test_two_daemons_started_at_once_leave_one_serving_and_a_stale_socket_is_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sock = tmp_path / "s" / "d.sock"
    sock.parent.mkdir(mode=0o700)
    sock.write_text("stale")  # left behind by a daemon that died
    cmd = [sys.executable, "-m", "tether.hooks.daemon", "--socket", str(sock)]
    a, b = subprocess.Popen(cmd), subprocess.Popen(cmd)
    try:
        deadline = time.monotonic() + 30
        while a.poll() is None and b.poll() is None:
            assert time.monotonic() < deadline, "neither daemon gave way"
            time.sleep(0.05)
        loser, winner = (a, b) if a.poll() is not None else (b, a)
        assert loser.returncode == 0 and winner.poll() is None
        deadline = time.monotonic() + 30
        while not stat.S_ISSOCK(os.lstat(sock).st_mode):
            assert time.monotonic() < deadline, "the stale file was not replaced"
            time.sleep(0.05)
        raw = json.dumps(payload("claude-code.PreToolUse", tmp_path, tool_input={"command": "ls"})).encode()
        monkeypatch.setenv("TETHER_HOOK_SOCKET", str(sock))
        reply = ask({"agent": "claude-code", "db": str(tmp_path / "t.db")}, raw)
        assert reply is not None and "allow" in reply.stdout
        assert stop_daemon(str(sock))
        assert winner.wait(timeout=30) == 0
    finally:
        for p in (a, b):
            if p.poll() is None:
                p.kill()


@pytest.mark.slow
def test_two_cold_calls_racing_on_a_new_session_both_land_in_one_run(tmp_path: Path) -> None:
    """Claude Code runs the hooks of parallel tool calls at once: two processes create the session's run."""
    env = {**os.environ, "TETHER_HOOK_DAEMON": "0", "CLAUDE_PROJECT_DIR": str(tmp_path)}
    procs = [
        subprocess.Popen(
            [*TETHER, "hook", "claude-code"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True
        )
        for _ in range(2)
    ]
    for i, p in enumerate(procs):
        assert p.stdin is not None
        p.stdin.write(json.dumps(payload("claude-code.PreToolUse", tmp_path, tool_use_id=f"par{i}")))
        p.stdin.close()
    outs = [p.stdout.read() if p.stdout else "" for p in procs]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    assert all(json.loads(o)["hookSpecificOutput"]["permissionDecision"] == "allow" for o in outs)
    sid = str(payload("claude-code.PreToolUse", tmp_path)["session_id"])
    db = tmp_path / ".tether" / "tether.db"
    with EventStore.open(db, readonly=True) as store:
        store.verify_run(run_id_for("claude-code", sid))
        decided = [
            e.payload["call_id"] for e in store.events(run_id_for("claude-code", sid)) if e.kind == "action.decided"
        ]
    assert sorted(decided) == ["par0", "par1"]


def installed_command(tmp_path: Path) -> str:
    """The PreToolUse command `tether hook install` writes, as the agent runs it (through sh)."""
    assert run(["hook", "install", "claude-code", "--dir", str(tmp_path)], dict(os.environ)).returncode == 0
    settings = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    return str(settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"])


def test_the_launcher_is_answered_by_the_daemon_without_site_or_heavy_modules(daemon: Path, tmp_path: Path) -> None:
    command = launcher_command("claude-code", None).replace(" -I -S ", " -I -S -X importtime ", 1)
    env = {**os.environ, "TETHER_HOOK_SOCKET": str(daemon), "CLAUDE_PROJECT_DIR": str(tmp_path)}
    data = json.dumps(payload("claude-code.PreToolUse", tmp_path, tool_input={"command": "ls"}))
    out = subprocess.run(["sh", "-c", command], input=data, capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0 and json.loads(out.stdout)["hookSpecificOutput"]["permissionDecision"] == "allow"
    imported = {line.split("|")[-1].strip() for line in out.stderr.splitlines() if line.startswith("import time:")}
    assert "_socket" in imported, "the daemon was asked"
    assert not imported & {"site", "os", "json", "pydantic", "typer", "sqlite3"}, sorted(imported)
    assert not [m for m in imported if m.startswith("tether")], "the relay is loaded by path: no tether package"


def test_the_installed_command_without_a_daemon_decides_in_process_and_fails_closed(tmp_path: Path) -> None:
    command = installed_command(tmp_path)
    env = {**os.environ, "TETHER_HOOK_DAEMON": "0", "CLAUDE_PROJECT_DIR": str(tmp_path)}
    env["TETHER_HOOK_SOCKET"] = str(tmp_path / "none" / "hookd.sock")

    def call(stdin: str, cmd: str = command) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["sh", "-c", cmd], input=stdin, capture_output=True, text=True, env=env, timeout=120)

    data = json.dumps(payload("claude-code.PreToolUse", tmp_path, tool_input={"command": "ls"}))
    out = call(data)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["hookSpecificOutput"]["permissionDecision"] == "allow"
    assert call('{"hook_event_name": "PreToolUse", "tool_na').returncode == 2, "truncated input is refused"
    words = shlex.split(launcher_command("claude-code", None).removesuffix(" || exit 2"))
    stray = tmp_path / "stray" / "launch.py"  # a launcher with no tether package beside it
    stray.parent.mkdir()
    stray.write_bytes(Path(words[3]).read_bytes())
    out = call(data, shlex.join([*words[:3], str(stray), *words[4:]]) + " || exit 2")
    assert out.returncode == 2 and "fail closed" in out.stderr
    client = shlex.split(command.removesuffix(" || exit 2"))
    lone = tmp_path / "lone" / "hook.sh"  # the bash client with no launcher beside it to fall back to
    lone.parent.mkdir()
    assert client[1] == "-p"
    lone.write_bytes(Path(client[2]).read_bytes())
    out = call(data, shlex.join([*client[:2], str(lone), *client[3:]]) + " || exit 2")
    assert out.returncode == 2


@pytest.mark.parametrize("through", ["cold", "daemon"])
def test_a_lone_surrogate_is_refused_naming_the_field_not_with_a_traceback(
    daemon: Path, tmp_path: Path, through: str
) -> None:
    env = {**os.environ, "TETHER_HOOK_SOCKET": str(daemon), "CLAUDE_PROJECT_DIR": str(tmp_path)}
    if through == "cold":
        env["TETHER_HOOK_DAEMON"] = "0"
    call = payload("claude-code.PreToolUse", tmp_path, tool_input={"command": "echo \ud800"}, tool_use_id="s1")
    done = run(["hook", "claude-code"], env, json.dumps(call))  # json.dumps spells the half as \ud800
    assert done.returncode == 2, done
    assert "field 'tool_input.command'" in done.stderr and "surrogate" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


@pytest.mark.parametrize("through", ["cold", "daemon"])
def test_a_lone_surrogate_in_a_prompt_is_recorded_escaped_and_the_run_reads(
    daemon: Path, tmp_path: Path, through: str
) -> None:
    """A prompt is the user's text (a pasted binary may hold half a UTF-16 pair): not judged by its text, so it is
    recorded escaped, as a tool's output is. Before, its event could not be written (UnicodeEncodeError): the prompt
    was blocked with a traceback, cold; the daemon closed the connection and the client decided cold, the same."""
    env = {**os.environ, "TETHER_HOOK_SOCKET": str(daemon), "CLAUDE_PROJECT_DIR": str(tmp_path)}
    if through == "cold":
        env["TETHER_HOOK_DAEMON"] = "0"
    data = payload("claude-code.UserPromptSubmit", tmp_path, session_id=f"lone-{through}", prompt="fix \ud800 this")
    done = run(["hook", "claude-code"], env, json.dumps(data))  # json.dumps spells the half as \ud800
    assert (done.returncode, done.stdout, done.stderr) == (0, "", ""), done
    db = tmp_path / ".tether" / "tether.db"
    run_id = run_id_for("claude-code", f"lone-{through}")
    show = run(["show", run_id, "--db", str(db)], env)
    assert show.returncode in (0, 3) and "Traceback" not in show.stderr, show.stderr
    with EventStore.open(db, readonly=True) as store:
        store.verify_run(run_id)
        prompts = [e.payload["detail"]["prompt"] for e in store.events(run_id) if e.kind == "hook.received"]
    assert prompts == ["fix \\ud800 this"]


def test_the_daemon_answers_2026_payloads_as_a_process_of_its_own_does(daemon: Path, tmp_path: Path) -> None:
    """Through the daemon: a subagent's call answered and attributed, an ASK in ``auto`` mode refused, an event
    tether does not answer and a malformed ``agent_id`` refused naming them (tests/hooks/test_payloads_2026.py,
    test_events_2026.py and test_permission_modes.py play these in-process)."""
    env = {**os.environ, "TETHER_HOOK_SOCKET": str(daemon), "CLAUDE_PROJECT_DIR": str(tmp_path)}

    def hook(name: str, **fields: object) -> subprocess.CompletedProcess[str]:
        return run(["hook", "claude-code"], env, json.dumps(payload(f"claude-code.{name}", tmp_path, **fields)))

    assert hook("SessionStart").returncode == 0
    sub = hook("PreToolUse.subagent")
    assert json.loads(sub.stdout)["hookSpecificOutput"]["permissionDecision"] == "allow", sub.stderr
    fetch = {"url": "https://example.com/", "prompt": "read"}
    auto = hook("PreToolUse", tool_name="WebFetch", tool_input=fetch, tool_use_id="w1", permission_mode="auto")
    assert json.loads(auto.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny", auto.stderr
    unknown = hook("PreToolUse", hook_event_name="PostToolBatch")
    assert unknown.returncode == 2 and "'PostToolBatch' is not an event tether answers" in unknown.stderr
    bad = hook("PreToolUse", agent_id=7)
    assert bad.returncode == 2 and "hook input field 'agent_id'" in bad.stderr
    sid = str(payload("claude-code.PreToolUse", tmp_path)["session_id"])
    show = run(["show", run_id_for("claude-code", sid), "--db", str(tmp_path / ".tether" / "tether.db")], env)
    assert "by subagent Explore (a7e3c1d2): PreToolUse Grep" in show.stdout, show.stdout + show.stderr
