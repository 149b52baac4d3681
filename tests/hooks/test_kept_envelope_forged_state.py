"""A kept envelope (guard/envcache.py) whose pickled model says something its dump does not.

The unpickler finds only the schema's models, but a pickle restores a model's state as it is written: a body may
hold an ``Envelope`` that never passed validation beside the dump of the real one. The contract hash and the
dump's digest are computed from the dump, so such a file would let the gate govern with a policy that is not
the recorded one while every hash the log keeps still matches. Without an anchor key the file is no better
protected than the log, but it must not be a quieter way around the contract check than rewriting the log: the
model read back must be exactly what its dump says (each field, each type), or the file is a miss.
"""

from __future__ import annotations

import hashlib
import json
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hookkit import Hook
from test_kept_envelope import SOURCE  # the same envelope: reads anything, writes src/** only

import tether.guard.envcache as envcache
import tether.hooks.session as hook_session
from tether.control import fold as control_fold
from tether.envelope.schema import Envelope


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    yield
    hook_session._CACHE.clear()
    control_fold.clear()


def cold(hook: Hook, command: str, call_id: str) -> str:
    hook_session._CACHE.clear()
    control_fold.clear()
    return hook.bash(command, call_id)[0]


def setup(tmp_path: Path) -> tuple[Hook, Path, dict[str, Any], dict[str, Any]]:
    """A session whose first cold call kept its envelope: the hook, the kept file, its header, its body."""
    (tmp_path / "src").mkdir()
    (tmp_path / ".tether").mkdir()
    (tmp_path / ".tether" / "envelope.yaml").write_text(SOURCE)
    hook = Hook(tmp_path)
    assert cold(hook, "echo x > a.txt", "t0") == "deny"
    [path] = sorted((tmp_path / ".tether" / "tether.db.folds").glob("*" + envcache.SUFFIX))
    head, _, body = path.read_bytes()[len(envcache.MAGIC) :].partition(b"\n")
    return hook, path, json.loads(head), envcache._unpickle(body)


def plant(path: Path, head: dict[str, Any], obj: dict[str, Any]) -> None:
    """A body consistent with its header, as anyone who may write the folder can make one without a key."""
    body = pickle.dumps(obj, protocol=5)
    forged = {**head, "body_sha256": hashlib.sha256(body).hexdigest()}
    path.write_bytes(envcache.MAGIC + json.dumps(forged).encode() + b"\n" + body)


def opened(hook: Hook, command: str, call_id: str, monkeypatch: pytest.MonkeyPatch) -> tuple[str, bool]:
    """The answer, and whether the envelope was read back from the kept file."""
    got: list[envcache.Validated] = []
    real = hook_session.kept
    monkeypatch.setattr(hook_session, "kept", lambda *a, **k: got.append(real(*a, **k)) or got[-1])
    answer = cold(hook, command, call_id)
    monkeypatch.setattr(hook_session, "kept", real)
    return answer, bool(got) and all(v.kept for v in got)


def wider(envelope: Envelope) -> Envelope:
    """The envelope with ``write: ["**"]``, made without validation (as a pickle's state is restored)."""
    fs = envelope.environment.filesystem.model_copy(update={"write": ["**"]})
    return envelope.model_copy(update={"environment": envelope.environment.model_copy(update={"filesystem": fs})})


def test_the_untouched_kept_file_is_read_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hook, path, head, obj = setup(tmp_path)
    plant(path, head, obj)  # re-pickled as is: still the same envelope, still read back
    assert opened(hook, "echo y > b.txt", "t1", monkeypatch) == ("deny", True)


def test_a_model_that_differs_from_its_dump_is_not_governed_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dump (and so the contract hash and the recorded envelope's digest) unchanged, the model widened: the
    gate would allow the write the recorded contract refuses. It is a miss: the envelope is validated."""
    hook, path, head, obj = setup(tmp_path)
    plant(path, head, {**obj, "envelope": wider(obj["envelope"])})
    assert opened(hook, "echo y > b.txt", "t1", monkeypatch) == ("deny", False)


@pytest.mark.parametrize(
    "change",
    [
        "tuple",  # a list field held as a tuple
        "bool",  # an int field held as True
        "float",  # an int field held as a float
        "extra",  # an attribute beside the fields
        "missing",  # a field left out of the state
        "private",  # pydantic's private or extra state set
        "set",  # a list field held as a set
    ],
)
def test_a_model_whose_state_validation_would_never_make_is_a_miss(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    hook, path, head, obj = setup(tmp_path)
    env: Envelope = obj["envelope"]
    fs = env.environment.filesystem
    if change == "tuple":
        bad = fs.model_copy(update={"write": tuple(fs.write)})
    elif change == "set":
        bad = fs.model_copy(update={"write": set(fs.write)})
    else:
        bad = fs.model_copy()
    forged = env.model_copy(update={"environment": env.environment.model_copy(update={"filesystem": bad})})
    if change in ("bool", "float"):
        budgets = env.budgets.model_copy(update={"tool_calls": True if change == "bool" else 50.0})
        forged = forged.model_copy(update={"budgets": budgets})
    elif change == "extra":
        object.__getattribute__(bad, "__dict__")["sneaky"] = ["**"]
    elif change == "missing":
        del object.__getattribute__(bad, "__dict__")["write"]
    elif change == "private":
        object.__setattr__(bad, "__pydantic_extra__", {"write_too": ["**"]})
    plant(path, head, {**obj, "envelope": forged})
    assert opened(hook, "echo y > b.txt", "t1", monkeypatch) == ("deny", False)


def _examples() -> list[Path]:
    root = Path(__file__).resolve().parents[2]
    return [*sorted((root / "examples").glob("*/envelope.yaml")), root / "src/tether/envelope/templates/envelope.yaml"]


@pytest.mark.parametrize("source", ["built-in", *_examples()], ids=str)
def test_every_envelope_tether_ships_reads_back_as_its_dump(source: object) -> None:
    """The check costs no hit: the built-in envelope, the examples' and the template's each read as their dump."""
    from tether.envelope.load import load_envelope
    from tether.hooks.calls import hook_envelope

    envelope = hook_envelope() if source == "built-in" else load_envelope(Path(str(source)))
    v = envcache.validated(envelope, None)
    assert v.dumped
    assert envcache._same(envcache._state(v.envelope), v.dump)
