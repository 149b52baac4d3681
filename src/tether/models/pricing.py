"""Cost of a model call in USD, from a per-million-token price table.

The built-in table holds list prices (USD per million tokens, input / output)
as published by the providers when it was written; they change, so a price
file (the envelope's ``pricing_file``, :func:`load_prices`) overrides any entry
and the envelope's own ``pricing`` section overrides both (:func:`run_prices`). Keys are model names
without the provider prefix. A dated snapshot (``gpt-4.1-2025-04-14``,
``claude-sonnet-4-5-20250929``) falls back to its longest listed prefix.

An unknown model costs ``0.0`` — budgets cannot stop what they cannot price —
so :func:`price_known` exists for the host to say so loudly instead of
silently. Offline models (``scripted:``, ``function:``) are known and free.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from tether.envelope.load import problems_from, read_document
from tether.envelope.schema import Envelope, Price
from tether.errors import EnvelopeInvalid, Problem
from tether.models.base import Usage

FREE_PROVIDERS = frozenset({"scripted", "function"})

# (input, output) USD per million tokens.
_TABLE: dict[str, tuple[float, float]] = {
    # OpenAI
    "gpt-5.1": (1.25, 10.00),
    "gpt-5": (1.25, 10.00),
    "gpt-5-pro": (15.00, 120.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "o1": (15.00, 60.00),
    "o3": (2.00, 8.00),
    "o3-pro": (20.00, 80.00),
    "o3-mini": (1.10, 4.40),
    "o4-mini": (1.10, 4.40),
    # Anthropic
    "claude-opus-4-5": (5.00, 25.00),
    "claude-opus-4-1": (15.00, 75.00),
    "claude-opus-4": (15.00, 75.00),
    "claude-sonnet-4-5": (3.00, 15.00),
    "claude-sonnet-4": (3.00, 15.00),
    "claude-3-7-sonnet": (3.00, 15.00),
    "claude-haiku-4-5": (1.00, 5.00),
    "claude-3-5-haiku": (0.80, 4.00),
    "claude-3-haiku": (0.25, 1.25),
}

DEFAULT_PRICES: Mapping[str, Price] = {
    name: Price(input_per_mtok=i, output_per_mtok=o) for name, (i, o) in _TABLE.items()
}


def split_provider(model: str) -> tuple[str | None, str]:
    """``"openai:gpt-4.1"`` → ``("openai", "gpt-4.1")``; a bare name has no provider."""
    provider, sep, rest = model.partition(":")
    return (provider, rest) if sep else (None, model)


def price_for(model: str, overrides: Mapping[str, Price] | None = None) -> Price | None:
    """The price that applies to ``model`` (with or without provider prefix), or None.

    Overrides win over the built-in table; within each, the full spec is tried,
    then the bare name, then its longest ``-``-bounded prefix.
    """
    provider, bare = split_provider(model)
    if provider in FREE_PROVIDERS:
        return Price(input_per_mtok=0.0, output_per_mtok=0.0)
    for table in (overrides or {}, DEFAULT_PRICES):
        for key in (model, bare):
            if key in table:
                return table[key]
        prefix = longest_prefix(bare, table)
        if prefix is not None:
            return table[prefix]
    return None


def longest_prefix(name: str, table: Mapping[str, Any]) -> str | None:
    """The longest key of ``table`` that ``name`` extends with ``-…`` (a dated snapshot of a listed model)."""
    candidates = [k for k in table if name.startswith(k + "-")]
    return max(candidates, key=len) if candidates else None


def price_known(model: str, overrides: Mapping[str, Price] | None = None) -> bool:
    """False when :func:`cost_usd` would return 0.0 only because it has no price."""
    return price_for(model, overrides) is not None


def cost_usd(model: str, usage: Usage, overrides: Mapping[str, Price] | None = None) -> float:
    """USD for one call's ``usage``; 0.0 for an unknown model (check :func:`price_known`)."""
    price = price_for(model, overrides)
    if price is None:
        return 0.0
    return (usage.input_tokens * price.input_per_mtok + usage.output_tokens * price.output_per_mtok) / 1_000_000


_PRICE_TABLE = TypeAdapter(dict[str, Price])


def load_prices(path: Path) -> dict[str, Price]:
    """A price file: ``{model: {input_per_mtok, output_per_mtok}}`` in YAML or JSON.

    Raises :class:`~tether.errors.EnvelopeInvalid` naming the file and each bad field
    (``$.gpt-5.output_per_mtok: found -1; expected ≥ 0``), or a file error.
    """
    data = read_document(path)
    if not isinstance(data, dict):
        found = type(data).__name__
        raise EnvelopeInvalid(
            [Problem("$", found, "a mapping of model name to {input_per_mtok, output_per_mtok}", str(path))]
        )
    try:
        return _PRICE_TABLE.validate_python(data)
    except ValidationError as e:
        raise EnvelopeInvalid(problems_from(e, str(path))) from e


def run_prices(env: Envelope, base_dir: Path) -> dict[str, Price]:
    """The overrides a run uses: the envelope's ``pricing_file`` (relative to ``base_dir``), then its ``pricing``."""
    from_file = load_prices(base_dir / env.pricing_file) if env.pricing_file else {}
    return {**from_file, **env.pricing}
