from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tether.canonical import content_hash, sha256_hex
from tether.control import observe
from tether.envelope.schema import Envelope
from tether.events import Emitted, Payload
from tether.events.store import Event, EventStore


def envelope(**over: Any) -> Envelope:
    data: dict[str, Any] = {
        "plan": {"path": "plan.yaml", "hash": "sha256:" + "0" * 64},
        "environment": {"filesystem": {"read": ["**"], "write": ["src/**", "tests/**"]}},
        "verification": {"sensors": [{"name": "tests", "required": True}], "max_refusals": 2},
    }
    data.update(over)
    return Envelope.model_validate(data)


class Run:
    """A scripted trajectory written to a real EventStore, with the control layer observing after each step."""

    def __init__(self, tmp_path: Path, env: Envelope | None = None, *, auto_observe: bool = True) -> None:
        self.store = EventStore.open(tmp_path / "t.db")
        self.run_id = self.store.create_run("task")
        self.env = env or envelope()
        self.auto = auto_observe
        self._ids = itertools.count(1)
        self.store.append(self.run_id, "run.started", {"task": "task"})

    @property
    def events(self) -> list[Event]:
        return self.store.events(self.run_id)

    def append(self, items: Sequence[Emitted]) -> list[Event]:
        return self.store.append_many(self.run_id, items) if items else []

    def observe(self) -> list[Payload]:
        out = observe(self.events, self.env)
        self.append(out)
        return out

    def model(self, text: str = "", calls: int = 0) -> None:
        self.append(
            [
                (
                    "model.responded",
                    {
                        "turn": 1,
                        "model": "scripted",
                        "text": text,
                        "termination": "tool_request" if calls else "complete",
                        "tool_calls": [{"id": f"m{i}", "name": "x", "args": {}} for i in range(calls)],
                    },
                )
            ]
        )
        if self.auto:
            self.observe()

    def act(
        self,
        tool: str,
        args: dict[str, Any] | None = None,
        *,
        ok: bool = True,
        content: str = "ok",
        data: dict[str, Any] | None = None,
        changed: list[str] | None = None,
        failure_class: str | None = None,
    ) -> Event:
        call = f"c{next(self._ids)}"
        args = args or {}
        ev = self.append(
            [
                (
                    "action.proposed",
                    {"call_id": call, "tool": tool, "args": args, "args_hash": content_hash(args), "turn": 1},
                ),
                ("action.decided", {"call_id": call, "verdict": "ALLOW", "deciding_rule": "r", "reason": "ok"}),
                ("action.started", {"call_id": call, "tool": tool, "args_hash": content_hash(args)}),
                (
                    "action.completed",
                    {
                        "call_id": call,
                        "tool": tool,
                        "ok": ok,
                        "result": {
                            "ok": ok,
                            "content": content,
                            "data": data or {},
                            "changed_files": changed or [],
                            "failure_class": failure_class,
                        },
                        "changed_files": changed or [],
                    },
                ),
            ]
        )[-1]
        if self.auto:
            self.observe()
        return ev

    def write(self, path: str, before: str | None, after: str) -> Event:
        return self.act(
            "write_file",
            {"path": path, "content": after},
            data={
                "path": path,
                "sha256_before": sha256_hex(before) if before is not None else None,
                "sha256_after": sha256_hex(after),
            },
            changed=[path],
        )

    def run_tests(self, failing: list[str]) -> Event:
        return self.act(
            "run_tests",
            {},
            ok=not failing,
            content=f"{len(failing)} failed in 0.{len(self.events)}s",
            data={"exit_code": 1 if failing else 0, "failing": failing, "counts": {"failed": len(failing)}},
            failure_class="tests_failed" if failing else None,
        )

    def sensor(self, name: str, result: str, failing: list[str] = (), required: bool = True) -> None:  # type: ignore[assignment]
        diags = [{"file": f.split("::")[0], "line": 3, "message": "failed", "code": f} for f in failing]
        self.append(
            [
                ("sensor.result", {"sensor": name, "result": result, "required": required, "diagnostics": diags}),
                (
                    "verify.completed",
                    {
                        "results": {name: result},
                        "accepted": result == "PASS",
                        "reasons": [] if result == "PASS" else [f"{name} {result}"],
                    },
                ),
            ]
        )
        if self.auto:
            self.observe()

    def kinds(self, kind: str) -> list[Event]:
        return [e for e in self.events if e.kind == kind]
