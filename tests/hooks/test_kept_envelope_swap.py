"""The kept envelope's folder swapped between its check and the file's opening (guard/envcache.py ``load``).

The folder must be this user's (or root's) and writable by no one else; the file is opened inside the folder that
was checked, never by its path again: whoever may rename the folder (the database's directory's writers) cannot
slip in another folder, one others may write, between the check and the open. And what parsed the source
swapped under the kept file: another PyYAML first on the path.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
from pathlib import Path
from typing import Any

import pytest
from test_kept_envelope import SOURCE

import tether.guard.envcache as envcache
from tether.envelope.load import envelope_of


def test_a_folder_swapped_after_its_check_is_not_read_from(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = tmp_path / "envelope.yaml"
    source.write_text(SOURCE)
    source = source.resolve()
    key = envcache.key_of("yaml", hashlib.sha256(SOURCE.encode()).hexdigest())
    good = envcache.validated(envelope_of(SOURCE.encode(), source), source)
    folder = tmp_path / "tether.db.folds"
    assert envcache.save(folder, good, key, None) is not None
    target = Path(envcache.file_for(folder, source))

    # Another folder, writable by all, holding a file of the same name that is another envelope's (write: **),
    # consistent with its header as anyone may make one where there is no key.
    wide = SOURCE.replace('write: ["src/**"]', 'write: ["**"]')
    other = envcache.validated(envelope_of(wide.encode(), source), source)
    head, _, _ = target.read_bytes()[len(envcache.MAGIC) :].partition(b"\n")
    body = pickle.dumps({"envelope": other.envelope, "dump": other.dump}, protocol=5)
    forged = {**json.loads(head), "body_sha256": hashlib.sha256(body).hexdigest()}
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / target.name).write_bytes(envcache.MAGIC + json.dumps(forged).encode() + b"\n" + body)
    theirs.chmod(0o777)
    assert envcache.load(theirs, source, key, None) is None  # read from where it is: refused (others may write)

    real_open = os.open
    swapped: list[bool] = []

    def racing_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if str(path).endswith(envcache.SUFFIX) and not swapped:  # the file's opening, after the folder's check
            folder.rename(tmp_path / "moved")
            folder.symlink_to(theirs)
            swapped.append(True)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", racing_open)
    got = envcache.load(folder, source, key, None)
    monkeypatch.setattr(os, "open", real_open)
    assert swapped == [True]
    assert got is None or got.dump == good.dump  # the checked folder's file, or none: never theirs
    assert other.dump != good.dump


def test_another_yaml_parser_is_a_miss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same bytes, the same tether, another PyYAML first on the path (an upgrade): the kept envelope was
    parsed by the old one, so it is not read; the key names the parser's module without importing it."""
    source = tmp_path / "envelope.yaml"
    source.write_text(SOURCE)
    source = source.resolve()
    digest = hashlib.sha256(SOURCE.encode()).hexdigest()
    folder = tmp_path / "tether.db.folds"
    key = envcache.key_of("yaml", digest)
    assert "yaml /" in key["libraries"]  # this environment's PyYAML is named
    assert envcache.save(folder, envcache.validated(envelope_of(SOURCE.encode(), source), source), key, None)
    assert envcache.load(folder, source, envcache.key_of("yaml", digest), None) is not None
    other = tmp_path / "site" / "yaml"
    other.mkdir(parents=True)
    (other / "__init__.py").write_text("__version__ = '99.0'\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    again = envcache.key_of("yaml", digest)
    assert again["libraries"] != key["libraries"]
    assert envcache.load(folder, source, again, None) is None


SEEDED = """
import json, sys
from pathlib import Path
from tether.guard import envcache
from tether.hooks.calls import hook_envelope
folder, source = Path(sys.argv[1]), sys.argv[2]
v = envcache.kept(folder, None if source == "built-in" else Path(source), hook_envelope)
print(json.dumps({"kept": v.kept, "contract": v.contract, "dumped": v.dumped}))
"""


@pytest.mark.parametrize("which", ["built-in", "file"])
def test_written_under_one_hash_seed_read_under_another(tmp_path: Path, which: str) -> None:
    """Fresh interpreters with different hash seeds (set and dict orders differ): the second reads the first's
    file back, with the same contract and dump; a third under a third seed too."""
    import subprocess
    import sys

    source = tmp_path / "envelope.yaml"
    source.write_text(SOURCE)
    arg = "built-in" if which == "built-in" else str(source)
    got = []
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(Path(envcache.__file__).parents[2])}
        out = subprocess.run(
            [sys.executable, "-c", SEEDED, str(tmp_path / "folds"), arg], env=env, capture_output=True, text=True
        )
        assert out.returncode == 0, out.stderr
        got.append(json.loads(out.stdout))
    assert [g["kept"] for g in got] == [False, True, True]
    assert len({(g["contract"], g["dumped"]) for g in got}) == 1


def test_pydantic_cores_stamp_is_its_compiled_module_not_the_folder_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pydantic-core ships a folder named as its compiled module (its type hints) beside it: the key names the module
    import loads (by the suffixes import tries), so another build of it is a miss; a listing took the folder."""
    import _imp

    site = tmp_path / "site" / "pydantic_core"
    (site / "_pydantic_core").mkdir(parents=True)
    module = site / f"_pydantic_core{_imp.extension_suffixes()[0]}"
    module.write_bytes(b"\0" * 100)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    libraries = envcache.key_of("yaml", "0" * 64)["libraries"]
    assert f"pydantic-core {module} 100 " in libraries
    module.write_bytes(b"\0" * 101)  # another build
    assert envcache.key_of("yaml", "0" * 64)["libraries"] != libraries
