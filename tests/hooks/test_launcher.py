"""The Python launcher (``python -I -S …/tether/hooks/launch.py AGENT``) and its relay (``hooks/relay.py``).

A call the daemon answers must import nothing but ``_socket`` beyond the bare interpreter's own start-up, answer
exactly as the in-process path does, and fail closed: a daemon that had the request but replied with anything
malformed or cut short is a refusal (never decided again, never let through), while no daemon, a daemon that
declines, or anything the relay cannot vouch for goes to the full path (``tether.hooks.entry``) with the input.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hookkit import MALFORMED_REPLIES, in_process, payload, wait_for
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tether.hooks import relay
from tether.hooks.client import HOOK_SCRIPT
from tether.hooks.daemon import stop_daemon
from tether.hooks.entry import options

LAUNCH = [sys.executable, "-I", "-S", str(Path(HOOK_SCRIPT).parent / "launch.py")]


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    sock = tmp_path_factory.mktemp("d") / "hookd.sock"
    sock.parent.chmod(0o700)
    proc = subprocess.Popen([sys.executable, "-m", "tether.hooks.daemon", "--socket", str(sock)])
    wait_for(sock)
    yield sock
    assert stop_daemon(str(sock))
    assert proc.wait(timeout=30) == 0


def env_for(sock: Path, project: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TETHER_", "CLAUDE_"))}
    return {**env, "TETHER_HOOK_SOCKET": str(sock), "CLAUDE_PROJECT_DIR": str(project), **extra}


def launch(data: bytes, env: dict[str, str], *args: str, flags: tuple[str, ...] = ()) -> tuple[str, str, int]:
    cmd = [*LAUNCH[:3], *flags, LAUNCH[3], *(args or ("claude-code",))]
    out = subprocess.run(cmd, input=data, capture_output=True, env=env, timeout=120, cwd=env.get("CWD"))
    return out.stdout.decode(), out.stderr.decode(), out.returncode


def imported(stderr: str) -> set[str]:
    return {line.split("|")[-1].strip() for line in stderr.splitlines() if line.startswith("import time:")}


def event(project: Path, name: str, **fields: Any) -> bytes:
    return json.dumps(payload(name, project, **fields)).encode()


def test_a_call_the_daemon_answers_imports_only_the_socket_module(daemon: Path, tmp_path: Path) -> None:
    floor = subprocess.run(
        [*LAUNCH[:3], "-X", "importtime", "-c", "pass"], capture_output=True, text=True, env=env_for(daemon, tmp_path)
    )
    data = event(tmp_path, "claude-code.PreToolUse", tool_input={"command": "ls"})
    out, err, code = launch(data, env_for(daemon, tmp_path), flags=("-X", "importtime"))
    assert code == 0 and json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "allow", err
    assert imported(err) - imported(floor.stderr) == {"_socket"}, "no os, json, site, nor any module of tether"


CALLS: list[tuple[str, dict[str, Any] | bytes]] = [
    ("claude-code.SessionStart", {}),
    ("claude-code.PreToolUse", {"tool_input": {"command": "ls -la"}, "tool_use_id": "c1"}),
    ("claude-code.PreToolUse", {"tool_input": {"command": "timeout 5 rm -rf /"}, "tool_use_id": "c2"}),
    ("claude-code.PreToolUse", {"tool_input": {"command": "echo é ✓ $HOME"}, "tool_use_id": "c3"}),
    ("", b'{"hook_event_name": "PreToolUse", "session_id": '),
    ("", b"[1, 2]"),
    ("", b""),
    ("codex.PreToolUse", {"tool_input": {"command": "rm -rf /"}, "tool_use_id": "x1"}),
]


def test_answers_are_exactly_the_in_process_ones(daemon: Path, tmp_path: Path) -> None:
    ours, theirs = tmp_path / "launched", tmp_path / "inproc"
    ours.mkdir()
    theirs.mkdir()
    for name, fields in CALLS:
        agent = name.split(".")[0] or "claude-code"
        mine = event(ours, name, **fields) if isinstance(fields, dict) else fields
        want = in_process(agent, theirs, event(theirs, name, **fields) if isinstance(fields, dict) else fields)
        out, err, code = launch(mine, env_for(daemon, ours), agent)
        assert code == want.exit, (name, err)
        assert out.replace(str(ours), "P") == (want.stdout + "\n" if want.stdout else "").replace(str(theirs), "P")
        assert err.replace(str(ours), "P") == want.stderr.replace(str(theirs), "P")


class FakeDaemon:
    """A Unix socket server that reads each request whole and answers it with what a test gives it (b"": it
    closes without a byte, as the daemon does for a client of other code). ``whole=False``: it reads 16 bytes and
    closes with the rest unread after its reply, as a daemon killed mid-read does, which resets the client."""

    def __init__(self, sock: Path, reply: bytes, *, calls: int = 1, whole: bool = True) -> None:
        self.whole = whole
        sock.parent.mkdir(mode=0o700, exist_ok=True)
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(sock))
        self.server.listen(4)
        self.server.settimeout(60)
        self.reply, self.requests = reply, list[bytes]()
        self.thread = threading.Thread(target=self.serve, args=(calls,), daemon=True)
        self.thread.start()

    def serve(self, calls: int) -> None:
        for _ in range(calls):
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            with conn:
                received = conn.recv(16)
                while self.whole and (chunk := conn.recv(65536)):
                    received += chunk
                self.requests.append(received)
                conn.sendall(self.reply)

    def close(self) -> list[bytes]:
        self.server.close()
        self.thread.join(timeout=30)
        return self.requests


@pytest.mark.parametrize("reply", MALFORMED_REPLIES)
def test_a_reply_cut_short_or_malformed_is_refused_and_never_decided_again(tmp_path: Path, reply: bytes) -> None:
    sock = tmp_path / "d" / "hookd.sock"
    fake = FakeDaemon(sock, reply)
    data = event(tmp_path, "claude-code.PreToolUse", tool_input={"command": "ls"})
    out, err, code = launch(data, env_for(sock, tmp_path))
    requests = fake.close()
    assert (out, code) == ("", 2) and err.startswith("tether refused (fail closed): the daemon"), err
    assert len(requests) == 1 and requests[0].endswith(b"\n\n" + data), "the daemon had the whole request once"
    assert not (tmp_path / ".tether").exists(), "not decided in-process as well"


def test_a_daemon_that_died_before_it_read_the_request_leaves_the_call_to_the_in_process_path(tmp_path: Path) -> None:
    """A reset before any byte of a reply: the daemon closed with the request unread (a socket the kernel resets its
    peer for is one closed with bytes still queued, or never accepted), so it decided and recorded nothing. The
    client refused the call (exit 2), a daemon killed in the middle of a session's calls refusing whatever waited in
    its backlog (tests/hooks/test_parallel_calls.py, one run in two here); it is decided in-process now."""
    sock = tmp_path / "d" / "hookd.sock"
    fake = FakeDaemon(sock, b"", calls=2, whole=False)  # the relay asks, then the full path asks once more
    data = event(tmp_path, "claude-code.PreToolUse", tool_input={"command": "timeout 5 rm -rf /"})
    out, err, code = launch(data, env_for(sock, tmp_path))
    assert len(fake.close()) == 2
    assert code == 0 and json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny", err
    assert (tmp_path / ".tether" / "tether.db").exists(), "decided and recorded in-process"


def test_a_reset_after_part_of_a_reply_is_refused(tmp_path: Path) -> None:
    sock = tmp_path / "d" / "hookd.sock"
    fake = FakeDaemon(sock, b"0 200 0\n{", whole=False)
    data = event(tmp_path, "claude-code.PreToolUse", tool_input={"command": "ls"})
    out, err, code = launch(data, env_for(sock, tmp_path))
    fake.close()
    assert (out, code) == ("", 2) and "cut short" in err, err
    assert not (tmp_path / ".tether").exists(), "not decided in-process as well"


def test_a_daemon_that_declines_leaves_the_call_to_the_in_process_path(tmp_path: Path) -> None:
    sock = tmp_path / "d" / "hookd.sock"
    fake = FakeDaemon(sock, b"", calls=2)  # the relay asks, then the full path asks once more
    data = event(tmp_path, "claude-code.PreToolUse", tool_input={"command": "timeout 5 rm -rf /"})
    out, err, code = launch(data, env_for(sock, tmp_path))
    assert len(fake.close()) == 2
    assert code == 0 and json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny", err
    assert (tmp_path / ".tether" / "tether.db").exists(), "decided and recorded in-process"


@pytest.mark.slow
def test_without_a_daemon_the_call_is_decided_in_process_and_a_daemon_is_started(tmp_path: Path) -> None:
    sock = tmp_path / "d" / "hookd.sock"  # its directory does not exist yet either
    env = env_for(sock, tmp_path)
    try:
        data = event(tmp_path, "claude-code.PreToolUse", tool_input={"command": "timeout 5 rm -rf /"})
        out, err, code = launch(data, env, flags=("-X", "importtime"))
        assert code == 0 and json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny", err
        assert "_sqlite3" in imported(err), "decided in-process"
        wait_for(sock)
        data = event(tmp_path, "claude-code.PreToolUse", tool_input={"command": "ls"}, tool_use_id="t2")
        out, err, code = launch(data, env, flags=("-X", "importtime"))
        assert code == 0 and json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "allow", err
        assert "tether.hooks.entry" not in imported(err), "answered by the daemon it started"
    finally:
        stop_daemon(str(sock))


def test_what_the_relay_cannot_vouch_for_goes_to_the_full_path(daemon: Path, tmp_path: Path) -> None:
    data = event(tmp_path, "claude-code.PreToolUse", tool_input={"command": "ls"}, tool_use_id="r1")
    env = env_for(daemon, tmp_path, CWD=str(tmp_path))
    out, err, code = launch(data, env, "claude-code", "--db", "t.db", flags=("-X", "importtime"))
    assert code == 0 and json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "allow", err
    assert {"tether.hooks.entry", "tether.hooks.client"} <= imported(err), "a relative path: the full path"
    assert "site" not in imported(err), "and the daemon answered it"
    assert (tmp_path / "t.db").exists(), "in the store the path names, made absolute"
    out, err, code = launch(data, env, "claude-code", "--frobnicate")
    assert (out, code) == ("", 2) and "unknown or incomplete option '--frobnicate'" in err and "usage:" in err
    out, err, code = launch(data, env, "claude-code", "--envelope")
    assert code == 2 and "unknown or incomplete option '--envelope'" in err
    out, err, code = launch(data, env, "claude-code", flags=("-X", "importtime"))
    assert code == 0 and "site" not in imported(err)
    out, err, code = launch(data, {**env, "TETHER_HOOK_DAEMON": "0"}, flags=("-X", "importtime"))
    assert code == 0 and "_sqlite3" in imported(err), "TETHER_HOOK_DAEMON=0: decided in-process (site or not)"
    assert "_socket" not in imported(err), "no daemon asked: the socket module is not loaded"
    out, err, code = launch(data, env, "claude-code", "--no-daemon", flags=("-X", "importtime"))
    assert code == 0 and "_socket" not in imported(err), "--no-daemon: likewise"
    out, err, code = launch(b"", env, "nobody")
    assert code == 2 and "the agent must be one of" in err


def test_a_launcher_beside_no_relay_or_no_tether_fails_closed(daemon: Path, tmp_path: Path) -> None:
    data = event(tmp_path, "claude-code.PreToolUse", tool_input={"command": "ls"})
    here = Path(LAUNCH[3]).parent
    for files in (["launch.py"], ["launch.py", "relay.py"], ["launch.py", "relay.py", "client.py", "hook.sh"]):
        stray = tmp_path / f"stray{len(files)}" / "tether" / "hooks"
        stray.mkdir(parents=True)
        for name in files:
            (stray / name).write_bytes((here / name).read_bytes())
        cmd = [*LAUNCH[:3], str(stray / "launch.py"), "claude-code"]
        out = subprocess.run(cmd, input=data, capture_output=True, env=env_for(daemon, tmp_path), timeout=60)
        assert out.returncode == 2 and b"fail closed" in out.stderr, (files, out.stderr)
    # the stray copies' code stamp was never sent: the daemon still serves
    _, err2, code2 = launch(data, env_for(daemon, tmp_path))
    assert code2 == 0, err2


ARG = st.sampled_from(
    [
        "claude-code",
        "codex",
        "--envelope",
        "--db",
        "--no-daemon",
        "-x",
        "/abs/e.yaml",
        "rel/e.yaml",
        "/a/../b",
        "/a//b",
        "/a/./b",
        "/a/b/",
        "postgresql://u@h/db",
        "",
        "/",
    ]
)
ENV = st.sampled_from([None, "", "/abs/x", "rel/x", "/abs/x/", "postgresql://u@/d", "0", "1"])


@settings(max_examples=300, deadline=None)
@given(argv=st.lists(ARG, max_size=5), envelope=ENV, db=ENV, project=ENV, daemon=ENV)
# a project is a directory, never a URL: the relay once sent this one as given
@example(argv=["claude-code"], envelope=None, db=None, project="postgresql://u@/d", daemon=None)
# a project that is not normal is handed over, even when another setting holds its normal form
@example(argv=["claude-code"], envelope=None, db="/abs/x", project="/abs/x/", daemon=None)
# an empty path is the current directory to the full path (the relay sent it as "", an absolute path it took it for)
@example(argv=["claude-code", "--envelope", ""], envelope=None, db=None, project=None, daemon=None)
def test_the_relay_reads_options_exactly_as_the_full_path_or_hands_them_over(
    argv: list[str], envelope: str | None, db: str | None, project: str | None, daemon: str | None
) -> None:
    names = {"TETHER_ENVELOPE": envelope, "TETHER_DB": db, "CLAUDE_PROJECT_DIR": project, "TETHER_HOOK_DAEMON": daemon}
    saved = {k: os.environ.get(k) for k in names}
    try:
        set_env(names)
        mine = relay.request_of(argv)
        try:
            theirs: tuple[dict[str, str], bool] | None = options(argv)
        except ValueError:
            theirs = None
        if mine is not None:
            assert theirs == (mine, True), "what the relay sends is what the full path would"
        elif theirs is not None and theirs[1] and "--no-daemon" not in argv:
            settled = {k: v for k, v in theirs[0].items() if k != "agent"}
            assert settled != as_given(argv, envelope, db, project), "a plain case handed over"
    finally:
        set_env(saved)


def as_given(argv: list[str], envelope: str | None, db: str | None, project: str | None) -> dict[str, str]:
    """Each setting as the user gave it, key by key (a plain case is one the full path takes unchanged: a value
    compared with every given value at once let ``db=/abs/x`` vouch for ``project=/abs/x/``)."""
    given, rest = {}, argv[1:]
    while rest:
        flag = rest.pop(0)
        if flag in ("--envelope", "--db") and rest:
            given[flag[2:]] = rest.pop(0)
    for key, value in (("envelope", envelope), ("db", db), ("project", project)):
        if key not in given and value:
            given[key] = value
    return given


def set_env(values: dict[str, str | None]) -> None:
    """(hypothesis runs many examples in one test: monkeypatch would undo them only at its end)"""
    for k, v in values.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.mark.parametrize("path", ["/a/b", "/a/b/", "/a//b", "a/b", "b", "/", "//", "///a//b", "", "a//", "/a/b//"])
def test_the_relays_dirname_is_os_paths(path: str) -> None:
    assert relay.dirname(path) == os.path.dirname(path)


@pytest.mark.parametrize(
    ("socket_var", "runtime", "want"),
    [
        ("/x/s.sock", "/run/user/1", "/x/s.sock"),
        ("", "/run/user/1", "/run/user/1/tether/hookd.sock"),
        (None, "/run/user/1/", "/run/user/1/tether/hookd.sock"),
        (None, "", f"/tmp/tether-{os.getuid()}/hookd.sock"),
        (None, None, f"/tmp/tether-{os.getuid()}/hookd.sock"),
    ],
)
def test_the_socket_path_is_where_the_daemon_listens(
    monkeypatch: pytest.MonkeyPatch, socket_var: str | None, runtime: str | None, want: str
) -> None:
    for name, value in (("TETHER_HOOK_SOCKET", socket_var), ("XDG_RUNTIME_DIR", runtime)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    assert relay.socket_path() == want
    if runtime and not socket_var:
        assert want == os.path.join(os.path.join(runtime, "tether"), "hookd.sock")


def test_an_answer_the_agent_cannot_read_is_exit_2_never_0(daemon: Path, tmp_path: Path) -> None:
    """stdout closed before the reply is written: the relay cannot deliver the allow, so it does not exit 0."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    data = event(tmp_path, "claude-code.PreToolUse", tool_input={"command": "ls"}, tool_use_id="gone")
    try:
        out = subprocess.run(
            [*LAUNCH, "claude-code"],
            input=data,
            stdout=write_end,
            stderr=subprocess.PIPE,
            env=env_for(daemon, tmp_path),
        )
    finally:
        os.close(write_end)
    assert out.returncode == 2, out.stderr
