"""Helpers for the MCP tests: where the notes server lives, and a strictly valid gateway envelope."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from tether.envelope.hashing import contract_hash
from tether.envelope.schema import Envelope

HERE = Path(__file__).resolve().parent
GUARDED = HERE.parents[1] / "examples" / "guarded"


@contextmanager
def private_config(root: Path) -> Iterator[None]:
    """What the autouse fixture gives a test, for a module-scoped fixture (which runs before it): no write to
    the developer's ~/.config/tether or ~/.local/state/tether (the list of databases)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CONFIG_HOME", str(root / "xdg-config"))
        mp.setenv("XDG_STATE_HOME", str(root / "xdg-state"))
        yield


def _contract(name: str, effects: list[str], **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "purpose": f"the notes server's {name.split('__')[-1]}", "effects": effects}
    if effects != ["read"]:
        out |= {"timeout_s": 10, "idempotent": False, "on_failure": "return_error", "evidence": ["result"]}
        out["rollback"] = "none"
    return out | extra


def write_envelope(
    directory: Path, *, name: str = "up", approval_timeout_s: float = 60, tool_calls: int | None = None
) -> Path:
    """A gateway envelope for the notes server under ``name``: which tools are declared, and how each is gated."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "plan.yaml").write_text((GUARDED / "plan.yaml").read_text())
    data = yaml.safe_load((GUARDED / "envelope.yaml").read_text())
    data["tools"] = [
        _contract(f"mcp__{name}__search_notes", ["read"]),
        _contract(f"mcp__{name}__add_note", ["write"]),  # writes to an unstated place: the gate asks
        _contract(f"mcp__{name}__slow", ["read"], timeout_s=1),
        _contract(f"mcp__{name}__crash", ["read"]),
        _contract(f"mcp__{name}__huge", ["read"]),
        _contract(f"mcp__{name}__gone", ["read"]),  # declared, not offered by the server
        _contract("bash", ["exec"]),  # the built-in's name: the server's own 'bash' is not this tool
    ]
    data["permissions"] = {
        "profile": "coding",
        "allow": [],
        "ask": [],
        "deny": [
            {
                "id": "no-secret-search",
                "rule": f"mcp__{name}__search_notes",
                "when": {"query": "secret*"},
                "reason": "secret notes stay secret",
            }
        ],
    }
    data["approvals"]["timeout_s"] = approval_timeout_s
    if tool_calls is not None:
        data["budgets"]["tool_calls"] = tool_calls
    data["contract_hash"] = contract_hash(Envelope.model_validate(data))
    path = directory / "envelope.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path
