"""OpenTelemetry traces of a run, made from its log: live while it runs, or afterwards from the stored events.

One :class:`RunTracer` turns a run's events, in log order, into spans that follow the OpenTelemetry GenAI
semantic conventions: the run is an ``invoke_agent`` span, each model call a ``chat`` span (from
``model.requested`` to ``model.responded`` or ``model.failed``), each tool execution an ``execute_tool`` span
(from ``action.started`` to ``action.completed`` or ``action.failed``). Gate decisions, approvals, sensor
results, control-state changes and the run's waits, resumes and budget stops are span events on the run span.
Every span and span event carries ``tether.run.id`` and the ``tether.seq`` of the event it comes from, so a
trace leads back to the log. Times are the events' own timestamps, so a trace made afterwards is the same as
the one made live.

Off by default. The ``otel`` extra (``pip install 'tether[otel]'``) brings the SDK and the OTLP/HTTP exporter;
:func:`provider_from_env` switches tracing on when ``OTEL_TRACES_EXPORTER`` (``otlp`` or ``console``) or an
``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is set, and the exporter reads the
other standard ``OTEL_*`` variables itself (headers, timeout, service name, resource attributes). The kernel
knows nothing of this: the CLI passes :meth:`RunTracer.feed` as the runtime's event sink.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from tether.errors import InputError
from tether.events.kinds import (
    ActionCompleted,
    ActionDecided,
    ActionFailed,
    ActionStarted,
    ApprovalDenied,
    ApprovalExpired,
    ApprovalGranted,
    ApprovalMismatch,
    ApprovalRequested,
    BudgetExceeded,
    ModelFailed,
    ModelResponded,
    RunFinished,
    RunForked,
    RunResumed,
    RunStarted,
    RunWaiting,
)
from tether.events.kinds_control import ControlChanged, SensorResultEvent
from tether.events.kinds_kernel import (
    ModelRequested,
)
from tether.events.payload import Payload
from tether.events.store import Event
from tether.status import SUCCESS

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Span, Tracer

AGENT_NAME = "tether"
Attributes = dict[str, str | bool | int | float | list[str]]

#: The environment variables that switch tracing on (any one of them set and not empty).
SWITCHES = ("OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


def enabled(env: Mapping[str, str] = os.environ) -> bool:
    """Whether the environment asks for traces (and the SDK is not switched off by ``OTEL_SDK_DISABLED``)."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporter = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter == "none":
        return False
    return any(env.get(name, "").strip() for name in SWITCHES)


def provider_from_env(env: Mapping[str, str] = os.environ) -> TracerProvider | None:
    """A tracer provider exporting as the ``OTEL_*`` variables say, or None when they do not ask for traces.

    Raises :class:`InputError` naming the variable when they ask for something tether cannot do (the SDK is
    not installed, an exporter other than ``otlp``/``console``, OTLP over gRPC).
    """
    if not enabled(env):
        return None
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
    except ImportError as e:
        switch = next(name for name in SWITCHES if env.get(name, "").strip())
        raise InputError(
            f"{switch} is set, but the OpenTelemetry SDK is not installed ({e.name}): "
            "pip install 'tether[otel]', or unset it"
        ) from None
    exporters: list[SpanExporter] = []
    for name in [n.strip().lower() for n in env.get("OTEL_TRACES_EXPORTER", "otlp").split(",") if n.strip()]:
        if name == "console":
            exporters.append(ConsoleSpanExporter())
        elif name == "otlp":
            exporters.append(_otlp_http(env))
        else:
            raise InputError(f"OTEL_TRACES_EXPORTER={name!r}: tether exports traces with 'otlp' or 'console'")
    resource = Resource.create({"service.name": env.get("OTEL_SERVICE_NAME") or AGENT_NAME})
    provider = TracerProvider(resource=resource)
    for exporter in exporters:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def _otlp_http(env: Mapping[str, str]) -> Any:
    protocol = env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL") or ""
    if protocol.strip() not in ("", "http/protobuf"):
        raise InputError(
            f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol!r}: tether ships the OTLP/HTTP exporter; use 'http/protobuf'"
        )
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()  # endpoint, headers, timeout, compression: from OTEL_EXPORTER_OTLP_* itself


