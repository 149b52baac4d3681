"""Who may use the console, tried against the real server on loopback: the bind rule, the token, the Host
check against DNS rebinding, same-origin POSTs with a CSRF token, the security headers; and the live stream."""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from urllib.parse import urlencode

import pytest
from consolekit import write_run

from tether.console.access import bind_token, is_loopback
from tether.console.server import Background, serve
from tether.errors import InputError, RuntimeFailure
from tether.events.kinds import RunFinished
from tether.events.store import EventStore
from tether.status import RunStatus


def request(
    server: Background, method: str, path: str, headers: dict[str, str] | None = None, body: str | None = None
) -> tuple[int, dict[str, str], str]:
    conn = http.client.HTTPConnection(server.host, server.port, timeout=10)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read().decode()
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True), ("127.0.0.2", True), ("::1", True), ("[::1]", True), ("localhost", True),
        ("LOCALHOST", True), ("0.0.0.0", False), ("::", False), ("192.168.1.20", False), ("10.0.0.1", False),
        ("localhost.example.com", False), ("127.0.0.1.nip.io", False), ("", False),
    ],
)  # fmt: skip
def test_only_loopback_addresses_count_as_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_any_other_bind_gets_a_fresh_token_and_a_weak_one_is_refused() -> None:
    assert bind_token("127.0.0.1", None) is None
    first, second = bind_token("0.0.0.0", None), bind_token("192.168.1.20", None)
    assert first and second and first != second and len(first) >= 32
    assert bind_token("0.0.0.0", "a-token-of-twenty-chars") == "a-token-of-twenty-chars"
    with pytest.raises(InputError, match="at least 16"):
        bind_token("0.0.0.0", "short")
    with pytest.raises(RuntimeFailure, match="without a token"):  # refused before any socket is opened
        serve(Path("unused.db"), "0.0.0.0", 0, None)


def test_a_tokened_console_refuses_every_request_without_the_token(db: Path) -> None:
    EventStore.open(db).close()
    token = "t0ken-" + "x" * 20
    server = Background(db, host="127.0.0.2", token=token)  # a token on a second loopback address
    try:
        assert request(server, "GET", "/")[0] == 401
        assert request(server, "GET", "/approvals", {"Authorization": "Bearer wrong-token-wrong-token"})[0] == 401
        assert request(server, "GET", "/?token=" + "x" * 26)[0] == 401
        status, headers, _ = request(server, "GET", "/approvals?token=" + token + "&x=1")  # to a cookie, off the URL
        assert status == 303 and headers["location"] == "/approvals?x=1"
        assert f"tether_token={token}" in headers["set-cookie"] and "HttpOnly" in headers["set-cookie"]
        cookie = {"Cookie": f"tether_token={token}"}
        assert request(server, "GET", "/?token=" + "y" * 26, cookie)[0] == 200  # a wrong one never replaces it
        assert request(server, "GET", "/approvals", {"Cookie": f"tether_token={token}"})[0] == 200
        assert request(server, "GET", "/", {"Authorization": f"Bearer {token}"})[0] == 200
    finally:
        server.stop()


def test_a_foreign_host_header_is_refused_on_loopback(served: Background) -> None:
    assert request(served, "GET", "/", {"Host": "attacker.example:80"})[0] == 421
    assert request(served, "GET", "/", {"Host": f"localhost:{served.port}"})[0] == 200


def test_posts_must_be_same_origin_and_carry_the_csrf_token(served: Background, db: Path) -> None:
    with EventStore.open(db) as store:
        run_id = write_run(store, "t", 1)
    status, headers, body = request(served, "GET", f"/runs/{run_id}")
    assert status == 200
    cookie = headers["set-cookie"].split(";")[0]
    csrf = cookie.split("=", 1)[1]
    origin = f"http://127.0.0.1:{served.port}"
    form = {"Content-Type": "application/x-www-form-urlencoded", "Cookie": cookie}
    path = f"/runs/{run_id}/verify"
    assert request(served, "POST", path, form, urlencode({"csrf": csrf}))[0] == 403  # no Origin at all
    assert request(served, "POST", path, {**form, "Origin": "http://evil.example"}, urlencode({"csrf": csrf}))[0] == 403
    assert request(served, "POST", path, {**form, "Origin": origin}, urlencode({"csrf": "guessed"}))[0] == 403
    assert request(served, "POST", path, {**form, "Origin": origin}, "")[0] == 403
    status, _, body = request(served, "POST", path, {**form, "Origin": origin}, urlencode({"csrf": csrf}))
    assert status == 200 and "chain intact" in body


def test_every_page_carries_a_script_policy_of_its_own_origin(served: Background) -> None:
    _, headers, _ = request(served, "GET", "/")
    assert "script-src 'self'" in headers["content-security-policy"]
    assert "unsafe-inline" not in headers["content-security-policy"]
    assert headers["x-frame-options"] == "DENY" and headers["x-content-type-options"] == "nosniff"


def test_the_stream_sends_each_new_event_rendered_then_ends_with_the_run(served: Background, db: Path) -> None:
    with EventStore.open(db) as store:
        run_id = write_run(store, "<b>bold</b>", 1)
        last = store.head(run_id)[0]
        store.append(run_id, RunFinished(status=RunStatus.NO_PROGRESS, result="<i>done</i>"))
    conn = http.client.HTTPConnection(served.host, served.port, timeout=10)
    conn.request("GET", f"/runs/{run_id}/stream?after={last - 1}")
    r = conn.getresponse()
    assert r.getheader("content-type", "").startswith("text/event-stream")
    messages = r.read().decode().strip().split("\n\n")  # the stream ends with the finished run
    conn.close()
    parsed = [dict(line.split(": ", 1) for line in m.splitlines()) for m in messages]
    assert [m["event"] for m in parsed] == ["item", "item", "status", "end"]
    assert [m["id"] for m in parsed[:2]] == [str(last), str(last + 1)]
    html = json.loads(parsed[1]["data"])["html"]
    assert "&lt;i&gt;done&lt;/i&gt;" in html and "<i>" not in html
    assert json.loads(parsed[2]["data"])["status"] == "NO_PROGRESS"
