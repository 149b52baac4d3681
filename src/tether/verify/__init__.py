"""Verification: deterministic sensors and the cascade that runs them (cheapest first)."""

from .cascade import cascade_events, completion_verdict, planned_sensors, run_cascade
from .result import Diagnostic, SensorResult

__all__ = ["Diagnostic", "SensorResult", "cascade_events", "completion_verdict", "planned_sensors", "run_cascade"]
