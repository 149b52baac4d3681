"""Compile an intent plan into an envelope: bind the plan's hash, seal the contract.

The template's text is kept (comments and all) and only the three binding
fields are rewritten, so the compiled envelope stays a document a person can
review; if the template does not have those lines in the usual form, the
envelope is written out from the data instead. Either way the result is
re-read and its hashes checked before the file is replaced atomically.
"""

from __future__ import annotations

import os
import re
from importlib import resources
from pathlib import Path

import yaml

from tether.errors import FileError, InputError

from .document import parse_yaml, read_text
from .hashing import contract_hash, plan_hash
from .load import load_plan, parse_model, read_document
from .schema import Envelope


def builtin_template(name: str) -> str:
    return resources.files("tether.envelope").joinpath("templates", name).read_text(encoding="utf-8")


def compile_envelope(plan_path: Path, out_path: Path, template_path: Path | None = None) -> Envelope:
    """Compile ``plan_path`` into ``out_path``. Default template: ``out_path`` if it exists, else the built-in one."""
    plan = load_plan(plan_path)
    if template_path is None and out_path.exists():
        template_path = out_path
    if template_path is not None:
        template_text = read_text(template_path)
        data = read_document(template_path)
        source = str(template_path)
    else:
        template_text = builtin_template("envelope.yaml")
        data = parse_yaml(template_text, "<built-in template>")
        source = "<built-in template>"
    if not isinstance(data, dict):
        raise InputError(f"{source}: expected a mapping at the top level")

    rel_plan = os.path.relpath(plan_path.resolve(), out_path.resolve().parent)
    data["plan"] = {"path": rel_plan, "hash": plan_hash(plan)}
    data["contract_hash"] = ""
    envelope = parse_model(Envelope, data, source)
    sealed = envelope.model_copy(update={"contract_hash": contract_hash(envelope)})

    text = _rebind(template_text, sealed) if out_path.suffix != ".json" else None
    if text is None or _reparse(text, source) != sealed:
        text = _dump(sealed, json_out=out_path.suffix == ".json")
    _atomic_write(out_path, text)
    return sealed


def _rebind(text: str, env: Envelope) -> str | None:
    """Rewrite plan.path, plan.hash and contract_hash in place; None if the lines are not found."""
    value = r'[ \t]*("[^"\n]*"|\'[^\'\n]*\'|[^\s#]*)'
    plan_block = r"(?m)^(plan:[ \t]*\n(?:[ \t]+.*\n)*?[ \t]+"
    patterns = [
        (plan_block + r"path:)" + value, rf"\g<1> {env.plan.path}"),
        (plan_block + r"hash:)" + value, rf'\g<1> "{env.plan.hash}"'),
        (r"(?m)^(contract_hash:)" + value, rf'\g<1> "{env.contract_hash}"'),
    ]
    for pattern, repl in patterns:
        text, n = re.subn(pattern, repl, text, count=1)
        if n != 1:
            return None
    return text


def _reparse(text: str, source: str) -> Envelope | None:
    try:
        return parse_model(Envelope, parse_yaml(text, source), source)
    except InputError:
        return None


def _dump(env: Envelope, *, json_out: bool) -> str:
    data = env.model_dump(mode="json")
    if json_out:
        import json

        return json.dumps(data, indent=2) + "\n"
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def _atomic_write(path: Path, text: str) -> None:
    """Write via a temp file and rename, so a crash never leaves a half-written envelope."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise FileError(f"{path}: cannot write ({e})") from e
