"""The egress proxy from inside a real bubblewrap sandbox: the way out through it, and the ways around it.

Every test connects only to the HTTP server on the host's 127.0.0.1 (``conftest.upstream``), by test
names the resolver hook maps; inside the sandbox nothing resolves a name (no packet to any DNS server).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from egresskit import TOKEN, Names, Upstream

from tether.envelope.schema import Network
from tether.errors import SandboxUnavailable
from tether.events.kinds_egress import EgressRule
from tether.sandbox import BwrapSandbox, bwrap
from tether.sandbox.bwrap import for_call, take_egress
from tether.sandbox.egress import Egress
from tether.sandbox.egress_policy import EgressPolicy

pytestmark = pytest.mark.bwrap

FETCH = """
import http.client, sys, urllib.error, urllib.request
def get(url, opener=urllib.request.build_opener()):
    try:
        return opener.open(url, timeout=5).read().decode()
    except urllib.error.HTTPError as e:
        return f"HTTP {e.code} {e.headers.get('X-Tether-Egress')}"
    except Exception as e:
        return f"ERROR {type(e).__name__}"
def tunnel(host, port):
    c = http.client.HTTPConnection("127.0.0.1", 3128, timeout=5)
    c.set_tunnel(host, port)
    try:
        c.request("GET", "/tunnelled")
        return c.getresponse().read().decode()
    except Exception as e:
        return f"ERROR {e}"
port = int(sys.argv[1])
for line in sys.stdin.read().split(";"):
    kind, _, arg = line.strip().partition(" ")
    if kind == "get":
        print(arg, "=>", get(arg.replace("PORT", str(port))))
    elif kind == "tunnel":
        print(arg, "=>", tunnel(arg, port))
    elif kind == "direct":  # around the proxy: no proxy handler at all
        no_proxy = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        print(arg, "=>", get(arg.replace("PORT", str(port)), no_proxy))
"""


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory, upstream: Upstream) -> BwrapSandbox:
    workspace = tmp_path_factory.mktemp("ws")
    (workspace / "fetch.py").write_text(FETCH)
    network = Network(allow=[f"allowed.test:{upstream.port}", "other.test"], allow_loopback=True)
    table = {"allowed.test": ["127.0.0.1"], "other.test": ["127.0.0.1"], "internal.test": ["10.9.9.9"]}
    return BwrapSandbox(workspace, egress=Egress(EgressPolicy.of(network), Names(table)))


def fetch(box: BwrapSandbox, port: int, script: str) -> dict[str, str]:
    assert box.workspace is not None
    r = box.run(f"echo '{script}' | {sys.executable} fetch.py {port}", cwd=box.workspace, timeout_s=60)
    assert r.exit_code == 0, r.stderr
    return dict(line.split(" => ", 1) for line in r.stdout.splitlines() if " => " in line)


def test_listed_names_are_reached_through_the_proxy_and_every_attempt_is_logged(
    box: BwrapSandbox, upstream: Upstream
) -> None:
    upstream.clear()
    said = fetch(
        box,
        upstream.port,
        "get http://allowed.test:PORT/plain; tunnel allowed.test; get http://other.test:PORT/; "
        "get http://2130706433:PORT/; get http://internal.test/; get http://allowed.test:PORT/%0d%0aHost:x",
    )
    assert said["http://allowed.test:PORT/plain"] == f"{TOKEN} GET /plain"
    assert said["allowed.test"] == f"{TOKEN} GET /tunnelled"  # CONNECT, then bytes through the tunnel
    assert said["http://other.test:PORT/"] == "HTTP 403 port"  # listed for 443 and 80 only
    assert said["http://2130706433:PORT/"] == "HTTP 403 ip-literal"
    assert said["http://internal.test/"] == "HTTP 403 not-listed"
    assert [p for _, p, _, _ in upstream.requests] == ["/plain", "/tunnelled", "/%0d%0aHost:x"]
    attempts = take_egress(box)
    assert [(a.method, a.host, a.rule) for a in attempts] == [
        ("GET", "allowed.test", EgressRule.ALLOWED),
        ("CONNECT", "allowed.test", EgressRule.ALLOWED),
        ("GET", "other.test", EgressRule.PORT),
        ("GET", "2130706433", EgressRule.IP_LITERAL),
        ("GET", "internal.test", EgressRule.NOT_LISTED),
        ("GET", "allowed.test", EgressRule.ALLOWED),
    ]
    assert all(a.port is not None and a.duration_s >= 0 for a in attempts)
    assert take_egress(box) == []  # taken once


def test_around_the_proxy_there_is_no_way_out(box: BwrapSandbox, upstream: Upstream) -> None:
    """A direct socket, bash's /dev/tcp, and the proxy variables unset: all fail inside the namespace.

    They never reach the proxy, so there is nothing for it to log: the kernel has no route to give them.
    """
    upstream.clear()
    assert box.workspace is not None
    port = upstream.port
    script = (
        f"{sys.executable} -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 3)' 2>&1 | tail -1; "
        f"(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>&1; "
        f"env -u HTTP_PROXY -u http_proxy -u HTTPS_PROXY -u https_proxy -u ALL_PROXY -u all_proxy "
        f"{sys.executable} -c 'import urllib.request as u; u.urlopen(\"http://127.0.0.1:{port}/\", timeout=3)' 2>&1 "
        "| tail -1; echo 'direct http://127.0.0.1:PORT/' | " + f"{sys.executable} fetch.py {port}"
    )
    r = box.run(script, cwd=box.workspace, timeout_s=60)
    assert r.stdout.count("Connection refused") >= 3, r.stdout  # socket, /dev/tcp, urllib without the variables
    assert "=> ERROR URLError" in r.stdout
    assert upstream.requests == []
    assert take_egress(box) == []


def test_a_call_carrying_a_secret_reaches_only_the_secret_hosts(box: BwrapSandbox, upstream: Upstream) -> None:
    upstream.clear()
    call = for_call(box, "c7", [("GH_TOKEN", ["other.test"])])
    said = fetch(call, upstream.port, "get http://allowed.test:PORT/secret")
    assert said["http://allowed.test:PORT/secret"] == "HTTP 403 secret-hosts"
    [a] = take_egress(call)
    assert (a.call_id, a.rule, a.allowed) == ("c7", EgressRule.SECRET_HOSTS, False)
    assert take_egress(box) == [] and upstream.requests == []  # the base sandbox is unchanged


def test_without_a_listed_host_there_is_no_proxy_at_all(tmp_path: Path) -> None:
    box = BwrapSandbox(tmp_path)
    r = box.run("env | grep -ci proxy; ls /run/tether-egress 2>&1", cwd=tmp_path, timeout_s=30)
    assert r.stdout.split()[0] == "0" and "No such file" in r.stdout


def test_a_bridge_that_cannot_listen_stops_the_command_from_starting(
    box: BwrapSandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fail closed: without its way out, the command does not run at all (it would run with no network)."""
    monkeypatch.setattr(bwrap, "bridge_command", lambda *_: ["sh", "-c", "echo 'bridge: cannot listen' >&2; exit 1"])
    assert box.workspace is not None
    with pytest.raises(SandboxUnavailable, match="cannot listen"):
        box.run("touch ran", cwd=box.workspace, timeout_s=30)
    assert not (box.workspace / "ran").exists()
    assert take_egress(box) == []
