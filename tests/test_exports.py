"""tether.exports resolves and imports a lazy name's home as ``importlib.import_module`` does, without importing the
``importlib`` package (which imports ``warnings``): the same module, and the same error where it refuses."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import tether
from tether.exports import import_module

CASES = (
    ("tether.status", "tether"),
    ("tether.events.chain", "tether.events"),
    (".chain", "tether.events"),
    (".protocol", "tether.events"),
    ("..status", "tether.events"),
    ("..events.chain", "tether.events"),
    ("..", "tether.events"),
    (".", "tether.events"),
    ("json.decoder", "tether"),
)


@pytest.mark.parametrize(("name", "package"), CASES)
def test_the_same_module_as_importlib(name: str, package: str) -> None:
    assert import_module(name, package) is importlib.import_module(name, package)


@pytest.mark.parametrize(("name", "package"), (("...x", "tether.events"), ("..x", "tether")))
def test_beyond_the_top_level_package_is_refused_as_importlib_refuses(name: str, package: str) -> None:
    with pytest.raises(ImportError) as ours:
        import_module(name, package)
    with pytest.raises(ImportError) as theirs:
        importlib.import_module(name, package)
    assert str(ours.value) == str(theirs.value)


def test_a_missing_module_is_the_same_error() -> None:
    with pytest.raises(ModuleNotFoundError) as ours:
        import_module(".no_such_module", "tether.events")
    with pytest.raises(ModuleNotFoundError) as theirs:
        importlib.import_module(".no_such_module", "tether.events")
    assert (str(ours.value), ours.value.name) == (str(theirs.value), theirs.value.name)


def test_a_lazy_name_imports_no_importlib_package() -> None:
    """In a bare interpreter: ``tether`` and a lazy name of the package (``tether.RunStatus``) and of a subpackage by a
    relative home (``tether.events.Store``: ``.protocol``), and still no ``importlib`` package."""
    src = str(Path(tether.__file__).resolve().parent.parent)
    code = (
        f"import sys; sys.path.insert(0, {src!r})\n"
        "import tether.plain; tether.plain.choose()  # as a hook process: plain records, no pydantic (-S)\n"
        "import tether, tether.events\n"
        "assert tether.RunStatus.__module__ == 'tether.status'\n"
        "assert tether.events.Store.__module__ == 'tether.events.protocol'\n"
        "print('importlib' in sys.modules, 'importlib.machinery' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False"]
