"""Cost of a model call in USD, from the model table's prices (:mod:`tether.models.catalog`).

An unknown model costs ``0.0`` — budgets cannot stop what they cannot price —
so :func:`price_known` exists for the host to say so loudly instead of
silently. Offline models (``scripted:``, ``function:``) are known and free.
"""

from __future__ import annotations

from collections.abc import Mapping

from tether.envelope.schema import Price
from tether.models.base import Usage
from tether.models.catalog import entries_for, split_provider

FREE_PROVIDERS = frozenset({"scripted", "function"})


def price_for(model: str, overrides: Mapping[str, Price] | None = None) -> Price | None:
    """The entry whose price applies to ``model`` (with or without provider prefix), or None.

    Overrides win over the built-in table; within each, the full spec is tried,
    then the bare name, then its longest ``-``-bounded prefix.
    """
    provider, _ = split_provider(model)
    if provider in FREE_PROVIDERS:
        return Price(input_per_mtok=0.0, output_per_mtok=0.0)
    entries = entries_for(model, overrides)
    return entries[0] if entries else None


def price_known(model: str, overrides: Mapping[str, Price] | None = None) -> bool:
    """False when :func:`cost_usd` would return 0.0 only because it has no price."""
    return price_for(model, overrides) is not None


def cost_usd(model: str, usage: Usage, overrides: Mapping[str, Price] | None = None) -> float:
    """USD for one call's ``usage``; 0.0 for an unknown model (check :func:`price_known`)."""
    price = price_for(model, overrides)
    if price is None:
        return 0.0
    return (usage.input_tokens * price.input_per_mtok + usage.output_tokens * price.output_per_mtok) / 1_000_000