def provider_name(model: str) -> str:
    """``gen_ai.provider.name`` for a tether model spec (``openai:gpt-4o`` -> ``openai``)."""
    prefix, sep, _ = model.partition(":")
    return prefix if sep and prefix else "tether"


def model_name(model: str) -> str:
    """``gen_ai.request.model``: the model spec without its provider prefix."""
    prefix, sep, rest = model.partition(":")
    return rest if sep and prefix and rest else model


def nanos(ts: str) -> int:
    """An event's ISO timestamp as nanoseconds since the epoch (microsecond precision, exactly)."""
    dt = datetime.fromisoformat(ts)
    return int(dt.timestamp()) * 1_000_000_000 + dt.microsecond * 1000


@dataclass
class RunTracer:
    """Spans for one run, from its events in log order (:meth:`feed`); :meth:`close` ends what is still open.

    Fed the whole log of a finished run it makes the whole trace; fed a driver's events as they are appended
    (the runtime's event sink) it makes the spans of that drive. A drive that begins with ``run.resumed`` opens
    a run span of its own, marked ``tether.run.resumed``.
    """

    tracer: Tracer
    run: Span | None = None
    run_id: str = ""
    model: str = ""
    last_ns: int = 0
    usage: dict[str, int] = field(default_factory=lambda: {"input": 0, "output": 0})
    calls: dict[int, Span] = field(default_factory=dict)  # turn -> its open chat span
    tools: dict[str, Span] = field(default_factory=dict)  # call id -> its open execute_tool span
    spans: int = 0  # spans started

    def feed(self, e: Event) -> None:
        self.last_ns = nanos(e.ts)
        handler = _HANDLERS.get(e.kind)
        if handler is not None:
            handler(self, e, e.data)

    def feed_all(self, events: Iterable[Event]) -> None:
        for e in events:
            self.feed(e)

    def close(self) -> None:
        """End every span still open at the last event's time (a run that waits, or a drive that stopped)."""
        for span in [*self.tools.values(), *self.calls.values()]:
            span.end(end_time=self.last_ns)
        self.tools.clear()
        self.calls.clear()
        if self.run is not None:
            self.run.end(end_time=self.last_ns)
            self.run = None

    # ---- spans -------------------------------------------------------------------------------

    def _base(self, e: Event) -> Attributes:
        return {"tether.run.id": e.run_id, "tether.seq": e.seq}

    def _open_run(self, e: Event, model: str, resumed: bool) -> None:
        from opentelemetry.trace import SpanKind

        self.close()
        self.run_id, self.model = e.run_id, model or self.model
        attrs: Attributes = {
            **self._base(e),
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": AGENT_NAME,
            "gen_ai.conversation.id": e.run_id,
            "tether.run.resumed": resumed,
        }
        if self.model:
            attrs["gen_ai.provider.name"] = provider_name(self.model)
            attrs["gen_ai.request.model"] = model_name(self.model)
        self.spans += 1
        self.run = self.tracer.start_span(
            f"invoke_agent {AGENT_NAME}", kind=SpanKind.INTERNAL, attributes=attrs, start_time=nanos(e.ts)
        )

    def _ensure_run(self, e: Event) -> Span:
        if self.run is None:  # a drive whose first event is not a run's start: resumed, or fed mid-log
            self._open_run(e, self.model, resumed=True)
        assert self.run is not None
        return self.run

    def _child(self, e: Event, name: str, kind_name: str, attrs: Attributes) -> Span:
        from opentelemetry.trace import SpanKind, set_span_in_context

        parent = set_span_in_context(self._ensure_run(e))
        kind = SpanKind.CLIENT if kind_name == "client" else SpanKind.INTERNAL
        self.spans += 1
        return self.tracer.start_span(
            name, context=parent, kind=kind, attributes={**self._base(e), **attrs}, start_time=nanos(e.ts)
        )

    def _event(self, e: Event, name: str, attrs: Attributes, span: Span | None = None) -> None:
        target = span or self._ensure_run(e)
        target.add_event(name, {**self._base(e), "tether.kind": e.kind, **attrs}, timestamp=nanos(e.ts))

    # ---- one handler per kind ----------------------------------------------------------------

    def _run_started(self, e: Event, p: RunStarted) -> None:
        self._open_run(e, p.model, resumed=False)
        assert self.run is not None
        self.run.set_attribute("tether.task", p.task)
        if p.sandbox:
            self.run.set_attribute("tether.sandbox", p.sandbox)

    def _run_forked(self, e: Event, p: RunForked) -> None:
        """A fork's own first event: its run span begins here (the shared prefix is the parent's trace)."""
        self._open_run(e, p.model or self.model, resumed=False)
        assert self.run is not None
        self.run.set_attributes({"tether.fork.parent_run": p.parent_run, "tether.fork.at_seq": p.at_seq})

    def _run_resumed(self, e: Event, p: RunResumed) -> None:
        if self.run is None:
            self._open_run(e, self.model, resumed=True)
        self._event(e, "tether.run.resumed", {"tether.reason": p.reason})

    def _run_waiting(self, e: Event, p: RunWaiting) -> None:
        self._event(e, "tether.run.waiting", {"tether.status": str(p.status), "tether.reason": p.reason})

    def _run_finished(self, e: Event, p: RunFinished) -> None:
        from opentelemetry.trace import Status, StatusCode

        run = self._ensure_run(e)
        run.set_attribute("tether.run.status", str(p.status))
        run.set_attribute("gen_ai.usage.input_tokens", self.usage["input"])
        run.set_attribute("gen_ai.usage.output_tokens", self.usage["output"])
        self._event(e, "tether.run.finished", {"tether.status": str(p.status), "tether.result": p.result})
        if p.status not in SUCCESS:
            run.set_attribute("error.type", str(p.status))
            run.set_status(Status(StatusCode.ERROR, p.last_error or p.next_action or str(p.status)))
        self.close()

    def _model_requested(self, e: Event, p: ModelRequested) -> None:
        model = p.model or self.model
        attrs: Attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider_name(model),
            "gen_ai.request.model": model_name(model),
            "gen_ai.conversation.id": e.run_id,
            "tether.turn": p.turn,
        }
        if p.max_tokens is not None:
            attrs["gen_ai.request.max_tokens"] = p.max_tokens
        self.calls[p.turn] = self._child(e, f"chat {model_name(model)}", "client", attrs)

    def _model_responded(self, e: Event, p: ModelResponded) -> None:
        self.usage["input"] += p.input_tokens
        self.usage["output"] += p.output_tokens
        span = self.calls.pop(p.turn, None) or self._child(e, f"chat {model_name(p.model)}", "client", {})
        span.set_attributes(
            {
                "gen_ai.response.model": model_name(p.model),
                "gen_ai.response.finish_reasons": [p.termination],
                "gen_ai.usage.input_tokens": p.input_tokens,
                "gen_ai.usage.output_tokens": p.output_tokens,
                "tether.cost_usd": p.cost_usd,
                "tether.tool_calls": len(p.tool_calls),
                "tether.seq.end": e.seq,
            }
        )
        span.end(end_time=nanos(e.ts))

    def _model_failed(self, e: Event, p: ModelFailed) -> None:
        from opentelemetry.trace import Status, StatusCode

        span = self.calls.pop(p.turn, None) or self._child(e, f"chat {model_name(p.model)}", "client", {})
        span.set_attributes({"error.type": p.failure, "tether.seq.end": e.seq, "tether.attempts": p.attempts})
        span.set_status(Status(StatusCode.ERROR, p.error))
        span.end(end_time=nanos(e.ts))

    def _action_decided(self, e: Event, p: ActionDecided) -> None:
        self._event(
            e,
            "tether.gate.decision",
            {
                "gen_ai.tool.call.id": p.call_id,
                "tether.verdict": p.verdict,
                "tether.rule": p.deciding_rule,
                "tether.reason": p.reason,
            },
        )

    def _action_started(self, e: Event, p: ActionStarted) -> None:
        attrs: Attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": p.tool,
            "gen_ai.tool.call.id": p.call_id,
            "gen_ai.tool.type": "function",
            "tether.attempt": p.attempt,
        }
        self.tools[p.call_id] = self._child(e, f"execute_tool {p.tool}", "internal", attrs)

    def _action_completed(self, e: Event, p: ActionCompleted) -> None:
        from opentelemetry.trace import Status, StatusCode

        span = self.tools.pop(p.call_id, None)
        if span is None:
            return  # completed without a start in this drive (fed mid-log): nothing to end
        span.set_attributes({"tether.ok": p.ok, "tether.changed_files": len(p.changed_files), "tether.seq.end": e.seq})
        exit_code = p.result.get("exit_code")
        if isinstance(exit_code, int):
            span.set_attribute("tether.exit_code", exit_code)
        if not p.ok:
            failure = p.result.get("failure_class")
            span.set_attribute("error.type", str(failure) if failure else "tool_error")
            span.set_status(Status(StatusCode.ERROR, str(p.result.get("error") or "the tool reported a failure")))
        span.end(end_time=nanos(e.ts))

    def _action_failed(self, e: Event, p: ActionFailed) -> None:
        from opentelemetry.trace import Status, StatusCode

        span = self.tools.pop(p.call_id, None)
        if span is None:
            span = self._child(e, f"execute_tool {p.tool}", "internal", {"gen_ai.tool.call.id": p.call_id})
        span.set_attributes({"error.type": p.failure_class, "tether.seq.end": e.seq})
        span.set_status(Status(StatusCode.ERROR, p.error))
        span.end(end_time=nanos(e.ts))

    def _approval(self, e: Event, p: Payload) -> None:
        attrs: Attributes = {"tether.approval.id": getattr(p, "approval_id", "")}
        if isinstance(p, ApprovalRequested):
            attrs |= {"gen_ai.tool.call.id": p.call_id, "gen_ai.tool.name": p.tool, "tether.reason": p.reason}
        elif isinstance(p, ApprovalGranted):
            attrs |= {"tether.by": p.by, "tether.scope": p.scope}
        elif isinstance(p, ApprovalDenied):
            attrs |= {"tether.by": p.by, "tether.reason": p.reason}
        elif isinstance(p, ApprovalExpired):
            attrs |= {"tether.outcome": p.outcome}
        elif isinstance(p, ApprovalMismatch):
            attrs |= {"gen_ai.tool.call.id": p.call_id}
        self._event(e, f"tether.{e.kind}", attrs)

    def _sensor(self, e: Event, p: SensorResultEvent) -> None:
        attrs: Attributes = {
            "tether.sensor": str(p.sensor),
            "tether.result": str(p.result),
            "tether.required": p.required,
            "tether.summary": p.summary,
        }
        self._event(e, "tether.sensor.result", attrs)

    def _control(self, e: Event, p: ControlChanged) -> None:
        attrs: Attributes = {
            "tether.control.previous": str(p.previous),
            "tether.control.state": str(p.state),
            "tether.control.tier": p.tier,
            "tether.reason": p.reason,
        }
        self._event(e, "tether.control.changed", attrs)

    def _budget(self, e: Event, p: BudgetExceeded) -> None:
        self._event(
            e, "tether.budget.exceeded", {"tether.budget": p.budget, "tether.used": p.used, "tether.limit": p.limit}
        )


