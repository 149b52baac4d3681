"""OpenTelemetry traces of runs: the spans made from a log (in-memory exporter), and once end to end through the
OTLP/HTTP exporter into a receiver this test runs on 127.0.0.1 (a real run, traced live, then exported again)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import threading
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from tether.errors import InputError
from tether.events import kinds as k
from tether.events import kinds_control as kc
from tether.events import kinds_kernel as kkr
from tether.events.payload import Payload
from tether.events.store import Event, EventStore
from tether.observe import otel
from tether.status import RunStatus

TS = "2026-01-01T00:00:{:02d}.{:06d}+00:00"


def _log(payloads: list[Payload]) -> list[Event]:
    return [Event.of("run-1", i, TS.format(i, 1000 * i), p, "", f"{i:064x}") for i, p in enumerate(payloads)]


def _call(call: str, tool: str) -> list[Payload]:
    return [
        k.ActionProposed(call_id=call, tool=tool, args={"path": "a.py"}, args_hash="h", turn=1),
        k.ActionDecided(call_id=call, verdict="ALLOW", deciding_rule="write:src", reason="in scope"),
        k.ActionStarted(call_id=call, tool=tool, args_hash="h"),
    ]


RUN: list[Payload] = [
    k.RunStarted(task="fix <script>alert(1)</script>", model="openai:gpt-4o", sandbox="bwrap"),
    kkr.ModelRequested(turn=1, model="openai:gpt-4o", max_tokens=512),
    k.ModelResponded(
        turn=1,
        model="openai:gpt-4o",
        termination="tool_request",
        tool_calls=[k.ToolCallData(id="c1", name="write_file")],
        input_tokens=900,
        output_tokens=60,
        cost_usd=0.01,
    ),
    *_call("c1", "write_file"),
    k.ActionCompleted(call_id="c1", tool="write_file", ok=True, changed_files=["a.py"], result={"exit_code": 0}),
    kc.SensorResultEvent(sensor="syntax", result="PASS", required=True, summary="ok"),
    kc.ControlChanged(previous="NORMAL", state="CAUTIOUS", tier="warning", reason="a test flipped"),
    k.ActionProposed(call_id="c2", tool="bash", args={"cmd": "rm -rf /"}, args_hash="h2", turn=1),
    k.ActionDecided(call_id="c2", verdict="DENY", deciding_rule="deny:rm", reason="destructive"),
    *_call("c3", "bash")[0:1],
    k.ActionDecided(call_id="c3", verdict="ASK", deciding_rule="ask:net", reason="network"),
    k.ApprovalRequested(
        approval_id="a1", call_id="c3", tool="bash", args_hash="h", preview="curl", reason="network", expires_at=0
    ),
    k.ApprovalGranted(approval_id="a1", by="ann"),
    k.RunResumed(reason="tether resume"),
    k.ActionStarted(call_id="c3", tool="bash", args_hash="h"),
    k.ActionFailed(call_id="c3", tool="bash", error="timed out after 30s", failure_class="timeout"),
    kkr.ModelRequested(turn=2, model="openai:gpt-4o"),
    k.ModelFailed(turn=2, model="openai:gpt-4o", error="503 from the provider", failure="outage"),
    k.RunFinished(status=RunStatus.BLOCKED_DEPENDENCY, last_error="the provider is down"),
]


@pytest.fixture
def memory() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


def _by_name(spans: tuple[ReadableSpan, ...]) -> dict[str, ReadableSpan]:
    return {s.name: s for s in spans}


def test_a_run_is_an_agent_span_with_chat_and_tool_spans(memory: tuple[TracerProvider, InMemorySpanExporter]) -> None:
    provider, exporter = memory
    events = _log(RUN)
    otel.trace_events(events, provider.get_tracer("t"))
    spans = exporter.get_finished_spans()
    names = sorted(s.name for s in spans)
    assert names == [
        "chat gpt-4o",
        "chat gpt-4o",
        "execute_tool bash",
        "execute_tool write_file",
        "invoke_agent tether",
    ]  # the denied call (c2) never ran: a decision, not a span
    by = _by_name(spans)
    run = by["invoke_agent tether"]
    assert run.parent is None and run.kind is SpanKind.INTERNAL
    assert {s.context.trace_id for s in spans} == {run.context.trace_id}
    assert all(s.parent is not None and s.parent.span_id == run.context.span_id for s in spans if s is not run)
    assert run.attributes is not None and dict(run.attributes) | {} == {
        "tether.run.id": "run-1",
        "tether.seq": 0,
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "tether",
        "gen_ai.conversation.id": "run-1",
        "tether.run.resumed": False,
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o",
        "tether.task": "fix <script>alert(1)</script>",
        "tether.sandbox": "bwrap",
        "tether.run.status": "BLOCKED_DEPENDENCY",
        "gen_ai.usage.input_tokens": 900,
        "gen_ai.usage.output_tokens": 60,
        "error.type": "BLOCKED_DEPENDENCY",
    }
    assert run.status.status_code is StatusCode.ERROR and run.status.description == "the provider is down"
    assert (run.start_time, run.end_time) == (otel.nanos(events[0].ts), otel.nanos(events[-1].ts))

    chat = next(s for s in spans if s.name == "chat gpt-4o" and s.attributes and s.attributes["tether.turn"] == 1)
    assert chat.kind is SpanKind.CLIENT and chat.attributes is not None
    assert {key: chat.attributes[key] for key in chat.attributes if key.startswith("gen_ai.")} == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.conversation.id": "run-1",
        "gen_ai.request.max_tokens": 512,
        "gen_ai.response.model": "gpt-4o",
        "gen_ai.response.finish_reasons": ("tool_request",),
        "gen_ai.usage.input_tokens": 900,
        "gen_ai.usage.output_tokens": 60,
    }
    assert (chat.attributes["tether.seq"], chat.attributes["tether.seq.end"]) == (1, 2)
    assert (chat.start_time, chat.end_time) == (otel.nanos(events[1].ts), otel.nanos(events[2].ts))
    failed = next(s for s in spans if s.name == "chat gpt-4o" and s is not chat)
    assert failed.status.status_code is StatusCode.ERROR and failed.attributes is not None
    assert failed.attributes["error.type"] == "outage"

    tool = by["execute_tool write_file"]
    assert tool.attributes is not None and tool.status.status_code is StatusCode.UNSET
    assert {key: tool.attributes[key] for key in tool.attributes if key.startswith("gen_ai.")} == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "write_file",
        "gen_ai.tool.call.id": "c1",
        "gen_ai.tool.type": "function",
    }
    assert tool.attributes["tether.exit_code"] == 0 and tool.attributes["tether.changed_files"] == 1
    bash = by["execute_tool bash"]
    assert bash.status.status_code is StatusCode.ERROR and bash.attributes is not None
    assert bash.attributes["error.type"] == "timeout"


def test_decisions_approvals_sensors_and_control_are_span_events_that_cite_the_log(
    memory: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = memory
    events = _log(RUN)
    otel.trace_events(events, provider.get_tracer("t"))
    run = _by_name(exporter.get_finished_spans())["invoke_agent tether"]
    got = [(ev.name, dict(ev.attributes or {})) for ev in run.events]
    assert [name for name, _ in got] == [
        "tether.gate.decision",
        "tether.sensor.result",
        "tether.control.changed",
        "tether.gate.decision",
        "tether.gate.decision",
        "tether.approval.requested",
        "tether.approval.granted",
        "tether.run.resumed",
        "tether.run.finished",
    ]
    for (_, attrs), ev in zip(got, run.events, strict=True):
        seq = attrs["tether.seq"]
        assert attrs["tether.run.id"] == "run-1" and isinstance(seq, int)
        assert attrs["tether.kind"] == events[seq].kind and ev.timestamp == otel.nanos(events[seq].ts)
    deny = got[3][1]
    assert (deny["tether.verdict"], deny["tether.rule"], deny["gen_ai.tool.call.id"]) == ("DENY", "deny:rm", "c2")
    assert got[1][1]["tether.result"] == "PASS" and got[2][1]["tether.control.state"] == "CAUTIOUS"
    assert got[6][1]["tether.by"] == "ann"


def test_a_waiting_run_and_a_resumed_drive_are_traced_as_far_as_the_log_goes(
    memory: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    """The live sink of a resumed drive sees the log from run.resumed on; a stored prefix ends where it ends."""
    provider, exporter = memory
    events = _log(RUN)
    waiting = next(i for i, e in enumerate(events) if e.kind == "approval.requested") + 1
    otel.trace_events(events[:waiting], provider.get_tracer("t"))
    first = exporter.get_finished_spans()
    assert sorted(s.name for s in first) == ["chat gpt-4o", "execute_tool write_file", "invoke_agent tether"]
    run = _by_name(first)["invoke_agent tether"]
    assert run.end_time == otel.nanos(events[waiting - 1].ts) and run.attributes is not None
    assert "tether.run.status" not in run.attributes and run.status.status_code is StatusCode.UNSET
    exporter.clear()
    otel.trace_events(events[waiting:], provider.get_tracer("t"))
    resumed = _by_name(exporter.get_finished_spans())["invoke_agent tether"]
    assert resumed.attributes is not None and resumed.attributes["tether.run.resumed"] is True
    assert resumed.attributes["tether.run.status"] == "BLOCKED_DEPENDENCY"


@pytest.mark.parametrize(
    ("env", "on"),
    [
        ({}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, True),
        ({"OTEL_TRACES_EXPORTER": "console"}, True),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, False),
        ({"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "  "}, False),
    ],
)
def test_tracing_is_off_unless_the_otel_variables_ask_for_it(env: dict[str, str], on: bool) -> None:
    assert otel.enabled(env) is on
    provider = otel.provider_from_env(env)
    assert (provider is not None) is on
    if provider is not None:
        provider.shutdown()


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"OTEL_TRACES_EXPORTER": "zipkin"}, "OTEL_TRACES_EXPORTER='zipkin'"),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "grpc"),
    ],
)
def test_an_exporter_tether_cannot_run_is_refused_naming_the_variable(env: dict[str, str], named: str) -> None:
    with pytest.raises(InputError, match=named):
        otel.provider_from_env(env)


# ---- end to end: the OTLP/HTTP exporter, a receiver on 127.0.0.1, the CLI ------------------------------------


class _Receiver(BaseHTTPRequestHandler):
    requests: list[ExportTraceServiceRequest]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        encoding = self.headers.get("Content-Encoding", "")
        if encoding == "gzip":
            body = gzip.decompress(body)
        elif encoding == "deflate":
            body = zlib.decompress(body)
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        self.server.requests.append(request)  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()
        self.wfile.write(b"")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[ExportTraceServiceRequest]]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    server.requests = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", server.requests  # type: ignore[attr-defined]
    server.shutdown()
    server.server_close()
    thread.join()


def _spans(requests: list[ExportTraceServiceRequest]) -> list[dict[str, Any]]:
    out = []
    for request in requests:
        for rs in request.resource_spans:
            service = {a.key: a.value.string_value for a in rs.resource.attributes}.get("service.name")
            for ss in rs.scope_spans:
                for span in ss.spans:
                    attrs = {a.key: _value(a.value) for a in span.attributes}
                    events = [(e.name, {a.key: _value(a.value) for a in e.attributes}) for e in span.events]
                    out.append({"name": span.name, "service": service, "attrs": attrs, "events": events})
    return sorted(out, key=lambda s: (s["attrs"]["tether.seq"], s["name"]))


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    return getattr(v, kind)


def _tether(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tether.cli.main", *args], capture_output=True, text=True, env=env, timeout=300
    )


def test_a_run_traced_live_through_otlp_http_is_the_trace_its_log_exports_afterwards(
    example: Path, receiver: tuple[str, list[ExportTraceServiceRequest]]
) -> None:
    """The bugfix example waits for an approval: two drives, each traced live; then the whole log exported."""
    url, requests = receiver
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env |= {"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_SERVICE_NAME": "tether-test"}
    db = example / "t.db"
    first = _tether(
        "run", "fix it", "--envelope", str(example / "envelope.yaml"), "--db", str(db), "--sandbox", "local", "--json",
        env=env,
    )  # fmt: skip
    contract = json.loads(first.stdout.splitlines()[-1])
    assert contract["status"] == "WAITING_APPROVAL", first.stderr
    run_id = contract["run_id"]
    (pending,) = json.loads(_tether("approvals", "--db", str(db), "--json", env=env).stdout)
    assert _tether("approve", pending["approval_id"], "--db", str(db), env=env).returncode == 0
    second = _tether("resume", run_id, "--db", str(db), "--headless", "--json", env=env)
    assert json.loads(second.stdout.splitlines()[-1])["status"] == "COMPLETE", second.stderr
    live = _spans(requests)
    roots = [s for s in live if s["name"] == "invoke_agent tether"]
    assert [r["attrs"]["tether.run.resumed"] for r in roots] == [False, True]
    assert "tether.run.status" not in roots[0]["attrs"] and roots[1]["attrs"]["tether.run.status"] == "COMPLETE"
    names = {s["name"] for s in live}
    assert any(n.startswith("chat ") for n in names) and any(n.startswith("execute_tool ") for n in names)
    assert all(s["service"] == "tether-test" and s["attrs"]["tether.run.id"] == run_id for s in live)
    events = [name for r in roots for name, _ in r["events"]]
    assert {"tether.gate.decision", "tether.sensor.result", "tether.approval.requested"} <= set(events)

    requests.clear()
    exported = _tether("trace", run_id, "--db", str(db), "--json", env=env)
    assert exported.returncode == 0, exported.stderr
    after = _spans(requests)
    assert json.loads(exported.stdout)["spans"] == len(after) == len(live) - 1
    # every model and tool span is the same, attribute for attribute, live or from the stored log
    assert [s for s in after if s["name"] != "invoke_agent tether"] == [s for s in live if s not in roots]
    (root,) = [s for s in after if s["name"] == "invoke_agent tether"]
    granted = [e for e in root["events"] if e[0] == "tether.approval.granted"]
    assert len(granted) == 1  # answered outside any drive: only the stored log's trace has it
    assert [e for e in root["events"] if e not in granted] == [e for r in roots for e in r["events"]]

    off = {k: v for k, v in env.items() if not k.startswith("OTEL_")}
    refused = _tether("trace", run_id, "--db", str(db), env=off)
    assert refused.returncode != 0 and "OTEL_EXPORTER_OTLP_ENDPOINT" in refused.stderr


def test_an_unreachable_collector_does_not_stop_a_run(example: Path) -> None:
    """Telemetry is never execution authority: a collector that is down costs a warning, not the run."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env |= {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "OTEL_EXPORTER_OTLP_TIMEOUT": "1"}
    db = example / "t.db"
    run = _tether(
        "run", "fix it", "--envelope", str(example / "envelope.yaml"), "--db", str(db), "--sandbox", "local", "--json",
        env=env,
    )  # fmt: skip
    assert json.loads(run.stdout.splitlines()[-1])["status"] == "WAITING_APPROVAL", run.stderr
    with EventStore.open(db, readonly=True) as store:
        assert store.verify(store.runs()[0].run_id) > 0


def test_a_fork_is_a_run_span_of_its_own_naming_its_parent(memory: tuple[TracerProvider, InMemorySpanExporter]) -> None:
    provider, exporter = memory
    forked = k.RunForked(parent_run="run-0", at_seq=7, parent_hash="f" * 64, workspace="/w", model="anthropic:claude")
    events = _log([forked, *RUN[1:3]])
    otel.trace_events(events, provider.get_tracer("t"))
    by = _by_name(exporter.get_finished_spans())
    root = by["invoke_agent tether"]
    assert root.attributes is not None and root.attributes["tether.fork.parent_run"] == "run-0"
    assert (root.attributes["tether.fork.at_seq"], root.attributes["gen_ai.provider.name"]) == (7, "anthropic")
    assert by["chat gpt-4o"].parent is not None and by["chat gpt-4o"].parent.span_id == root.context.span_id
