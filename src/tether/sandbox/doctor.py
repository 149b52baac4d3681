"""``tether doctor``: prove, on this machine, that each sandbox backend enforces what it claims.

Each check runs a real command in the sandbox and verifies the outcome from the host side where it can
(a file that must not appear, a process that must not survive). ``local`` is not an isolation boundary:
the checks it cannot pass (filesystem, root-only and denied files, network, other processes'
environments) are reported as ``not_enforced`` with what was observed, never as passed, and the report
states in plain words what it does not isolate. A required backend must pass every check.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from tether.envelope.schema import Network
from tether.errors import SandboxUnavailable
from tether.quickenum import Quick

from .base import Sandbox
from .bwrap import BwrapSandbox, interpreter_paths, probe
from .egress import Egress
from .egress_policy import EgressPolicy
from .local import LocalSandbox
from .output import OutputCap
from .receipt import TIMEOUT_EXIT_CODE, Receipt

BACKENDS = ("bwrap", "local")
LOCAL_NOT_ENFORCED = frozenset(
    {
        "write_outside_workspace",
        "root_only_file",
        "network_outbound",
        "host_loopback",
        "other_process_env",
        "denied_file_hidden",
        "egress_allowlist",
    }
)
LOCAL_DOES_NOT_ISOLATE = (
    "the user's files: a command reads and writes everything the invoking user can outside the workspace "
    "(ssh keys, cloud credentials, other projects); only the gate stands in the way",
    "the network: a command reaches every host the machine can, including services on 127.0.0.1",
    "other processes: a command sees the user's other processes and reads their environments (/proc/PID/environ), "
    "where tokens often live",
    "files the envelope denies: filesystem.deny is enforced by the gate only, not hidden from a command",
)
"""Said plainly by ``tether doctor`` for the local backend, whatever the checks observe."""
DENIED_NAME = ".env"
CHECK_TIMEOUT_S = 20.0
SHORT_TIMEOUT_S = 1.0
BIG_OUTPUT = 20_000_000


class Status(StrEnum, metaclass=Quick):
    PASS = "pass"
    FAIL = "fail"
    NOT_ENFORCED = "not_enforced"
    SKIPPED = "skipped"


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    detail: str

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "status": self.status.value, "detail": self.detail}


@dataclass
class BackendReport:
    backend: str
    required: bool
    available: bool
    reason: str = ""
    fix: str = ""
    checks: list[Check] = field(default_factory=list)
    does_not_isolate: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return self.available and all(c.status is not Status.FAIL for c in self.checks)

    def to_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "required": self.required,
            "available": self.available,
            "passed": self.passed,
            "reason": self.reason,
            "fix": self.fix,
            "checks": [c.to_dict() for c in self.checks],
            "does_not_isolate": list(self.does_not_isolate),
        }


@dataclass
class DoctorReport:
    backends: list[BackendReport]

    @property
    def ok(self) -> bool:
        return all(b.passed for b in self.backends if b.required)

    @property
    def blocked(self) -> list[BackendReport]:
        """Required backends that cannot start at all."""
        return [b for b in self.backends if b.required and not b.available]

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "backends": [b.to_dict() for b in self.backends]}


# -- fixtures -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scratch:
    root: Path
    workspace: Path
    outside: Path
    secret_dir: Path
    secret: Path | None
    secret_value: str
    port: int
    loopback_token: str
    neighbour_pid: int


@contextmanager
def listener(token: str) -> Iterator[int]:
    """A TCP server on the host's 127.0.0.1 that answers every connection with ``token``."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.1)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.sendall(token.encode() + b"\n")

    thread = threading.Thread(target=serve, name="tether-doctor-listener", daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        server.close()


@contextmanager
def neighbour(value: str) -> Iterator[int]:
    """Another process of this user with ``TETHER_DOCTOR_NEIGHBOUR=value`` in its environment."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(300)"],
        env={"TETHER_DOCTOR_NEIGHBOUR": value},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


@contextmanager
def scratch() -> Iterator[Scratch]:
    with tempfile.TemporaryDirectory(prefix="tether-doctor-") as d:
        root = Path(d)
        workspace, outside, secret_dir = root / "workspace", root / "outside", root / "secret"
        for p in (workspace, outside, secret_dir):
            p.mkdir()
        outside.chmod(0o777)  # only the sandbox's view of the filesystem may stop a write here
        value = "tether-doctor-secret-" + secrets.token_hex(8)
        secret: Path | None = None
        if os.geteuid() == 0:
            secret = secret_dir / "root-only.txt"
            secret.write_text(value)
            secret.chmod(0o600)
        (workspace / DENIED_NAME).write_text(value + "\n")
        (workspace / DENIED_NAME).chmod(0o644)  # readable by anyone: only the sandbox's cover may hide it
        token = "tether-doctor-loopback-" + secrets.token_hex(8)
        with listener(token) as port, neighbour(value) as pid:
            yield Scratch(root, workspace, outside, secret_dir, secret, value, port, token, pid)


def survivors(marker: str, *, grace_s: float = 2.0) -> list[int]:
    """Pids whose command line contains ``marker``, after giving killed processes ``grace_s`` to vanish."""
    needle = marker.encode()
    deadline = time.monotonic() + grace_s
    while True:
        found = []
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    with open(f"/proc/{name}/cmdline", "rb") as f:
                        if needle in f.read():
                            found.append(int(name))
                except OSError:
                    pass
        if not found or time.monotonic() >= deadline:
            return found
        time.sleep(0.05)


def kill_all(pids: Sequence[int]) -> None:
    for pid in pids:
        with suppress(OSError):
            os.kill(pid, signal.SIGKILL)


# -- checks ---------------------------------------------------------------------------------------------

CheckFn = Callable[[Sandbox, Scratch], Check]


def run(sandbox: Sandbox, s: Scratch, command: str, timeout_s: float = CHECK_TIMEOUT_S) -> Receipt:
    return sandbox.run(command, cwd=s.workspace, timeout_s=timeout_s)


def check_interpreter(sandbox: Sandbox, s: Scratch) -> Check:
    r = run(sandbox, s, "python3 -c 'import sys; print(\"py-ok\", sys.version.split()[0])'")
    if r.ok and "py-ok" in r.stdout:
        return Check("interpreter_reachable", Status.PASS, f"python3 {r.stdout.split()[-1]} runs")
    return Check("interpreter_reachable", Status.FAIL, f"python3 failed (exit {r.exit_code}): {r.stderr.strip()[:200]}")


def check_workspace_writable(sandbox: Sandbox, s: Scratch) -> Check:
    r = run(sandbox, s, "mkdir -p sub && echo written > sub/probe.txt && cat sub/probe.txt")
    host = s.workspace / "sub" / "probe.txt"
    if r.ok and host.is_file() and host.read_text().strip() == "written":
        return Check("workspace_writable", Status.PASS, "wrote workspace/sub/probe.txt, visible on the host")
    return Check("workspace_writable", Status.FAIL, f"exit {r.exit_code}: {r.stderr.strip()[:200]}")


def check_write_outside(sandbox: Sandbox, s: Scratch) -> Check:
    target = s.outside / "probe.txt"
    run(sandbox, s, f"echo escaped > {target}; echo escaped > ../escaped.txt")
    escaped = [p for p in (target, s.root / "escaped.txt") if p.exists()]
    for p in escaped:
        p.unlink()
    if escaped:
        return Check("write_outside_workspace", Status.FAIL, f"wrote {', '.join(map(str, escaped))} on the host")
    return Check("write_outside_workspace", Status.PASS, f"{target} (mode 0777 on the host) and ../ stayed untouched")


def check_root_only_file(sandbox: Sandbox, s: Scratch) -> Check:
    targets = [p for p in (s.secret, Path("/etc/shadow")) if p is not None and p.exists()]
    if not targets:
        return Check("root_only_file", Status.SKIPPED, "no root-only file to try (not root and no /etc/shadow)")
    script = "; ".join(f'cat -- "{p}" >/dev/null 2>&1 && echo "READ {p}"' for p in targets)
    r = run(sandbox, s, script)
    read = [line[5:] for line in r.stdout.splitlines() if line.startswith("READ ")]
    if read or s.secret_value in r.stdout:
        return Check("root_only_file", Status.FAIL, f"read {', '.join(read)}")
    return Check("root_only_file", Status.PASS, f"unreadable: {', '.join(map(str, targets))}")


def check_network(sandbox: Sandbox, s: Scratch) -> Check:
    r = run(sandbox, s, "readlink /proc/self/ns/net; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")
    lines = r.stdout.split()
    if not lines:
        return Check("network_outbound", Status.FAIL, f"could not inspect the network: {r.stderr.strip()[:200]}")
    netns, interfaces = lines[0], [i for i in lines[1:] if i != "lo"]
    if netns == os.readlink("/proc/self/ns/net"):
        return Check("network_outbound", Status.FAIL, "runs in the host network namespace (no traffic attempted)")
    if interfaces:
        return Check("network_outbound", Status.FAIL, f"own namespace but has interfaces {', '.join(interfaces)}")
    # Proven without sending a packet anywhere: no interface but lo, and no IPv4 route at all.
    r = run(sandbox, s, "tail -n +2 /proc/net/route")
    if r.stdout.strip():
        return Check("network_outbound", Status.FAIL, f"routes exist: {r.stdout.strip()[:200]}")
    return Check("network_outbound", Status.PASS, "own network namespace: only lo, no IPv4 route out (no traffic sent)")


def check_loopback(sandbox: Sandbox, s: Scratch) -> Check:
    r = run(sandbox, s, f"timeout 3 bash -c 'exec 3<>/dev/tcp/127.0.0.1/{s.port} && head -n1 <&3' 2>/dev/null")
    if s.loopback_token in r.stdout:
        return Check("host_loopback", Status.FAIL, f"reached the host's listener on 127.0.0.1:{s.port}")
    return Check("host_loopback", Status.PASS, f"host listener on 127.0.0.1:{s.port} unreachable")


def check_env(sandbox: Sandbox, s: Scratch) -> Check:
    name, value = "TETHER_DOCTOR_HOST_SECRET", "canary-" + secrets.token_hex(8)
    previous = os.environ.get(name)
    os.environ[name] = value
    try:
        r = run(sandbox, s, "env")
    finally:
        if previous is None:
            del os.environ[name]
        else:
            os.environ[name] = previous
    if not r.ok:
        return Check("host_env_hidden", Status.FAIL, f"env failed (exit {r.exit_code})")
    if value in r.stdout:
        return Check("host_env_hidden", Status.FAIL, f"host variable {name} visible")
    return Check("host_env_hidden", Status.PASS, f"host variable {name} not visible; {len(r.stdout.splitlines())} vars")


def check_background_child(sandbox: Sandbox, s: Scratch) -> Check:
    marker = "tether-doctor-bg-" + secrets.token_hex(6)
    # As in check_orphan: the backends share the workspace, so a previous check's file is removed first (found,
    # it ended the wait at once: a child that never started passed), and the child's appears whole (aside, then
    # renamed: read while the child truncated it, it was empty, "inconclusive").
    script = (
        "rm -f bg.started; setsid bash -c"
        f" 'echo started > bg.tmp && mv bg.tmp bg.started; exec -a {marker} sleep 300' </dev/null >/dev/null 2>&1 & "
        "for i in $(seq 1 250); do [ -s bg.started ] && break; sleep 0.02; done; cat bg.started"
    )
    r = run(sandbox, s, script)
    left = survivors(marker)
    kill_all(left)
    if "started" not in r.stdout:
        return Check("background_child_killed", Status.FAIL, "the background child never started; inconclusive")
    if left:
        return Check("background_child_killed", Status.FAIL, f"setsid child outlived the command (pids {left})")
    how = ""
    if isinstance(sandbox, LocalSandbox):
        how = " (subreaper)" if sandbox.subreaper else " (best effort: env-token sweep)"
    return Check("background_child_killed", Status.PASS, f"setsid child gone when the command returned{how}")


def check_orphan(sandbox: Sandbox, s: Scratch) -> Check:
    """A double fork with a new session and a scrubbed environment: no group, no token to find it by."""
    marker = "tether-doctor-orphan-" + secrets.token_hex(6)
    # The pid file appears whole (written aside, then renamed) and a previous check's is removed first: a
    # stale file would end the wait at once and be read while the new child truncates it (an empty answer).
    script = (
        "rm -f orphan.pid; ( setsid env -i /bin/bash -c"
        f" 'echo $$ > orphan.tmp && mv orphan.tmp orphan.pid; exec -a {marker} sleep 300' </dev/null >/dev/null 2>&1"
        " & ); for i in $(seq 1 250); do [ -s orphan.pid ] && break; sleep 0.02; done; cat orphan.pid"
    )
    r = run(sandbox, s, script)
    left = survivors(marker)
    kill_all(left)
    if not r.stdout.strip():
        return Check("orphan_reaped", Status.FAIL, "the double-forked child never started; inconclusive")
    if left:
        return Check("orphan_reaped", Status.FAIL, f"double-forked env -i child outlived the command (pids {left})")
    how = "the pid namespace ended" if isinstance(sandbox, BwrapSandbox) else "reparented to tether (subreaper)"
    return Check("orphan_reaped", Status.PASS, f"double-forked, setsid, env -i child gone: {how}")


def check_other_process_env(sandbox: Sandbox, s: Scratch) -> Check:
    r = run(sandbox, s, f"cat /proc/{s.neighbour_pid}/environ 2>/dev/null | tr '\\0' '\\n'")
    if s.secret_value in r.stdout:
        return Check(
            "other_process_env", Status.FAIL, f"read the environment of another process (pid {s.neighbour_pid})"
        )
    return Check("other_process_env", Status.PASS, f"another process's environment (pid {s.neighbour_pid}) unreadable")


def check_denied_file(sandbox: Sandbox, s: Scratch) -> Check:
    r = run(sandbox, s, f"cat {DENIED_NAME}; find . -name {DENIED_NAME} -exec cat {{}} +")
    if s.secret_value in r.stdout:
        return Check("denied_file_hidden", Status.FAIL, f"read {DENIED_NAME}, which filesystem.deny names")
    if not (s.workspace / DENIED_NAME).read_text().startswith(s.secret_value):
        return Check("denied_file_hidden", Status.FAIL, f"{DENIED_NAME} changed on the host")
    return Check("denied_file_hidden", Status.PASS, f"{DENIED_NAME} (denied, mode 0644) unreadable by cat and find")


def check_timeout(sandbox: Sandbox, s: Scratch) -> Check:
    marker = "tether-doctor-timeout-" + secrets.token_hex(6)
    r = run(sandbox, s, f"setsid bash -c 'exec -a {marker} sleep 300' & exec -a {marker} sleep 300", SHORT_TIMEOUT_S)
    left = survivors(marker)
    kill_all(left)
    if not (r.timed_out and r.exit_code == TIMEOUT_EXIT_CODE):
        return Check("timeout_kills", Status.FAIL, f"exit {r.exit_code}, timed_out={r.timed_out}")
    if left:
        return Check("timeout_kills", Status.FAIL, f"processes survived the timeout (pids {left})")
    return Check("timeout_kills", Status.PASS, f"killed after {r.duration_s:.2f}s: exit 124, no survivors")


def check_output_bounded(sandbox: Sandbox, s: Scratch) -> Check:
    r = run(sandbox, s, f"head -c {BIG_OUTPUT} /dev/zero | tr '\\0' x")
    cap = OutputCap() if not isinstance(sandbox, LocalSandbox | BwrapSandbox) else sandbox.cap
    kept = len(r.stdout.encode())
    if r.stdout_bytes != BIG_OUTPUT or not r.truncated or kept > cap.head + cap.tail + 256:
        return Check("output_bounded", Status.FAIL, f"counted {r.stdout_bytes}, kept {kept}, truncated={r.truncated}")
    return Check("output_bounded", Status.PASS, f"{r.stdout_bytes} bytes counted, {kept} kept")


ALLOWED_NAME, REFUSED_NAME = "allowed.tether-doctor.test", "refused.tether-doctor.test"
EGRESS_PROBE = """
import socket, sys, urllib.error, urllib.request
def get(url):
    try:
        return urllib.request.urlopen(url, timeout=5).read().decode()
    except urllib.error.HTTPError as e:
        return f"HTTP {e.code} {e.headers.get('X-Tether-Egress')}"
    except Exception as e:
        return f"ERROR {e!r}"
allowed, refused, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
print("ALLOWED", get(f"http://{allowed}:{port}/"))
print("REFUSED", get(f"http://{refused}:{port}/"))
s = socket.socket()
s.settimeout(3)
try:
    s.connect(("127.0.0.1", port))
    print("DIRECT connected")
except OSError as e:
    print("DIRECT", e)
"""


@contextmanager
def http_server(token: str) -> Iterator[tuple[int, list[str]]]:
    """An HTTP server on the host's 127.0.0.1 answering ``token``; the list collects each request's path."""
    import http.server

    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            body = token.encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, name="tether-doctor-http", daemon=True)
    thread.start()
    try:
        yield server.server_address[1], seen
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


def check_egress(sandbox: Sandbox, s: Scratch) -> Check:
    """Through the real proxy: a listed name (mapped to a server on 127.0.0.1) answers, another is refused,
    and a direct connection to the same server's port fails. Nothing leaves this machine's loopback."""
    if not isinstance(sandbox, BwrapSandbox):
        return Check("egress_allowlist", Status.FAIL, "no egress proxy: a command reaches every host the machine can")
    token = "tether-doctor-egress-" + secrets.token_hex(8)
    with http_server(token) as (port, seen):
        network = Network(allow=[f"{ALLOWED_NAME}:{port}"], allow_loopback=True)
        resolve = {ALLOWED_NAME: ["127.0.0.1"], REFUSED_NAME: ["127.0.0.1"]}
        box = sandbox.with_egress(Egress(EgressPolicy.of(network), lambda host, _port: resolve.get(host, [])))
        probe_argv = [sys.executable, "-c", EGRESS_PROBE, ALLOWED_NAME, REFUSED_NAME, str(port)]
        r = box.run(probe_argv, cwd=s.workspace, timeout_s=CHECK_TIMEOUT_S)
    said = dict(line.split(" ", 1) for line in r.stdout.splitlines() if " " in line)
    rules = [(a.host, a.rule.value) for a in box.egress_attempts]
    problems = []
    if said.get("ALLOWED") != token:
        problems.append(f"the listed name did not answer through the proxy ({said.get('ALLOWED', r.stderr[-200:])})")
    if said.get("REFUSED") != "HTTP 403 not-listed" or (REFUSED_NAME, "not-listed") not in rules:
        problems.append(f"the unlisted name was not refused ({said.get('REFUSED')})")
    if said.get("DIRECT", "connected") == "connected" or len(seen) != 1:
        problems.append(f"a direct connection to 127.0.0.1:{port} got through ({said.get('DIRECT')}, {seen})")
    if problems:
        return Check("egress_allowlist", Status.FAIL, "; ".join(problems))
    return Check(
        "egress_allowlist",
        Status.PASS,
        f"{ALLOWED_NAME} answered through the proxy; {REFUSED_NAME} refused (not-listed); direct 127.0.0.1:{port} "
        f"failed ({said['DIRECT'][:60]}); {len(rules)} attempts logged",
    )


CHECKS: tuple[CheckFn, ...] = (
    check_interpreter,
    check_workspace_writable,
    check_write_outside,
    check_root_only_file,
    check_network,
    check_loopback,
    check_env,
    check_background_child,
    check_orphan,
    check_timeout,
    check_other_process_env,
    check_denied_file,
    check_output_bounded,
    check_egress,
)


def run_checks(backend: str, sandbox: Sandbox, s: Scratch) -> list[Check]:
    out = []
    for fn in CHECKS:
        try:
            check = fn(sandbox, s)
        except SandboxUnavailable as e:
            check = Check(fn.__name__.removeprefix("check_"), Status.FAIL, f"sandbox failed: {e}")
        if backend == "local" and check.status is Status.FAIL and check.name in LOCAL_NOT_ENFORCED:
            check = Check(check.name, Status.NOT_ENFORCED, check.detail)
        out.append(check)
    return out


def run_doctor(required: Sequence[str] = ("bwrap",), backends: Sequence[str] = BACKENDS) -> DoctorReport:
    """Run every check against every requested backend that can start."""
    reports = []
    with scratch() as s:
        for backend in backends:
            report = BackendReport(backend, required=backend in required, available=True)
            sandbox: Sandbox
            if backend == "bwrap":
                error = probe()
                if error is not None:
                    report.available, report.reason, report.fix = False, str(error), error.fix
                    reports.append(report)
                    continue
                sandbox = BwrapSandbox(s.workspace, ro_paths=[*interpreter_paths(), s.secret_dir], deny=[DENIED_NAME])
            else:
                sandbox = LocalSandbox()
                report.does_not_isolate = LOCAL_DOES_NOT_ISOLATE
            report.checks = run_checks(backend, sandbox, s)
            reports.append(report)
    return DoctorReport(reports)
