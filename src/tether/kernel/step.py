"""The steps: the values ``next_step`` names and the runtime performs, one small frozen type each."""

from __future__ import annotations

from dataclasses import dataclass

from tether.status import RunStatus

from .budgets import Breach


@dataclass(frozen=True)
class CallModel:
    turn: int


@dataclass(frozen=True)
class Decide:
    call_id: str


@dataclass(frozen=True)
class StageApproval:
    call_id: str


@dataclass(frozen=True)
class ExpireApproval:
    approval_id: str


@dataclass(frozen=True)
class Execute:
    call_id: str
    attempt: int
    why: str = ""


@dataclass(frozen=True)
class Verify:
    call_id: str


@dataclass(frozen=True)
class Wait:
    status: RunStatus
    reason: str


@dataclass(frozen=True)
class Finish:
    status: RunStatus
    reason: str
    next_action: str = ""
    breach: Breach | None = None


Step = CallModel | Decide | StageApproval | ExpireApproval | Execute | Verify | Wait | Finish
