"""What a sensor reports: a verdict plus structured diagnostics (file, line, message).

The four outcomes: PASS (checked, fine), FAIL (checked, a problem the agent can fix), SKIPPED (not
applicable or its tool is not installed; never counted as PASS) and ERROR (the check could not be
made: the tool crashed, timed out or printed what cannot be parsed, or the workspace snapshot is
missing, unreadable or disagrees with the receipts). A required sensor's ERROR blocks completion
like its FAIL, and says why; the ``snapshot`` check is always required.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from tether.events.kinds_control import DiagnosticData, SensorResultEvent

Outcome = Literal["PASS", "FAIL", "SKIPPED", "ERROR"]
BLOCKING: frozenset[str] = frozenset({"FAIL", "ERROR"})


@dataclass(frozen=True)
class Diagnostic:
    """One problem a sensor found, in a shape a model can act on (never a raw dump)."""

    file: str
    line: int | None
    message: str
    code: str | None = None

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        code = f" [{self.code}]" if self.code else ""
        return f"{where}: {self.message}{code}" if where else f"{self.message}{code}"

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "message": self.message, "code": self.code}


@dataclass(frozen=True)
class SensorResult:
    sensor: str
    result: Outcome
    required: bool
    summary: str
    diagnostics: tuple[Diagnostic, ...] = field(default=())
    duration_s: float = 0.0
    tool: str = ""  # the binary that ran, with its version

    @property
    def passed(self) -> bool:
        return self.result == "PASS"

    def to_payload(self, trigger: str = "") -> SensorResultEvent:
        """The ``sensor.result`` event."""
        return SensorResultEvent(
            sensor=self.sensor,
            result=self.result,
            required=self.required,
            summary=self.summary,
            diagnostics=[DiagnosticData(**d.to_dict()) for d in self.diagnostics],
            duration_s=round(self.duration_s, 6),
            trigger=trigger,
            tool=self.tool,
        )
