"""Verification: deterministic sensors and the cascade that runs them (cheapest first)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tether.exports import lazy

if TYPE_CHECKING:
    from .cascade import cascade_events, completion_verdict, planned_sensors, run_cascade
    from .result import Diagnostic, SensorResult

#: Where each public name lives. Each is imported on first use (PEP 562): importing one module of the
#: package does not import all of them (a hook call reads the test surface, not the sensors).
_HOMES = {
    "cascade_events": ".cascade",
    "completion_verdict": ".cascade",
    "planned_sensors": ".cascade",
    "run_cascade": ".cascade",
    "Diagnostic": ".result",
    "SensorResult": ".result",
}


__getattr__ = lazy(globals(), _HOMES)


__all__ = ["Diagnostic", "SensorResult", "cascade_events", "completion_verdict", "planned_sensors", "run_cascade"]
