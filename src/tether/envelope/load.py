"""Reading plans and envelopes from disk, with errors that name file and field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from tether.errors import EnvelopeInvalid, FileError, ParseError, Problem

from .schema import Envelope, IntentPlan

M = TypeVar("M", bound=BaseModel)


def read_document(path: Path) -> Any:
    """Parse a YAML or JSON file (by suffix; YAML is a superset, so anything else is YAML)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as e:
        raise FileError(f"{path}: file not found") from e
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as e:
        raise FileError(f"{path}: cannot read ({e.__class__.__name__}: {e})") from e
    try:
        if path.suffix == ".json":
            return json.loads(text)
        return yaml.safe_load(text)
    except json.JSONDecodeError as e:
        raise ParseError(f"{path}: invalid JSON at line {e.lineno}, column {e.colno}: {e.msg}") from e
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(e, "problem", None) or str(e)
        raise ParseError(f"{path}: invalid YAML{where}: {problem}") from e


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
    return parse_model(Envelope, read_document(path), str(path))


def load_plan(path: Path) -> IntentPlan:
    return parse_model(IntentPlan, read_document(path), str(path))
