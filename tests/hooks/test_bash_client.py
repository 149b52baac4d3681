"""The bash hook client (``hooks/hook.sh``): real bash, a real daemon on a socket under tmp_path, real TCP.

It must answer exactly as the in-process path does, never exit 0 or 1 without a valid reply from the daemon, and
hand every case it cannot vouch for (no endpoint, not the user's, stale, an impostor on the port, other code) to
the Python launcher with the same arguments and the input it already read.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from hookkit import MALFORMED_REPLIES, in_process, payload, wait_for

from tether.events.store import EventStore
from tether.hooks import daemon as daemon_module
from tether.hooks.client import HOOK_SCRIPT
from tether.hooks.daemon import proc_net_tcp_uid, stop_daemon, tcp_peer_uid
from tether.hooks.relay import endpoint_path
from tether.hooks.session import run_id_for
from tether.hooks.wire import MAX_INPUT_BYTES

LAUNCHER = ["-I", "-S", str(Path(HOOK_SCRIPT).parent / "launch.py")]

BASH = shutil.which("bash")
pytestmark = pytest.mark.skipif(BASH is None and os.environ.get("CI") != "true", reason="no bash here")


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A daemon on a socket of its own for this module; stopped (and its endpoint removed) at the end."""
    sock = tmp_path_factory.mktemp("d") / "hookd.sock"
    sock.parent.chmod(0o700)
    proc = subprocess.Popen([sys.executable, "-m", "tether.hooks.daemon", "--socket", str(sock)])
    wait_for(Path(endpoint_path(str(sock))))
    yield sock
    assert stop_daemon(str(sock))
    assert proc.wait(timeout=30) == 0
    assert not Path(endpoint_path(str(sock))).exists(), "the daemon removes its endpoint"


class Client:
    """Runs ``bash hook.sh PYTHON …`` as the installed command does. PYTHON is a wrapper that notes every
    fallback (its arguments and the input it was given) and then runs the real launcher — or, with
    ``answer_fallback=False``, exits 2 without answering, for cases that must fall back before anything else."""

    def __init__(self, tmp: Path, sock: Path, project: Path) -> None:
        self.sock, self.project, self.log = sock, project, tmp / "fallbacks.jsonl"
        self.python = tmp / "python"
        self.python.write_text(
            "#!/usr/bin/env bash\n"
            "given=$FALLBACK_LOG.$$.$RANDOM\n"
            'cat > "$given"\n'
            f'{sys.executable} -c "import json,sys; print(json.dumps(sys.argv[1:]))" "$given" "$@" >> "$FALLBACK_LOG"\n'
            "[[ $ANSWER_FALLBACK == 1 ]] || exit 2\n"
            f'exec {sys.executable} "$@" < "$given"\n'
        )
        self.python.chmod(0o755)

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TETHER_")}
        env.update(
            TETHER_HOOK_SOCKET=str(self.sock),
            CLAUDE_PROJECT_DIR=str(self.project),
            FALLBACK_LOG=str(self.log),
            ANSWER_FALLBACK="1",
        )
        return {**env, **extra}

    def __call__(self, data: bytes, *args: str, **env: str) -> tuple[str, str, int]:
        cmd = [str(BASH), HOOK_SCRIPT, str(self.python), *(args or ("claude-code",))]
        out = subprocess.run(cmd, input=data, capture_output=True, env=self.env(**env), timeout=120)
        return out.stdout.decode(), out.stderr.decode(), out.returncode

    def fallbacks(self) -> list[tuple[list[str], bytes]]:
        """The arguments and the input the launcher was given at each fallback so far (then forgotten)."""
        if not self.log.exists():
            return []
        seen = [json.loads(line) for line in self.log.read_text().splitlines()]
        self.log.unlink()
        return [(argv, Path(given).read_bytes()) for given, *argv in seen]


@pytest.fixture
def client(daemon: Path, tmp_path: Path) -> Client:
    project = tmp_path / "project"
    project.mkdir()
    return Client(tmp_path, daemon, project)


def event(project: Path, name: str, **fields: Any) -> bytes:
    return json.dumps(payload(name, project, **fields)).encode()


