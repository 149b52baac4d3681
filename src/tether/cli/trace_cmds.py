"""``tether trace RUN``: a stored run as an OpenTelemetry trace; and the live trace of ``run`` and ``resume``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import typer

from tether.errors import InputError
from tether.events.store import Event
from tether.observe import otel

from .common import DbOption, JsonOption, console, print_json, reader

Sink = Callable[[Event], None]


@contextmanager
def traced(sink: Sink) -> Iterator[Sink]:
    """``sink``, and when the ``OTEL_*`` variables ask for traces, each event also fed to a live :class:`RunTracer`;
    on the way out the open spans are ended and the exporter flushed."""
    provider = otel.provider_from_env()
    if provider is None:
        yield sink
        return
    run = otel.RunTracer(provider.get_tracer("tether"))

    def both(e: Event) -> None:
        sink(e)
        run.feed(e)

    try:
        yield both
    finally:
        run.close()
        provider.shutdown()


def trace_cmd(run: str, db: str | None = DbOption, as_json: bool = JsonOption) -> None:
    """Export a stored run as an OpenTelemetry trace, to the exporter the OTEL_* variables name."""
    provider = otel.provider_from_env()
    if provider is None:
        raise InputError(
            "no trace exporter configured: set OTEL_EXPORTER_OTLP_ENDPOINT (e.g. http://127.0.0.1:4318) "
            "or OTEL_TRACES_EXPORTER=console"
        )
    with reader(db) as store:
        info = store.run(run)
        store.verify(info.run_id)
        events = [e for e in store.events(info.run_id) if e.run_id == info.run_id]  # a fork's prefix: the parent's
    tracer = otel.RunTracer(provider.get_tracer("tether"))
    tracer.feed_all(events)
    tracer.close()
    flushed = provider.force_flush()
    provider.shutdown()
    if not flushed:
        raise InputError(f"run {info.run_id}: the trace exporter did not finish within its timeout")
    summary = {"run_id": info.run_id, "events": len(events), "spans": tracer.spans}
    if as_json:
        print_json(summary)
    else:
        console.print(f"exported run {info.run_id}: {tracer.spans} spans from {len(events)} events")


def register(app: typer.Typer) -> None:
    app.command("trace")(trace_cmd)
