"""End-to-end runs with the real SDK adapters: ``tether run --model openai:…|anthropic:… --base-url``.

The CLI runs in a subprocess against a server on 127.0.0.1 that speaks the provider's wire format
(:mod:`tether.models.testing`), so the whole path is real: envelope, kernel, SDK client, HTTP, gate,
sandbox, sensors and the SQLite log. The subprocess environment is scrubbed: no proxy, no real key and
no provider base URL from the developer's shell can reach it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from runkit import FINISH, FIX, tether

from tether import EventStore
from tether.events.store import Event
from tether.models.testing import (
    PROXY_ENV_VARS,
    AnthropicWireServer,
    OpenAIWireServer,
    Reply,
    WireServer,
    anthropic_error,
    anthropic_message,
    openai_chat,
    openai_error,
)

#: Provider settings a developer's shell may hold; none of them may reach the run under test.
PROVIDER_ENV_VARS = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "TETHER_DB",
)
CUT_OFF = "cut off at the token limit"


@dataclass(frozen=True)
class Provider:
    name: str
    model: str
    server: Callable[[], WireServer]
    env: dict[str, str]
    tool_call: Callable[[str, dict[str, Any]], Reply]
    text: Callable[[str], Reply]
    refusal: Callable[[str], Reply]
    truncated: Callable[[str], Reply]
    error: Callable[[int], Reply]


OPENAI = Provider(
    name="openai",
    model="openai:gpt-4.1",
    server=OpenAIWireServer,
    env={},  # with --base-url and no key, the registry gives the SDK a placeholder key
    tool_call=lambda call_id, call: openai_chat(tool_calls=[(call_id, call["name"], call["args"])]),
    text=lambda text: openai_chat(text),
    refusal=lambda why: openai_chat(None, refusal=why),
    truncated=lambda text: openai_chat(text, finish_reason="length"),
    error=lambda status: openai_error(status, "scripted failure"),
)
ANTHROPIC = Provider(
    name="anthropic",
    model="anthropic:claude-sonnet-4-5",
    server=AnthropicWireServer,
    env={"ANTHROPIC_API_KEY": "test"},
    tool_call=lambda call_id, call: anthropic_message(tool_uses=[(call_id, call["name"], call["args"])]),
    text=lambda text: anthropic_message(text),
    refusal=lambda why: anthropic_message(why, stop_reason="refusal"),
    truncated=lambda text: anthropic_message(text, stop_reason="max_tokens"),
    error=lambda status: anthropic_error(status, "scripted failure"),
)


@pytest.fixture(params=[OPENAI, ANTHROPIC], ids=lambda p: p.name)
def provider(request: pytest.FixtureRequest) -> Provider:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def envelope(bugfix: Path) -> Path:
    """The bugfix envelope with fast retry backoff (the example's 0.5 s would only slow the tests)."""
    env = bugfix / "envelope.yaml"
    env.write_text(
        env.read_text().replace("backoff_s: 0.5", "backoff_s: 0.01").replace("backoff_max_s: 8", "backoff_max_s: 0.05")
    )
    tether("compile", str(bugfix / "plan.yaml"), "-o", str(env), check=True)
    return env


@pytest.fixture
def server(provider: Provider) -> Iterator[WireServer]:
    with provider.server() as s:
        yield s


def scrubbed_env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in PROXY_ENV_VARS and k not in PROVIDER_ENV_VARS}
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    env["PATH"] = f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"
    return {**env, **extra}


@dataclass
class Outcome:
    proc: subprocess.CompletedProcess[str]
    contract: dict[str, Any]
    events: list[Event]

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e.payload for e in self.events if e.kind == kind]


