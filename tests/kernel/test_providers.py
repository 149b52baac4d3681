"""End-to-end runs with the real SDK adapters: ``tether run --model openai:…|anthropic:… --base-url``.

The CLI runs in a process of its own against a server on 127.0.0.1 that speaks the provider's wire format
(:mod:`tether.models.testing`), so the whole path is real: envelope, kernel, SDK client, HTTP, gate,
sandbox, sensors and the SQLite log. The process's environment is scrubbed: no proxy, no real key and
no provider base URL from the developer's shell can reach it. The first test starts the console script anew
for each provider; the others fork the command from a process that imported it and the SDKs
once (``tests/clikit.py``: the Anthropic SDK alone took ~1.6-2 s of each run's start).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import clikit
import pytest
from runkit import FINISH, FIX, recompile

from tether import EventStore, RunState
from tether.events.store import Event
from tether.kernel.outcome import OutputContract
from tether.models.pricing import price_for
from tether.models.testing import (
    PROXY_ENV_VARS,
    AnthropicWireServer,
    LlamaCppServer,
    OpenAIWireServer,
    Reply,
    WireServer,
    anthropic_error,
    anthropic_message,
    load_exchanges,
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
    recompile(env)
    return env


@pytest.fixture
def server(provider: Provider) -> Iterator[WireServer]:
    with provider.server() as s:
        yield s


def scrubbed_env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in PROXY_ENV_VARS and k not in PROVIDER_ENV_VARS}
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    return {**env, **extra}


@dataclass
class Outcome:
    proc: subprocess.CompletedProcess[str]
    contract: dict[str, Any]
    events: list[Event]

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e.payload for e in self.events if e.kind == kind]


def run(
    provider: Provider, server: WireServer, envelope: Path, *, as_json: bool = True, forked: bool = True
) -> Outcome:
    """The CLI run; without ``as_json`` stdout is the human timeline and the contract is read from the log.
    ``forked``: a child of ``clikit``'s forkserver; else the console script started anew."""
    db = envelope.parent / "t.db"
    args = ["run", "fix the median", "--envelope", str(envelope), "--model", provider.model]
    args += ["--base-url", server.base_url, "--db", str(db), "--sandbox", "local", "--headless"]
    args += ["--json"] if as_json else []
    proc = (clikit.run if forked else clikit.started)(args, scrubbed_env(provider.env), timeout=120)
    with EventStore.open(db) as store:
        (run_id,) = [r.run_id for r in store.runs()]
        events = store.events(run_id)
    contract = OutputContract.from_state(RunState.from_events(events)).model_dump()
    if as_json:
        lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
        assert lines and json.loads(lines[-1])["status"] == contract["status"], proc.stdout + proc.stderr
    return Outcome(proc, contract, events)


def test_scripted_tool_calls_fix_the_bug_and_complete(provider: Provider, server: WireServer, envelope: Path) -> None:
    server.push(provider.tool_call("call_fix", FIX), provider.tool_call("call_finish", FINISH))
    out = run(provider, server, envelope, forked=False)
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


def cut_off_calls(provider: Provider) -> Reply:
    """A reply stopped at the output limit holding two calls: one whole (the fix), one cut off mid-arguments."""
    if provider is ANTHROPIC:  # the Messages API sends input as an object: a cut-off one arrives as whatever parsed
        uses = [("call_a", FIX["name"], FIX["args"]), ("call_b", "write_file", {"path": "src/stats/core.py"})]
        return anthropic_message(tool_uses=uses, stop_reason="max_tokens")
    calls = [("call_a", FIX["name"], FIX["args"]), ("call_b", "write_file", '{"path": "src/stats/core.py", "cont')]
    return openai_chat(tool_calls=calls, finish_reason="length")