_HANDLERS: dict[str, Callable[[RunTracer, Event, Any], None]] = {
    RunStarted.KIND: RunTracer._run_started,
    RunForked.KIND: RunTracer._run_forked,
    RunResumed.KIND: RunTracer._run_resumed,
    RunWaiting.KIND: RunTracer._run_waiting,
    RunFinished.KIND: RunTracer._run_finished,
    ModelRequested.KIND: RunTracer._model_requested,
    ModelResponded.KIND: RunTracer._model_responded,
    ModelFailed.KIND: RunTracer._model_failed,
    ActionDecided.KIND: RunTracer._action_decided,
    ActionStarted.KIND: RunTracer._action_started,
    ActionCompleted.KIND: RunTracer._action_completed,
    ActionFailed.KIND: RunTracer._action_failed,
    ApprovalRequested.KIND: RunTracer._approval,
    ApprovalGranted.KIND: RunTracer._approval,
    ApprovalDenied.KIND: RunTracer._approval,
    ApprovalExpired.KIND: RunTracer._approval,
    ApprovalMismatch.KIND: RunTracer._approval,
    SensorResultEvent.KIND: RunTracer._sensor,
    ControlChanged.KIND: RunTracer._control,
    BudgetExceeded.KIND: RunTracer._budget,
}


def trace_events(events: Iterable[Event], tracer: Tracer) -> None:
    """The spans of a stored run (or any prefix of its log), ended by the end of ``events``."""
    run = RunTracer(tracer)
    run.feed_all(events)
    run.close()
