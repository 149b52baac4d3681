"""Reading plans and envelopes from disk (bounded: see :mod:`.document`), with errors that name file and field."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from tether.errors import EnvelopeInvalid, Problem

from .document import decode, parse_text, read_document
from .schema import Envelope, IntentPlan

M = TypeVar("M", bound=BaseModel)


def json_path(loc: tuple[int | str, ...]) -> str:
    out = "$"
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def problems_from(error: ValidationError, file: str) -> list[Problem]:
    problems = []
    for err in error.errors():
        found = "missing" if err["type"] == "missing" else repr(err.get("input"))[:80]
        if err["type"] == "extra_forbidden":
            found, expected = "unknown key", "one of the documented keys (see `tether schema envelope`)"
        else:
            expected = err["msg"]
        problems.append(Problem(json_path(tuple(err["loc"])), found, expected, file))
    return problems


def parse_model(model: type[M], data: Any, file: str) -> M:
    if not isinstance(data, dict):
        raise EnvelopeInvalid([Problem("$", type(data).__name__, "a mapping at the top level", file)])
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise EnvelopeInvalid(problems_from(e, file)) from e


def load_envelope(path: Path) -> Envelope:
    """Read and schema-validate an envelope (YAML or JSON); ``EnvelopeInvalid`` lists every problem with its path.

    Strict validation (bindings, boundaries, budgets, rules) is :func:`tether.policy.strict.strict_problems`.
    """
    return parse_model(Envelope, read_document(path), str(path))


def envelope_of(data: bytes, path: Path) -> Envelope:
    """:func:`load_envelope` of bytes already read from ``path`` (:func:`tether.envelope.source.read_bytes`): the
    same parse, checks and errors, over exactly those bytes (the hooks hash what they parse)."""
    return parse_model(Envelope, parse_text(decode(data, path), path), str(path))


def load_plan(path: Path) -> IntentPlan:
    """Read and schema-validate an intent plan (YAML or JSON)."""
    return parse_model(IntentPlan, read_document(path), str(path))


__all__ = ["envelope_of", "json_path", "load_envelope", "load_plan", "parse_model", "problems_from", "read_document"]