def test_calls_in_a_cut_off_reply_are_never_run_and_the_model_is_told(
    provider: Provider, server: WireServer, envelope: Path
) -> None:
    server.push(cut_off_calls(provider), provider.tool_call("call_fix", FIX), provider.tool_call("call_finish", FINISH))
    out = run(provider, server, envelope)
    assert out.contract["status"] == "COMPLETE", out.proc.stdout + out.proc.stderr
    (truncated,) = out.of("model.truncated")
    assert (
        truncated["not_run"] == ["call_a", "call_b"]
        and truncated["max_tokens"] == server.requests[0].body["max_tokens"]
    )
    assert [p["call_id"] for p in out.of("action.started")] == ["call_fix", "call_finish"]  # neither cut-off call ran
    assert not [p for p in out.of("action.decided") if p["call_id"] in ("call_a", "call_b")]  # never even decided
    fixed = (envelope.parent / "project" / "src" / "stats" / "core.py").read_text()
    assert fixed.count("(ordered[middle - 1] + ordered[middle]) / 2") == 1  # the fix applied once, by call_fix
    told = json.dumps(server.requests[1].body["messages"])
    assert CUT_OFF in told and "not run" in told and "Continue, more briefly" in told


def with_budget(envelope: Path, usd: float) -> Path:
    envelope.write_text(envelope.read_text().replace("usd: 2.0", f"usd: {usd}"))
    recompile(envelope)
    return envelope


def sent_max_tokens(request: Any) -> int:
    body = request.body
    return int(body.get("max_tokens") or body["max_completion_tokens"])


def test_a_budget_too_small_for_any_call_stops_before_calling(
    provider: Provider, server: WireServer, envelope: Path
) -> None:
    """$0.001 cannot pay for the prompt alone at this model's price: nothing is sent, BUDGET_STOP."""
    out = run(provider, server, with_budget(envelope, 0.001))
    assert out.contract["status"] == "BUDGET_STOP", out.proc.stdout + out.proc.stderr
    assert server.requests == [] and not out.of("model.requested")
    (short,) = out.of("model.unaffordable")
    assert short["budget"] == "usd" and short["limit"] == 0.001 and "cannot pay" in short["reason"]
    assert [(b["budget"], b["limit"]) for b in out.of("budget.exceeded")] == [("usd", 0.001)]
    assert "budgets.usd" in out.contract["result"] and "raise budgets.usd" in out.contract["next_action"]


