"""Envelope: the compiled runtime contract, its intent plan, hashing and strict validation."""

from .compile import compile_envelope
from .hashing import contract_hash, plan_hash
from .load import load_envelope, load_plan
from .schema import Effect, Envelope, IntentPlan, ToolContract
from .strict import strict_problems

__all__ = [
    "Effect",
    "Envelope",
    "IntentPlan",
    "ToolContract",
    "compile_envelope",
    "contract_hash",
    "load_envelope",
    "load_plan",
    "plan_hash",
    "strict_problems",
]