#: A session's calls: allow, deny, ask, malformed input of several kinds.
CALLS: list[tuple[str, dict[str, Any] | bytes]] = [
    ("claude-code.SessionStart", {}),
    ("claude-code.UserPromptSubmit", {"prompt": "fix the parser"}),
    ("claude-code.PreToolUse", {"tool_input": {"command": "ls -la"}, "tool_use_id": "c1"}),
    ("claude-code.PreToolUse", {"tool_input": {"command": "timeout 5 rm -rf /"}, "tool_use_id": "c2"}),
    ("claude-code.PreToolUse", {"tool_input": {"command": "bash -c 'git push -f'"}, "tool_use_id": "c3"}),
    ("claude-code.PreToolUse", {"tool_input": {"command": "echo é ✓ $HOME"}, "tool_use_id": "c4"}),
    ("", b'{"hook_event_name": "PreToolUse", "session_id": '),
    ("", b"[1, 2]"),
    ("", b'{"hook_event_name": "PreToolUse", "session_id": "s", "cwd": "/"}'),
    ("", b""),
    ("codex.PreToolUse", {"tool_input": {"command": "rm -rf /"}, "tool_use_id": "x1"}),
]


def test_answers_are_exactly_the_in_process_ones_and_no_python_runs(client: Client, tmp_path: Path) -> None:
    inproc = tmp_path / "inproc"
    inproc.mkdir()
    decisions = []
    for name, fields in CALLS:
        agent = name.split(".")[0] or "claude-code"
        ours = event(client.project, name, **fields) if isinstance(fields, dict) else fields
        theirs = event(inproc, name, **fields) if isinstance(fields, dict) else fields
        got = client(ours, agent)
        expected = in_process(agent, inproc, theirs)
        want = (expected.stdout + "\n" if expected.stdout else "", expected.stderr, expected.exit)
        assert json.dumps(got).replace(str(client.project), "P") == json.dumps(want).replace(str(inproc), "P"), name
        if name == "claude-code.PreToolUse":
            decisions.append(json.loads(got[0])["hookSpecificOutput"]["permissionDecision"])
    assert client.fallbacks() == [], "every call was answered by the daemon over TCP"
    assert decisions[:3] == ["allow", "deny", "ask"]


def test_a_big_input_and_a_nul_byte_go_to_the_launcher_whole(client: Client) -> None:
    big = {"file_path": str(client.project / "big.txt"), "content": "a line of text\n" * 4096}  # 60 KiB
    data = event(client.project, "claude-code.PreToolUse", tool_name="Write", tool_input=big, tool_use_id="w1")
    out, _, code = client(data)
    assert code == 0 and json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "allow"
    assert client.fallbacks() == [([*LAUNCHER, "claude-code"], data)], "every byte, read and unread"
    nul = b'{"hook_event_name": "PreToolUse"}\0{"x": 1}'
    assert client(nul) == ("", in_process("claude-code", client.project, nul).stderr, 2)
    assert client.fallbacks() == [([*LAUNCHER, "claude-code"], nul)]
    over = b" " * (MAX_INPUT_BYTES + 10)  # read whole by the launcher (a tool's receipt may be that large): not one
    out, err, code = client(over)
    limit = f"hook input is {MAX_INPUT_BYTES + 10} bytes, over tether's limit of {MAX_INPUT_BYTES}"
    assert (out, code) == ("", 2) and err.startswith(f"tether refused (fail closed): {limit} (a tool's receipt"), err
    assert [given == over for _, given in client.fallbacks()] == [True]
    receipt = event(  # a tool's receipt that large is read whole and recorded (tests/hooks/test_large_receipt.py)
        client.project,
        "claude-code.PostToolUse",
        tool_input={"command": "cat big.log"},
        tool_use_id="r1",
        tool_response={"stdout": "x" * (MAX_INPUT_BYTES + 10)},
    )
    assert client(receipt) == ("", "", 0)
    assert [given == receipt for _, given in client.fallbacks()] == [True]


