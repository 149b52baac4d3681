"""Plan and contract hashes: what binds a compiled envelope to its source."""

from __future__ import annotations

from tether.canonical import content_hash

from .schema import Envelope, IntentPlan

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from typing import Any


def plan_hash(plan: IntentPlan) -> str:
    """Hash of the plan's meaning (canonical JSON), so reformatting the YAML is harmless."""
    return content_hash(plan.model_dump(mode="json"))


#: Top-level fields added after envelopes were first sealed: hashed only when set, so that a new optional
#: field does not change the hash of every envelope compiled before it existed.
LATER_FIELDS = ("pricing_file", "mcp_servers", "skills", "memory")

#: Nested fields added later, with the value that means "unset": hashed only when they differ from it. Written
#: out, not computed (``TrustSettings().model_dump(mode="json")``, which ``tests/test_envelope.py``
#: holds it to): computing it at import built that model's validator and serializer in every process, a cold
#: hook call's included, which validates no ``TrustSettings`` when its envelope is kept.
LATER_ENVIRONMENT_FIELDS: dict[str, Any] = {"trust": {"workspace": "trusted"}}
LATER_TOOL_FIELDS: dict[str, Any] = {"trust": None}
LATER_NETWORK_FIELDS: dict[str, Any] = {"allow_loopback": False}
LATER_AGENT_FIELDS: dict[str, Any] = {"context": None}
LATER_PRICE_FIELDS: dict[str, Any] = {"context_window": None, "max_output_tokens": None}


def _drop_unset(data: dict[str, Any], later: dict[str, Any]) -> None:
    for name, unset in later.items():
        if name in data and data[name] == unset:
            del data[name]


def contract_hash(envelope: Envelope | dict[str, Any]) -> str:
    """SHA-256 over the canonical envelope with its own ``contract_hash`` field removed (and unset later fields)."""
    data = envelope.model_dump(mode="json") if isinstance(envelope, Envelope) else dict(envelope)
    data.pop("contract_hash", None)
    for name in LATER_FIELDS:
        if data.get(name) in (None, []):
            data.pop(name, None)
    if isinstance(data.get("environment"), dict):
        data["environment"] = dict(data["environment"])
        _drop_unset(data["environment"], LATER_ENVIRONMENT_FIELDS)
        if isinstance(data["environment"].get("network"), dict):
            data["environment"]["network"] = dict(data["environment"]["network"])
            _drop_unset(data["environment"]["network"], LATER_NETWORK_FIELDS)
    if isinstance(data.get("agent"), dict):
        data["agent"] = dict(data["agent"])
        _drop_unset(data["agent"], LATER_AGENT_FIELDS)
    if isinstance(data.get("pricing"), dict):
        data["pricing"] = {name: dict(p) if isinstance(p, dict) else p for name, p in data["pricing"].items()}
        for p in data["pricing"].values():
            if isinstance(p, dict):
                _drop_unset(p, LATER_PRICE_FIELDS)
    if isinstance(data.get("tools"), list):
        data["tools"] = [dict(t) for t in data["tools"]]
        for t in data["tools"]:
            _drop_unset(t, LATER_TOOL_FIELDS)
    return content_hash(data)
