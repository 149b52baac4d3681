"""The output contract every finished (or paused) run ends with."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from tether.state import RunState
from tether.status import RunStatus


class LogHead(BaseModel):
    """The run log's head when the contract was made: anchor it (keep it elsewhere) to detect a rewrite."""

    model_config = ConfigDict(frozen=True)

    seq: int
    hash: str


class OutputContract(BaseModel):
    model_config = ConfigDict(frozen=True)

    run_id: str
    status: RunStatus
    result: str
    evidence: list[str]
    unknowns: list[str]
    next_action: str
    last_error: str | None = None
    head: LogHead | None = None

    @classmethod
    def from_state(cls, state: RunState) -> OutputContract:
        return cls(
            run_id=state.run_id,
            status=state.status,
            result=state.result,
            evidence=state.evidence if state.finished else [],
            unknowns=state.unknowns,
            next_action=state.next_action,
            last_error=state.last_error,
            head=LogHead(seq=state.last_seq, hash=state.head_hash) if state.last_seq >= 0 else None,
        )
