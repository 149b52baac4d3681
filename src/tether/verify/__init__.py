"""Verification: deterministic sensors and the cascade that runs them (cheapest first)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home, __name__), name)
    globals()[name] = value
    return value


__all__ = ["Diagnostic", "SensorResult", "cascade_events", "completion_verdict", "planned_sensors", "run_cascade"]
