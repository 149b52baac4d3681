"""Plan and contract hashes: what binds a compiled envelope to its source."""

from __future__ import annotations

from typing import Any

from tether.canonical import content_hash

from .schema import Envelope, IntentPlan


def plan_hash(plan: IntentPlan) -> str:
    """Hash of the plan's meaning (canonical JSON), so reformatting the YAML is harmless."""
    return content_hash(plan.model_dump(mode="json"))


#: Top-level fields added after envelopes were first sealed: hashed only when set, so that a new optional
#: field does not change the hash of every envelope compiled before it existed.
LATER_FIELDS = ("pricing_file", "mcp_servers")


def contract_hash(envelope: Envelope | dict[str, Any]) -> str:
    """SHA-256 over the canonical envelope with its own ``contract_hash`` field removed (and unset later fields)."""
    data = envelope.model_dump(mode="json") if isinstance(envelope, Envelope) else dict(envelope)
    data.pop("contract_hash", None)
    for name in LATER_FIELDS:
        if data.get(name) in (None, []):
            data.pop(name, None)
    return content_hash(data)