def test_options_are_relayed_or_handed_to_the_launcher(client: Client, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    data = event(client.project, "claude-code.PreToolUse", tool_input={"command": "ls"}, tool_use_id="o1")
    code = client(data, "claude-code", "--db", "rel/../here.db")[2]
    assert code == 0 and (tmp_path / "here.db").is_file(), "a relative --db is the caller's, made absolute"
    assert client.fallbacks() == []
    for args, env in (
        (("claude-code", "--no-daemon"), {}),
        (("claude-code",), {"TETHER_HOOK_DAEMON": "0"}),
        (("claude-code", "--bogus"), {}),
        (("gemini",), {}),
    ):
        assert client(data, *args, ANSWER_FALLBACK="0", **env)[2] == 2
        assert client.fallbacks() == [([*LAUNCHER, *args], data)], args
    _, err, code = client(data, "claude-code", "--bogus")
    assert code == 2 and "unknown or incomplete option" in err, "the launcher explains a bad option"
    client.fallbacks()


def endpoint(sock: Path) -> Path:
    return Path(endpoint_path(str(sock)))


def test_a_missing_or_wrong_token_and_a_stranger_are_refused(daemon: Path, client: Client) -> None:
    port, client_token, server_token, script = endpoint(daemon).read_text().split(" ", 3)
    assert endpoint(daemon).stat().st_mode & 0o777 == 0o600 and script.strip() == HOOK_SCRIPT

    def handshake(first: bytes) -> bytes:
        with socket.create_connection(("127.0.0.1", int(port)), timeout=10) as s:
            s.sendall(first)
            return s.recv(200)

    assert handshake(b"0" * 64 + b"\n") == b"", "a wrong token gets not a byte"
    assert handshake(client_token[:-1].encode() + b"\n") == b""
    assert handshake(b"agent=claude-code\0project=/home/someone/projects/the-service\0size=2\0\0{}") == b"", (
        "no token at all"
    )
    assert handshake(client_token.encode() + b"\n") == server_token.encode() + b"\n"
    if os.geteuid() == 0:  # another uid with the right token (stolen): the kernel says whose socket it is
        stranger = (
            f'exec 3<>/dev/tcp/127.0.0.1/{port}; printf "%s\\n" {client_token} >&3; read -t 10 x <&3; echo "[$x]"'
        )
        cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", str(BASH), "-c", stranger]
        assert subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout == "[]\n"
    data = event(client.project, "claude-code.PreToolUse", tool_input={"command": "ls"}, tool_use_id="t1")
    assert client(data)[2] == 0 and client.fallbacks() == [], "the daemon still serves"


@pytest.mark.root
def test_the_kernel_names_the_uid_of_a_peer_socket() -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        mine = socket.create_connection(("127.0.0.1", port))
        conn, _ = server.accept()
        cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", str(BASH), "-c"]
        other = subprocess.Popen([*cmd, f"exec 3<>/dev/tcp/127.0.0.1/{port}; read -t 10 x <&3"])
        conn2, _ = server.accept()
        try:
            assert tcp_peer_uid(conn) == proc_net_tcp_uid(conn) == os.getuid()
            assert tcp_peer_uid(conn2) == proc_net_tcp_uid(conn2) == 65534
            assert proc_net_tcp_uid(conn, "/nonexistent") is None
        finally:
            other.kill()
            other.wait()
            for s in (mine, conn, conn2):
                s.close()


def test_an_endpoint_or_directory_that_is_not_private_is_not_used(daemon: Path, client: Client) -> None:
    data = event(client.project, "claude-code.PreToolUse", tool_input={"command": "ls"}, tool_use_id="p1")
    file = endpoint(daemon)
    good = client(data)
    assert good[2] == 0 and client.fallbacks() == []
    cases: list[tuple[Callable[[], None], Callable[[], None]]] = [
        (lambda: file.chmod(0o644), lambda: file.chmod(0o600)),  # readable by others: the daemon refuses it
        (lambda: daemon.parent.chmod(0o755), lambda: daemon.parent.chmod(0o700)),
    ]
    if os.geteuid() == 0:
        cases.append((lambda: os.chown(file, 65534, 65534), lambda: os.chown(file, 0, 0)))
    for spoil, mend in cases:
        spoil()
        try:
            assert client(data) == good, "answered as before, through the launcher"
            assert len(client.fallbacks()) == 1
        finally:
            mend()
    assert client(data) == good and client.fallbacks() == []


def test_a_daemon_of_other_code_is_not_asked(daemon: Path, client: Client) -> None:
    data = event(client.project, "claude-code.PreToolUse", tool_input={"command": "ls"}, tool_use_id="u1")
    file = endpoint(daemon)
    good = client(data)
    before = file.stat()
    os.utime(file, ns=(before.st_atime_ns, Path(HOOK_SCRIPT).stat().st_mtime_ns - 10**9))
    try:
        assert client(data) == good and len(client.fallbacks()) == 1, "an endpoint older than the script"
    finally:
        os.utime(file, ns=(before.st_atime_ns, before.st_mtime_ns))
    text = file.read_text()
    file.write_text(text.replace(HOOK_SCRIPT, "/elsewhere/tether/hooks/hook.sh"))
    try:
        assert client(data) == good and len(client.fallbacks()) == 1, "another installation's daemon"
    finally:
        file.write_text(text)
    assert client(data) == good and client.fallbacks() == []


def test_a_daemon_whose_code_changed_on_disk_stops_answering(tmp_path: Path, monkeypatch) -> None:
    sock = tmp_path / "d" / "hookd.sock"
    sock.parent.mkdir(mode=0o700)
    stamps = iter(["old"])
    monkeypatch.setattr(daemon_module, "code_stamp", lambda: next(stamps, "upgraded"))
    served = threading.Thread(target=daemon_module.serve, args=(str(sock),), kwargs={"idle_s": 60})
    served.start()
    try:
        wait_for(endpoint(sock))
        client = Client(tmp_path, sock, tmp_path)
        code = client(b'{"hook_event_name": "Stop"}', ANSWER_FALLBACK="0")[2]
        assert code == 2 and len(client.fallbacks()) == 1, "handed to the launcher, not answered by old code"
        served.join(timeout=30)
        assert not served.is_alive(), "the daemon exits so that a current one starts"
        assert not sock.exists() and not endpoint(sock).exists()
    finally:
        stop_daemon(str(sock))
        served.join(timeout=30)


class FakeDaemon:
    """A TCP server that knows an endpoint's tokens (or not) and replies with whatever a test gives it."""

    def __init__(self, sock: Path, reply: bytes, *, knows_tokens: bool = True) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.client_token, self.server_token = "a" * 64, "b" * 64
        sock.parent.mkdir(mode=0o700, exist_ok=True)
        endpoint(sock).write_text(
            f"{self.server.getsockname()[1]} {self.client_token} {self.server_token} {HOOK_SCRIPT}\n"
        )
        endpoint(sock).chmod(0o600)
        self.reply, self.knows, self.received = reply, knows_tokens, b""
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        conn, _ = self.server.accept()
        with conn:
            conn.settimeout(10)
            while len(self.received) < 65 and (chunk := conn.recv(65 - len(self.received))):
                self.received += chunk
            conn.sendall((self.server_token if self.knows else "c" * 64).encode() + b"\n")
            if self.knows:
                while b"\0\0" not in self.received[65:] or len(self.received) < 65 + self.framed():
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    self.received += chunk
                conn.sendall(self.reply)

    def header(self) -> dict[str, str]:
        head = self.received[65:].split(b"\0\0")[0].decode()
        return dict(field.split("=", 1) for field in head.split("\0") if field)

    def framed(self) -> int:
        """The request's whole length after the token line, once its header is in."""
        return self.received[65:].index(b"\0\0") + 2 + int(self.header()["size"])

    def close(self) -> dict[str, str]:
        self.thread.join(timeout=30)
        self.server.close()
        return self.header()


@pytest.mark.parametrize("reply", [b"", *MALFORMED_REPLIES])  # for bash, no reply at all is malformed too
def test_a_reply_cut_short_or_malformed_is_refused_never_let_through(tmp_path: Path, reply: bytes) -> None:
    sock = tmp_path / "d" / "hookd.sock"
    fake = FakeDaemon(sock, reply)
    client = Client(tmp_path, sock, tmp_path)
    out, err, code = client(b'{"hook_event_name": "Stop", "session_id": "s", "cwd": "/"}')
    fake.close()
    assert (out, code) == ("", 2) and err.startswith("tether refused (fail closed): the daemon"), err
    assert client.fallbacks() == [], "the daemon had the request: not asked twice"


def test_a_well_formed_reply_is_relayed_byte_for_byte(tmp_path: Path) -> None:
    sock = tmp_path / "d" / "hookd.sock"
    stdout, stderr = '{"a": "é"}'.encode(), "why ✓\n".encode()
    fake = FakeDaemon(sock, f"2 {len(stdout)} {len(stderr)}\n".encode() + stdout + stderr)
    client = Client(tmp_path, sock, tmp_path)
    data = '{"hook_event_name": "Stop", "x": "é"}'
    url = "postgresql://app@/tether?host=/run/pg&options=-csearch_path%3Ds1"  # a store URL is passed as given
    out, err, code = client(data.encode(), "codex", "--envelope", "e.yaml", "--db", url)
    header = fake.close()
    assert (out, err, code) == (stdout.decode() + "\n", stderr.decode(), 2)
    size = str(len(data.encode()))
    envelope = f"{os.getcwd()}/e.yaml"
    assert header == {"agent": "codex", "envelope": envelope, "db": url, "project": str(tmp_path), "size": size}
    assert fake.received.endswith(b"\0\0" + data.encode())


def test_an_impostor_on_the_port_gets_the_token_only_and_the_launcher_answers(tmp_path: Path) -> None:
    sock = tmp_path / "d" / "hookd.sock"
    fake = FakeDaemon(sock, b"0 0 0\n", knows_tokens=False)
    client = Client(tmp_path, sock, tmp_path)
    data = b'{"hook_event_name": "Stop", "secret": "tok-1"}'
    code = client(data, "claude-code", ANSWER_FALLBACK="0")[2]
    fake.close()
    assert fake.received == b"a" * 64 + b"\n", "nothing but the client token reached it"
    assert code == 2 and client.fallbacks() == [([*LAUNCHER, "claude-code"], data)], "the same arguments and input"


@pytest.mark.slow
def test_a_stale_endpoint_falls_back_answers_and_the_started_daemon_replaces_it(tmp_path: Path) -> None:
    sock = tmp_path / "d" / "hookd.sock"
    sock.parent.mkdir(mode=0o700)
    with socket.create_server(("127.0.0.1", 0)) as gone:
        port = gone.getsockname()[1]  # closed below: nobody listens there any more
    endpoint(sock).write_text(f"{port} {'a' * 64} {'b' * 64} {HOOK_SCRIPT}\n")
    endpoint(sock).chmod(0o600)
    project = tmp_path / "p"
    project.mkdir()
    client = Client(tmp_path, sock, project)
    try:
        data = event(project, "claude-code.PreToolUse", tool_input={"command": "timeout 5 rm -rf /"}, tool_use_id="s1")
        out, _, code = client(data)
        assert code == 0 and json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny"
        assert len(client.fallbacks()) == 1
        deadline = time.monotonic() + 60  # the launcher started a daemon, which publishes a new endpoint
        while str(port) == endpoint(sock).read_text().split()[0]:
            assert time.monotonic() < deadline, "no daemon replaced the stale endpoint"
            time.sleep(0.05)
        data = event(project, "claude-code.PreToolUse", tool_input={"command": "ls"}, tool_use_id="s2")
        out, _, code = client(data)
        assert code == 0 and json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "allow"
        assert client.fallbacks() == [], "answered by the new daemon"
    finally:
        stop_daemon(str(sock))


def test_concurrent_calls_of_one_session_are_all_answered_and_logged(client: Client) -> None:
    def call(i: int) -> tuple[str, str, int]:
        return client(
            event(client.project, "claude-code.PreToolUse", tool_input={"command": f"ls d{i}"}, tool_use_id=f"k{i}")
        )

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(call, range(16)))
    assert all(
        code == 0 and json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "allow" for out, _, code in results
    ), results
    assert client.fallbacks() == []
    run_id = run_id_for("claude-code", str(payload("claude-code.PreToolUse", client.project)["session_id"]))
    with EventStore.open(client.project / ".tether" / "tether.db", readonly=True) as store:
        store.verify_run(run_id)
        decided = sorted(e.payload["call_id"] for e in store.events(run_id) if e.kind == "action.decided")
    assert decided == sorted(f"k{i}" for i in range(16))
