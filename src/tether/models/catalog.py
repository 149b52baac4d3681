"""The model table: one entry per model with its price AND its limits, overridable in one place.

Each entry (:class:`~tether.envelope.schema.Price`) holds the list price (USD per million tokens, input /
output) and the context window and output limit (tokens), as the providers published them when this was
written. They change, and local models are not listed, so an operator overrides or adds entries where
prices are set: a price file (the envelope's ``pricing_file``, :func:`load_catalog`), then the envelope's
own ``pricing`` section (:func:`run_catalog`). Keys are model names without the provider prefix; a dated
snapshot (``gpt-4.1-2025-04-14``, ``claude-sonnet-4-5-20250929``) falls back to its longest listed prefix.

For a limit the full order is: ``tether run --context-window`` > ``agent.context_window`` /
``agent.max_output_tokens`` > envelope ``pricing`` entry > price file entry > built-in table
(:func:`tether.models.window.limits_for` applies the first two). A limit an override leaves unset falls
through to the next table down, so an entry may restate a price without repeating the window.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from tether.envelope.schema import Envelope, Price
from tether.errors import EnvelopeInvalid, Problem

# name: (input USD/Mtok, output USD/Mtok, context window, output limit)
_TABLE: dict[str, tuple[float, float, int, int]] = {
    # OpenAI
    "gpt-5.1": (1.25, 10.00, 400_000, 128_000),
    "gpt-5": (1.25, 10.00, 400_000, 128_000),
    "gpt-5-pro": (15.00, 120.00, 400_000, 272_000),
    "gpt-5-mini": (0.25, 2.00, 400_000, 128_000),
    "gpt-5-nano": (0.05, 0.40, 400_000, 128_000),
    "gpt-4.1": (2.00, 8.00, 1_047_576, 32_768),
    "gpt-4.1-mini": (0.40, 1.60, 1_047_576, 32_768),
    "gpt-4.1-nano": (0.10, 0.40, 1_047_576, 32_768),
    "gpt-4o": (2.50, 10.00, 128_000, 16_384),
    "gpt-4o-mini": (0.15, 0.60, 128_000, 16_384),
    "o1": (15.00, 60.00, 200_000, 100_000),
    "o3": (2.00, 8.00, 200_000, 100_000),
    "o3-pro": (20.00, 80.00, 200_000, 100_000),
    "o3-mini": (1.10, 4.40, 200_000, 100_000),
    "o4-mini": (1.10, 4.40, 200_000, 100_000),
    # Anthropic
    "claude-opus-4-5": (5.00, 25.00, 200_000, 64_000),
    "claude-opus-4-1": (15.00, 75.00, 200_000, 32_000),
    "claude-opus-4": (15.00, 75.00, 200_000, 32_000),
    "claude-sonnet-4-5": (3.00, 15.00, 200_000, 64_000),
    "claude-sonnet-4": (3.00, 15.00, 200_000, 64_000),
    "claude-3-7-sonnet": (3.00, 15.00, 200_000, 64_000),
    "claude-haiku-4-5": (1.00, 5.00, 200_000, 64_000),
    "claude-3-5-haiku": (0.80, 4.00, 200_000, 8_192),
    "claude-3-haiku": (0.25, 1.25, 200_000, 4_096),
}

CATALOG: Mapping[str, Price] = {
    name: Price(input_per_mtok=i, output_per_mtok=o, context_window=w, max_output_tokens=m)
    for name, (i, o, w, m) in _TABLE.items()
}
"""The built-in table."""


def split_provider(model: str) -> tuple[str | None, str]:
    """``"openai:gpt-4.1"`` → ``("openai", "gpt-4.1")``; a bare name has no provider."""
    provider, sep, rest = model.partition(":")
    return (provider, rest) if sep else (None, model)


def longest_prefix(name: str, table: Mapping[str, Any]) -> str | None:
    """The longest key of ``table`` that ``name`` extends with ``-…`` (a dated snapshot of a listed model)."""
    candidates = [k for k in table if name.startswith(k + "-")]
    return max(candidates, key=len) if candidates else None


def entries_for(model: str, overrides: Mapping[str, Price] | None = None) -> list[Price]:
    """The entries that apply to ``model``, the overrides' first, then the built-in table's (at most one each).

    Within a table the full spec is tried, then the bare name, then its longest ``-``-bounded prefix.
    """
    _, bare = split_provider(model)
    found: list[Price] = []
    if overrides:
        key = _key_in(model, bare, overrides)
        if key is not None:
            found.append(overrides[key])
    key = _catalog_key(model, bare)
    if key is not None:
        found.append(CATALOG[key])
    return found


def _key_in(model: str, bare: str, table: Mapping[str, Any]) -> str | None:
    return next((k for k in (model, bare) if k in table), None) or longest_prefix(bare, table)


@lru_cache(maxsize=256)
def _catalog_key(model: str, bare: str) -> str | None:
    """The built-in table's key for ``model``: the table never changes, so each name is looked up once (a
    run asks at every model call, and the prefix search reads the whole table)."""
    return _key_in(model, bare, CATALOG)


def first_stated(entries: Sequence[Price], field: str) -> Any:
    """The first entry's ``field`` that is set (a limit an override leaves unset falls through), or None."""
    return next((getattr(e, field) for e in entries if getattr(e, field) is not None), None)


def load_catalog(path: Path) -> dict[str, Price]:
    """A price file: ``{model: {input_per_mtok, output_per_mtok, context_window?, max_output_tokens?}}``, YAML or JSON.

    Raises :class:`~tether.errors.EnvelopeInvalid` naming the file and each bad field
    (``$.gpt-5.output_per_mtok: found -1; expected ≥ 0``), or a file error.
    """
    from tether.envelope.load import problems_from, read_document  # YAML, and a validator: only for a price file

    data = read_document(path)
    if not isinstance(data, dict):
        found = type(data).__name__
        raise EnvelopeInvalid(
            [Problem("$", found, "a mapping of model name to {input_per_mtok, output_per_mtok, ...}", str(path))]
        )
    try:
        return TypeAdapter(dict[str, Price]).validate_python(data)
    except ValidationError as e:
        raise EnvelopeInvalid(problems_from(e, str(path))) from e


def run_catalog(env: Envelope, base_dir: Path) -> dict[str, Price]:
    """The overrides a run uses: the envelope's ``pricing_file`` (relative to ``base_dir``), then its ``pricing``.

    An envelope entry for a model the file also lists wins field by field: a limit it leaves unset is the file's.
    """
    merged = load_catalog(base_dir / env.pricing_file) if env.pricing_file else {}
    for name, entry in env.pricing.items():
        below = merged.get(name)
        merged[name] = below.model_copy(update=entry.model_dump(exclude_none=True)) if below else entry
    return merged
