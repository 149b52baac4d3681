"""Envelope: the compiled runtime contract, its intent plan, hashing and its own strict checks.

The whole strict validation also judges the rules, which takes the policy engine: it is
``tether.policy.strict.strict_problems`` (exported as ``tether.strict_problems``).
"""

from .compile import compile_envelope
from .hashing import contract_hash, plan_hash
from .load import load_envelope, load_plan
from .schema import Effect, Envelope, IntentPlan, ToolContract, Trust
from .trust import trust_of

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
