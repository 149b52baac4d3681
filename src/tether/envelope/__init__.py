"""Envelope: the compiled runtime contract, its intent plan, hashing and its own strict checks.

The whole strict validation also judges the rules, which takes the policy engine: it is
``tether.policy.strict.strict_problems`` (exported as ``tether.strict_problems``).
"""

from __future__ import annotations

from tether.exports import lazy

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from .compile import compile_envelope
    from .hashing import contract_hash, plan_hash
    from .load import load_envelope, load_plan
    from .schema import Effect, Envelope, IntentPlan, ToolContract, Trust
    from .trust import trust_of

#: Where each public name lives. Each is imported on first use (PEP 562): importing one module of the
#: package does not import all of them (a hook call imports the schema and the hashing, not the YAML compiler).
_HOMES = {
    "compile_envelope": ".compile",
    "contract_hash": ".hashing",
    "plan_hash": ".hashing",
    "load_envelope": ".load",
    "load_plan": ".load",
    "Effect": ".schema",
    "Envelope": ".schema",
    "IntentPlan": ".schema",
    "ToolContract": ".schema",
    "Trust": ".schema",
    "trust_of": ".trust",
}


__getattr__ = lazy(globals(), _HOMES)


__all__ = [
    "Effect",
    "Envelope",
    "IntentPlan",
    "ToolContract",
    "Trust",
    "compile_envelope",
    "contract_hash",
    "load_envelope",
    "load_plan",
    "plan_hash",
    "trust_of",
]