def test_each_call_is_capped_so_its_worst_case_fits_the_money_left(
    provider: Provider, server: WireServer, envelope: Path
) -> None:
    """A budget that pays for the prompt and some output: max_tokens is lowered to what the rest can pay."""
    server.push(provider.tool_call("call_fix", FIX), provider.tool_call("call_finish", FINISH))
    out = run(provider, server, with_budget(envelope, 0.05))
    assert out.contract["status"] == "COMPLETE", out.proc.stdout + out.proc.stderr
    price = price_for(provider.model)
    assert price is not None
    requested = out.of("model.requested")
    responded = out.of("model.responded")
    spent = 0.0
    for req, wire, resp in zip(requested, server.requests, responded, strict=True):
        assert sent_max_tokens(wire) == req["max_tokens"]  # what the log says was asked is what was sent
        left = 0.05 - spent
        assert req["capped_by"] == "usd"
        expected = int((left - req["prompt_tokens_est"] * price.input_per_mtok / 1e6) // (price.output_per_mtok / 1e6))
        assert abs(req["max_tokens"] - expected) <= 1  # rounding only
        assert req["worst_case_usd"] <= left + 1e-9
        spent += resp["cost_usd"]


# ---- real servers' quirks, end to end ------------------------------------------------------

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "providers" / "llama-cpp-python-0.3.36"
LEGACY = load_exchanges(FIXTURES / "tool-calls-plus-legacy-function-call.jsonl")
NULL_500 = load_exchanges(FIXTURES / "forced-tool-choice_content-null-500.jsonl")
OVERFLOW = load_exchanges(FIXTURES / "chatml-function-calling_context-exceeded.jsonl")


def configure(envelope: Path, *settings: str) -> Path:
    """Set ``agent`` settings (``"key: value"`` lines), then recompile."""
    text = envelope.read_text()
    line = next(x for x in text.splitlines() if x.strip().startswith("request_timeout_s:"))
    envelope.write_text(text.replace(line, "\n".join(f"  {s}" for s in settings)))
    recompile(envelope)
    return envelope


def llama_style(call_id: str, call: dict[str, Any], *, usage: Any = "recorded") -> Reply:
    """A call shaped exactly as llama-cpp-python sends it: in ``tool_calls`` *and* ``function_call``, content null."""
    body = json.loads(json.dumps(LEGACY[0].response))
    function = {"name": call["name"], "arguments": json.dumps(call["args"])}
    message = body["choices"][0]["message"]
    message["tool_calls"] = [{"id": call_id, "type": "function", "function": function}]
    message["function_call"] = function
    if usage != "recorded":
        body["usage"] = usage
    return Reply(200, body)


def run_llama(server: WireServer, envelope: Path, *, as_json: bool = True) -> Outcome:
    return run(OPENAI_LOCAL, server, envelope, as_json=as_json)


OPENAI_LOCAL = Provider(
    name="llama",
    model="openai:smollm2",
    server=OpenAIWireServer,
    env={},
    tool_call=OPENAI.tool_call,
    text=OPENAI.text,
    refusal=OPENAI.refusal,
    truncated=OPENAI.truncated,
    error=OPENAI.error,
)


def llama_server(*replies: Reply, n_ctx: int = 8192) -> LlamaCppServer:
    return LlamaCppServer(replies, null_content_error=NULL_500[1].response, n_ctx=n_ctx)


def test_a_call_in_tool_calls_and_function_call_runs_once(envelope: Path) -> None:
    configure(envelope, "provider_profile: llama.cpp")
    with llama_server(llama_style("call_fix", FIX), llama_style("call_finish", FINISH)) as server:
        out = run_llama(server, envelope)
    assert out.contract["status"] == "COMPLETE", out.proc.stdout + out.proc.stderr
    assert [p["tool"] for p in out.of("action.started")] == ["edit_file", "finish"]  # not twice each
    assert [p["call_id"] for p in out.of("action.proposed")] == ["call_fix", "call_finish"]
    fixed = (envelope.parent / "project" / "src" / "stats" / "core.py").read_text()
    assert fixed.count("(ordered[middle - 1] + ordered[middle]) / 2") == 1
    second = server.requests[1].body["messages"]
    assert all(isinstance(m.get("content"), str) for m in second)  # the real server 500s on a null
    assert not server.crashed and "maxLength" not in json.dumps(server.requests[0].body["tools"])


def test_every_recorded_response_replayed_through_a_run_gives_one_execution_per_call(envelope: Path) -> None:
    configure(envelope, "provider_profile: llama.cpp")
    recorded = [e.reply for e in LEGACY if e.status == 200]
    with llama_server(*recorded) as server:
        out = run_llama(server, envelope)
    # The fifth recorded call is a bare `bash`, which the gate sends to a human: a defined, durable stop.
    assert out.contract["status"] == "WAITING_APPROVAL", out.proc.stdout + out.proc.stderr
    assert out.proc.returncode == 5
    proposed = out.of("action.proposed")
    assert len(proposed) == len(recorded) == 5  # one per response, not two
    assert len({p["call_id"] for p in proposed}) == 5
    started = [p["call_id"] for p in out.of("action.started")]
    assert len(started) == len(set(started))  # no call executed twice
    assert [p["tool"] for p in out.of("action.started")].count("run_tests") == 1
    assert server.pending == 0 and not server.crashed


def test_a_full_window_is_a_context_problem_not_an_outage(envelope: Path) -> None:
    """The recorded run: short answers, then one that fills the 4096-token window; the next turn cannot fit."""
    configure(envelope, "provider_profile: llama.cpp")
    texts = [OVERFLOW[3].reply, OVERFLOW[7].reply, OVERFLOW[4].reply]
    with llama_server(*texts, n_ctx=4096) as server:
        out = run_llama(server, envelope, as_json=False)
    assert out.proc.returncode == 5, out.proc.stdout + out.proc.stderr
    assert out.contract["status"] == "NEEDS_INPUT"
    assert "context window full" in out.contract["result"]
    advice = out.contract["next_action"]
    assert "agent.context_window" in advice and "--ctx-size" in advice and "agent.max_output_tokens" in advice
    assert "key" not in (out.contract["result"] + advice).lower()
    failed = out.of("model.failed")
    assert [f["failure"] for f in failed] in ([], ["context_overflow"])  # told by the server, or seen before calling
    assert not any(f["transient"] for f in failed)
    statuses = [r.body.get("max_tokens") for r in server.requests]
    assert all(isinstance(n, int) and n < 4096 for n in statuses)  # never again the whole window for output


def test_an_overflow_with_room_is_retried_once_with_less_output_and_then_remembered(envelope: Path) -> None:
    configure(envelope, "provider_profile: llama.cpp", "max_output_tokens: 4000")
    with llama_server(llama_style("call_fix", FIX), llama_style("call_finish", FINISH), n_ctx=4096) as server:
        out = run_llama(server, envelope, as_json=False)
    assert out.contract["status"] == "COMPLETE", out.proc.stdout + out.proc.stderr
    (retried,) = out.of("model.retried")
    assert retried["failure"] == "context_overflow" and retried["window"] == 4096
    sent = [r.body["max_tokens"] for r in server.requests]
    assert sent[0] == 4000 and sent[1] == retried["max_tokens"] < 4000
    assert len(sent) == 3  # the second turn used the window it learned: no second overflow
    assert "context overflow" in out.proc.stdout and "retrying once with max_tokens" in out.proc.stdout


def test_null_usage_is_recorded_as_estimated_and_counted(envelope: Path) -> None:
    with llama_server(llama_style("call_fix", FIX, usage=None), llama_style("call_finish", FINISH, usage=None)) as s:
        out = run_llama(s, envelope, as_json=False)
    assert out.contract["status"] == "COMPLETE", out.proc.stdout + out.proc.stderr
    responded = out.of("model.responded")
    assert [r["usage_reported"] for r in responded] == [False, False]
    assert all(r["input_tokens"] > 100 and r["output_tokens"] > 0 for r in responded)
    assert "estimated: the provider gave no usage" in out.proc.stdout


def test_a_nameless_or_cut_off_call_is_told_to_the_model_plainly(envelope: Path) -> None:
    nameless = llama_style("call_a", {"name": "", "args": {}})
    cut = llama_style("call_b", FIX)
    cut.body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = '{"path": "src/stats/co'
    with llama_server(nameless, cut, llama_style("call_fix", FIX), llama_style("call_finish", FINISH)) as server:
        out = run_llama(server, envelope)
    assert out.contract["status"] == "COMPLETE", out.proc.stdout + out.proc.stderr
    errors = {p["call_id"]: p["error"] for p in out.of("action.invalid")}
    assert "no function name" in errors["call_a"] and "cut off at the token limit" in errors["call_b"]
    told = json.dumps(server.requests[1].body["messages"][-1]) + json.dumps(server.requests[2].body["messages"][-1])
    assert "no function name" in told and "cut off at the token limit" in told and "__raw__" not in told
    assert [p["tool"] for p in out.of("action.started")] == ["edit_file", "finish"]


@pytest.mark.parametrize("body", [{"choices": "x"}, {"choices": [{"message": {"content": 5}}]}, [1]], ids=str)
def test_a_malformed_answer_is_a_recorded_failure_never_a_run_left_running(envelope: Path, body: Any) -> None:
    with llama_server(Reply(200, body)) as server:
        out = run_llama(server, envelope)
    assert out.proc.returncode == 4, out.proc.stdout + out.proc.stderr
    assert out.contract["status"] == "BLOCKED_DEPENDENCY" and "could not be read" in out.contract["result"]
    (failed,) = out.of("model.failed")
    assert failed["failure"] == "malformed" and failed["attempts"] == 1
    assert out.events[-1].kind == "run.finished" and "invalid payload" not in out.proc.stderr


def test_failed_attempts_are_counted_once_and_shown_right(
    provider: Provider, server: WireServer, envelope: Path
) -> None:
    server.push(*(provider.error(503) for _ in range(3)))
    out = run(provider, server, envelope, as_json=False)
    assert out.proc.returncode == 4, out.proc.stdout + out.proc.stderr
    (failed,) = out.of("model.failed")
    assert failed["attempts"] == 3 and len(out.of("model.retried")) == 2
    assert "failed after 3 attempts" in out.proc.stdout and "attempt(s)" not in out.proc.stdout
    assert "after 3 attempts" in out.contract["result"]


def test_a_slow_server_is_abandoned_at_the_timeout_and_attempts_are_bounded(
    provider: Provider, server: WireServer, envelope: Path
) -> None:
    """``agent.request_timeout_s`` bounds each request; the client closes the connection; nothing retries inside."""
    configure(envelope, "request_timeout_s: 0.5")
    late = provider.text("too late")
    server.push(*(Reply(late.status, late.body, delay_s=5) for _ in range(4)))
    out = run(provider, server, envelope)
    assert out.contract["status"] == "BLOCKED_DEPENDENCY", out.proc.stdout + out.proc.stderr
    assert len(server.requests) == 3  # retry.max_attempts, and no SDK-internal retries on top
    (failed,) = out.of("model.failed")
    assert failed["attempts"] == 3 and "0.5 s (agent.request_timeout_s)" in failed["error"]
    deadline = time.monotonic() + 5
    while server.abandoned < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.abandoned == 3  # each abandoned request's connection was closed, not left to finish


def refused_with_a_call(provider: Provider, call: dict[str, Any]) -> Reply:
    """The call FIX in a reply the provider stopped as a refusal (OpenAI's content_filter, Anthropic's refusal)."""
    if provider is ANTHROPIC:
        return anthropic_message(tool_uses=[("call_fix", call["name"], call["args"])], stop_reason="refusal")
    return openai_chat(tool_calls=[("call_fix", call["name"], call["args"])], finish_reason="content_filter")


def test_a_call_in_a_refused_reply_never_runs(provider: Provider, server: WireServer, envelope: Path) -> None:
    """The provider filtered or stopped the reply (content_filter; Anthropic's refusal): the call it carries is not
    run, the run stops for a human as for any refusal, and the file is untouched."""
    server.push(refused_with_a_call(provider, FIX))
    before = (envelope.parent / "project" / "src" / "stats" / "core.py").read_text()
    out = run(provider, server, envelope)
    assert out.contract["status"] == "NEEDS_INPUT", out.proc.stdout + out.proc.stderr
    assert not out.of("action.started") and not out.of("action.decided")
    assert [p["call_id"] for p in out.of("action.invalid")] == ["call_fix"]
    assert (envelope.parent / "project" / "src" / "stats" / "core.py").read_text() == before
    assert len(server.requests) == 1


def test_retries_stop_when_the_runs_wall_time_is_spent(provider: Provider, server: WireServer, envelope: Path) -> None:
    """budgets.wall_s 2, six attempts allowed, each failing after 0.8 s: the call stops retrying once the run's
    time is spent, not after all six (4.8 s past a 2 s budget)."""
    text = envelope.read_text().replace("max_attempts: 3", "max_attempts: 6").replace("wall_s: 900", "wall_s: 2")
    envelope.write_text(text)
    recompile(envelope)
    assert "wall_s: 2" in envelope.read_text() and "max_attempts: 6" in envelope.read_text()
    late = provider.error(503)
    server.push(*(Reply(late.status, late.body, delay_s=0.8) for _ in range(6)))
    out = run(provider, server, envelope)
    assert out.contract["status"] in ("BLOCKED_DEPENDENCY", "BUDGET_STOP"), out.proc.stdout + out.proc.stderr
    (failed,) = out.of("model.failed")
    assert len(server.requests) <= 3 and failed["attempts"] == len(server.requests)
    assert "budgets.wall_s" in failed["error"]
    assert not out.of("model.responded") and not out.of("action.started")


LOOKALIKES = ["Edit_file", "EDIT_FILE", "edit_f\u0456le", "edit_file\u200b", "\uff45dit_file", " edit_file"]
"""edit_file by case, a Cyrillic i, a zero-width space, a fullwidth e, a leading space: none of them is it."""


def test_a_tool_name_that_only_looks_like_an_offered_one_never_runs(
    provider: Provider, server: WireServer, envelope: Path
) -> None:
    calls = [(f"call_{i}", name, FIX["args"]) for i, name in enumerate(LOOKALIKES)]
    many = anthropic_message(tool_uses=calls) if provider is ANTHROPIC else openai_chat(tool_calls=calls)
    server.push(many, provider.refusal("stopping"))
    before = (envelope.parent / "project" / "src" / "stats" / "core.py").read_text()
    out = run(provider, server, envelope)
    assert not out.of("action.started") and not out.of("action.decided"), out.proc.stdout + out.proc.stderr
    invalid = {p["tool"]: p["error"] for p in out.of("action.invalid")}
    assert sorted(invalid) == sorted(LOOKALIKES) and all("unknown tool" in e for e in invalid.values())
    assert (envelope.parent / "project" / "src" / "stats" / "core.py").read_text() == before
    assert out.contract["status"] == "NEEDS_INPUT"


def test_a_call_repeated_in_one_reply_under_its_id_runs_once(
    provider: Provider, server: WireServer, envelope: Path
) -> None:
    """A server (or a proxy joining a stream) that sends one call twice in a reply: the command appends once."""
    call = ("call_mark", "bash", {"command": "echo ran >> src/marker.txt"})
    twice = anthropic_message(tool_uses=[call, call]) if provider is ANTHROPIC else openai_chat(tool_calls=[call, call])
    server.push(twice, provider.refusal("stopping"))
    out = run(provider, server, envelope)
    marker = envelope.parent / "project" / "src" / "marker.txt"
    assert marker.read_text() == "ran\n", out.proc.stdout + out.proc.stderr
    assert [p["call_id"] for p in out.of("action.started")] == ["call_mark"]
    assert [c["id"] for c in out.of("model.responded")[0]["tool_calls"]] == ["call_mark"]


def stopped_as(
    provider: Provider, call_id: str, call: dict[str, Any], reason: str | None, *, drop: bool = False
) -> Reply:
    """``call`` in a reply whose finish reason (Anthropic: stop reason) is ``reason``: null, or absent with ``drop``."""
    reply = provider.tool_call(call_id, call)
    body = json.loads(json.dumps(reply.body))
    holder = body["choices"][0] if provider is OPENAI else body
    key = "finish_reason" if provider is OPENAI else "stop_reason"
    holder[key] = reason
    if drop:
        del holder[key]
    return Reply(body=body)


UNMEANT = {OPENAI.name: ["abort", "error", "MALFORMED_FUNCTION_CALL", "other"], ANTHROPIC.name: ["pause_turn", "x"]}
"""Finish reasons real servers send that do not say a reply's calls are meant: vLLM's ``abort`` (and ``error``), the
``error`` of OpenRouter and Mistral, Gemini's ``MALFORMED_FUNCTION_CALL``, Anthropic's ``pause_turn``, and words
nobody sends yet."""


@pytest.mark.parametrize(
    ("provider", "reason"),
    [(p, reason) for p in (OPENAI, ANTHROPIC) for reason in UNMEANT[p.name]],
    ids=[f"{p.name}-{reason}" for p in (OPENAI, ANTHROPIC) for reason in UNMEANT[p.name]],
    indirect=["provider"],
)
def test_a_call_under_a_finish_reason_tether_does_not_know_never_runs(
    provider: Provider, server: WireServer, envelope: Path, reason: str
) -> None:
    server.push(stopped_as(provider, "call_fix", FIX, reason))
    before = (envelope.parent / "project" / "src" / "stats" / "core.py").read_text()
    out = run(provider, server, envelope)
    assert out.contract["status"] == "NEEDS_INPUT", out.proc.stdout + out.proc.stderr
    assert not out.of("action.started") and not out.of("action.decided")
    (invalid,) = out.of("action.invalid")
    assert invalid["call_id"] == "call_fix" and repr(reason) in invalid["error"]
    assert repr(reason) in out.contract["next_action"] + out.contract["result"]
    assert (envelope.parent / "project" / "src" / "stats" / "core.py").read_text() == before
    assert len(server.requests) == 1


@pytest.mark.parametrize("drop", [False, True], ids=["null", "absent"])
def test_calls_with_no_finish_reason_run(provider: Provider, server: WireServer, envelope: Path, drop: bool) -> None:
    """Local servers that send no finish reason (null or no field at all) keep working: their calls are meant."""
    server.push(stopped_as(provider, "call_fix", FIX, None, drop=drop), provider.tool_call("call_finish", FINISH))
    out = run(provider, server, envelope)
    assert out.contract["status"] == "COMPLETE", out.proc.stdout + out.proc.stderr
    assert [p["call_id"] for p in out.of("action.started")][:1] == ["call_fix"]
    assert not out.of("action.invalid")


def test_a_reply_a_server_replays_in_a_later_turn_does_not_run_its_call_again(
    provider: Provider, server: WireServer, envelope: Path
) -> None:
    """The same call id, tool and arguments as a call an earlier reply carried: a server or proxy replaying that
    reply. The command appends once; the repeat is recorded, not run, and told to the model."""
    mark = {"name": "bash", "args": {"command": "echo ran >> src/marker.txt"}}
    again = provider.tool_call("call_mark_7f3a", mark)
    server.push(again, again, provider.refusal("stopping"))
    out = run(provider, server, envelope)
    marker = envelope.parent / "project" / "src" / "marker.txt"
    assert marker.read_text() == "ran\n", out.proc.stdout + out.proc.stderr
    assert [p["call_id"] for p in out.of("action.started")] == ["call_mark_7f3a"]
    (invalid,) = out.of("action.invalid")
    assert invalid["call_id"] != "call_mark_7f3a" and "call_mark_7f3a" in invalid["error"]
    assert "call_mark_7f3a" in json.dumps(server.requests[2].body)  # the model was told


def no_id(provider: Provider, call: dict[str, Any]) -> Reply:
    """``call`` with no id at all, as servers that track none send it."""
    reply = provider.tool_call("x", call)
    body = json.loads(json.dumps(reply.body))
    if provider is OPENAI:
        del body["choices"][0]["message"]["tool_calls"][0]["id"]
    else:
        del next(b for b in body["content"] if b["type"] == "tool_use")["id"]
    return Reply(body=body)


def test_the_same_call_without_ids_in_two_turns_runs_twice(
    provider: Provider, server: WireServer, envelope: Path
) -> None:
    """A server that sends no ids: the same command in two turns is two calls the model made (run the tests again
    after an edit), not a replay; the ids the host gives them differ."""
    mark = {"name": "bash", "args": {"command": "echo ran >> src/marker.txt"}}
    server.push(no_id(provider, mark), no_id(provider, mark), provider.refusal("stopping"))
    out = run(provider, server, envelope)
    marker = envelope.parent / "project" / "src" / "marker.txt"
    assert marker.read_text() == "ran\nran\n", out.proc.stdout + out.proc.stderr
    started = [p["call_id"] for p in out.of("action.started")]
    assert len(set(started)) == 2 and not out.of("action.invalid")