def run(provider: Provider, server: WireServer, envelope: Path) -> Outcome:
    db = envelope.parent / "t.db"
    args = ["run", "fix the median", "--envelope", str(envelope), "--model", provider.model]
    args += ["--base-url", server.base_url, "--db", str(db), "--sandbox", "local", "--headless", "--json"]
    proc = subprocess.run(
        [sys.executable, "-m", "tether.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        env=scrubbed_env(provider.env),
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert lines, f"no output contract\n{proc.stdout}\n{proc.stderr}"
    contract = json.loads(lines[-1])
    with EventStore.open(db) as store:
        events = store.events(contract["run_id"])
    return Outcome(proc, contract, events)


def test_scripted_tool_calls_fix_the_bug_and_complete(provider: Provider, server: WireServer, envelope: Path) -> None:
    server.push(provider.tool_call("call_fix", FIX), provider.tool_call("call_finish", FINISH))
    out = run(provider, server, envelope)
    assert out.proc.returncode == 0, out.proc.stdout + out.proc.stderr
    assert out.contract["status"] == "COMPLETE"
    assert server.pending == 0 and len(server.requests) == 2
    fixed = (envelope.parent / "project" / "src" / "stats" / "core.py").read_text()
    assert "(ordered[middle - 1] + ordered[middle]) / 2" in fixed
    responded = out.of("model.responded")
    assert [r["model"] for r in responded] == [provider.model] * 2
    assert [r["tool_calls"][0]["name"] for r in responded] == ["edit_file", "finish"]
    assert all(r["input_tokens"] > 0 and r["output_tokens"] > 0 for r in responded)  # usage crossed the wire
    # The second request answered the first tool call with its receipt, in the provider's format.
    second = json.dumps(server.requests[1].body)
    assert "call_fix" in second and "src/stats/core.py" in second
    sensors = {p["sensor"]: p["result"] for p in out.of("sensor.result")}
    assert sensors["tests"] == "PASS"


def test_rate_limit_is_retried_then_the_run_completes(provider: Provider, server: WireServer, envelope: Path) -> None:
    server.push(provider.error(429), provider.tool_call("call_fix", FIX), provider.tool_call("call_finish", FINISH))
    out = run(provider, server, envelope)
    assert out.contract["status"] == "COMPLETE", out.proc.stdout + out.proc.stderr
    assert [r["attempts"] for r in out.of("model.responded")] == [2, 1]
    assert not out.of("model.failed")
    assert len(server.requests) == 3


def test_repeated_server_errors_block_the_run(provider: Provider, server: WireServer, envelope: Path) -> None:
    server.push(*(provider.error(500) for _ in range(3)))  # the envelope's retry.max_attempts
    out = run(provider, server, envelope)
    assert out.proc.returncode == 4, out.proc.stdout + out.proc.stderr
    assert out.contract["status"] == "BLOCKED_DEPENDENCY"
    assert out.contract["last_error"] and "500" in out.contract["last_error"]
    failed = out.of("model.failed")
    assert len(failed) == 1 and failed[0]["transient"] is True and failed[0]["status"] == 500
    assert not out.of("model.responded") and not out.of("action.started")
    assert len(server.requests) == 3 and server.pending == 0


def test_refusal_needs_input(provider: Provider, server: WireServer, envelope: Path) -> None:
    server.push(provider.refusal("I can't help with that."))
    out = run(provider, server, envelope)
    assert out.proc.returncode == 5, out.proc.stdout + out.proc.stderr
    assert out.contract["status"] == "NEEDS_INPUT"
    assert "refused" in out.contract["result"]
    assert [r["termination"] for r in out.of("model.responded")] == ["refusal"]
    assert len(server.requests) == 1


def test_truncation_is_told_to_the_model_on_the_next_request(
    provider: Provider, server: WireServer, envelope: Path
) -> None:
    long_text = " ".join(["word"] * 50)
    server.push(
        provider.truncated(long_text), provider.tool_call("call_fix", FIX), provider.tool_call("call_finish", FINISH)
    )
    out = run(provider, server, envelope)
    assert out.contract["status"] == "COMPLETE", out.proc.stdout + out.proc.stderr
    assert [r["termination"] for r in out.of("model.responded")] == ["truncated", "tool_request", "tool_request"]
    first, second = (json.dumps(r.body) for r in server.requests[:2])
    assert CUT_OFF not in first
    assert CUT_OFF in second
