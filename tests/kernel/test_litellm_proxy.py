"""Both adapters against a server this project did not write: LiteLLM's proxy, on 127.0.0.1, with mock responses.

LiteLLM (pinned in pyproject's ``proxy`` extra, installed by ``make`` into ``.venv-proxy``) parses
and translates what tether sends — its Anthropic ``/v1/messages`` endpoint converts to OpenAI form
and back — and answers from ``mock_response``/``mock_tool_calls`` without any upstream, so its
own request handling, error shapes and retries are what the runs meet. Its ``num_retries`` is 0,
so every request it logs is one tether made.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import clikit
import pytest
import yaml
from runkit import FINISH, FIX, recompile

from tether import EventStore, RunState
from tether.kernel.outcome import OutputContract
from tether.models.testing import PROXY_ENV_VARS

ROOT = Path(__file__).resolve().parents[2]
LITELLM = Path(os.environ.get("TETHER_LITELLM") or ROOT / ".venv-proxy" / "bin" / "litellm")


def call(call_id: str, c: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": c["name"], "arguments": json.dumps(c["args"])}}


def mocked(name: str, **params: Any) -> dict[str, Any]:
    return {"model_name": name, "litellm_params": {"model": f"openai/{name}", "api_key": "unused", **params}}


CONFIG = {
    "model_list": [
        mocked("fixer", mock_response="", mock_tool_calls=[call("call_fix", FIX), call("call_finish", FINISH)]),
        mocked("reader", mock_response="", mock_tool_calls=[call("call_read", {"name": "list_dir", "args": {}})]),
        mocked("overflow", mock_response="litellm.ContextWindowExceededError"),
        mocked("down", mock_response="litellm.InternalServerError"),
    ],
    "litellm_settings": {"num_retries": 0},
}


@dataclass
class Proxy:
    port: int
    log: Path

    def requests(self, path: str) -> int:
        return sum(1 for line in self.log.read_text().splitlines() if f'"POST {path} HTTP' in line)


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    keep = {
        k: v for k, v in os.environ.items() if k not in PROXY_ENV_VARS and not k.startswith(("OPENAI_", "ANTHROPIC_"))
    }
    keep.update(NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost", LITELLM_LOCAL_MODEL_COST_MAP="True")
    return {**keep, **(extra or {})}


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    if not LITELLM.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"LiteLLM proxy not installed at {LITELLM}; `make test` installs it into .venv-proxy")
        pytest.skip(f"LiteLLM proxy not installed at {LITELLM} (make test installs it)")
    home = tmp_path_factory.mktemp("litellm")
    (home / "config.yaml").write_text(yaml.safe_dump(CONFIG))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = home / "proxy.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [str(LITELLM), "--config", str(home / "config.yaml"), "--host", "127.0.0.1", "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=home,
            env=_env(),
        )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health/liveliness", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"LiteLLM proxy did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        yield Proxy(port, log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


ADAPTERS = {
    "openai": ("openai:{model}", "/v1", "/v1/chat/completions", {}),
    "anthropic": ("anthropic:{model}", "", "/v1/messages", {"ANTHROPIC_API_KEY": "unused"}),
}


@pytest.fixture(params=sorted(ADAPTERS))
def adapter(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def envelope(bugfix: Path) -> Path:
    env = bugfix / "envelope.yaml"
    text = (
        env.read_text().replace("backoff_s: 0.5", "backoff_s: 0.01").replace("backoff_max_s: 8", "backoff_max_s: 0.05")
    )
    env.write_text(text.replace("  max_turns: 30\n", "  max_turns: 3\n"))
    recompile(env)
    return env


def run(proxy: Proxy, adapter: str, model: str, envelope: Path) -> tuple[subprocess.CompletedProcess[str], Any]:
    spec, path, _, extra = ADAPTERS[adapter]
    db = envelope.parent / "t.db"
    args = ["run", "fix the median", "--envelope", str(envelope), "--model", spec.format(model=model)]
    args += ["--base-url", f"http://127.0.0.1:{proxy.port}{path}", "--db", str(db), "--sandbox", "local", "--headless"]
    proc = clikit.run(args, _env(extra), timeout=300)  # a process of its own, forked with the SDKs imported
    with EventStore.open(db) as store:
        (info,) = store.runs()
        events = store.events(info.run_id)
    return proc, events


def contract(events: Any) -> dict[str, Any]:
    return OutputContract.from_state(RunState.from_events(events)).model_dump()


def of(events: Any, kind: str) -> list[dict[str, Any]]:
    return [e.payload for e in events if e.kind == kind]


def test_tool_calls_through_the_proxy_fix_the_bug(proxy: Proxy, adapter: str, envelope: Path) -> None:
    proc, events = run(proxy, adapter, "fixer", envelope)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert contract(events)["status"] == "COMPLETE"
    assert [p["tool"] for p in of(events, "action.started")] == ["edit_file", "finish"]
    fixed = (envelope.parent / "project" / "src" / "stats" / "core.py").read_text()
    assert fixed.count("(ordered[middle - 1] + ordered[middle]) / 2") == 1


def test_later_turns_with_empty_content_and_tool_results_are_accepted(
    proxy: Proxy, adapter: str, envelope: Path
) -> None:
    before = proxy.requests(ADAPTERS[adapter][2])
    proc, events = run(proxy, adapter, "reader", envelope)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert contract(events)["status"] in ("BUDGET_STOP", "NO_PROGRESS")
    assert len(of(events, "model.responded")) >= 2 and not of(events, "model.failed")
    assert proxy.requests(ADAPTERS[adapter][2]) - before == len(of(events, "model.responded"))


def test_the_proxys_context_window_error_is_an_overflow_not_an_outage(
    proxy: Proxy, adapter: str, envelope: Path
) -> None:
    before = proxy.requests(ADAPTERS[adapter][2])
    proc, events = run(proxy, adapter, "overflow", envelope)
    assert proc.returncode == 5, proc.stdout + proc.stderr
    result = contract(events)
    assert result["status"] == "NEEDS_INPUT" and "agent.context_window" in result["next_action"]
    assert "key" not in (result["result"] + result["next_action"]).lower()
    (failed,) = of(events, "model.failed")
    assert failed["failure"] == "context_overflow" and failed["attempts"] == 2  # shrunk once, then stopped
    assert proxy.requests(ADAPTERS[adapter][2]) - before == 2


def test_an_outage_is_retried_with_a_bounded_number_of_upstream_requests(
    proxy: Proxy, adapter: str, envelope: Path
) -> None:
    before = proxy.requests(ADAPTERS[adapter][2])
    proc, events = run(proxy, adapter, "down", envelope)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    (failed,) = of(events, "model.failed")
    assert failed["failure"] == "outage" and failed["attempts"] == 3
    assert proxy.requests(ADAPTERS[adapter][2]) - before == 3  # retry.max_attempts, nothing hidden on top
    assert "failed after 3 attempts" in proc.stdout
