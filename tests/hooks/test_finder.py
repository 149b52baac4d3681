"""tether.hooks.finder: the spec the interpreter's path finder gives a module, or no answer at all.

Each answer is held to ``PathFinder.find_spec``'s for the same name and path: on every tether module loaded here,
and on a hostile package (an extension module, a package and bytecode beside a source of the same name, a
directory named like a source file, a directory changed since it was listed).
"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.machinery import PathFinder
from pathlib import Path
from typing import Any

import pytest

import tether
from tether.hooks import finder as own

pytestmark = pytest.mark.skipif(not own.MIRRORED, reason="mirrors Python 3.11's FileFinder; elsewhere not installed")


def shown(spec: Any) -> Any:
    """What a spec tells the import system, comparable between two finders."""
    if spec is None:
        return None
    loader = spec.loader
    return (
        spec.name, spec.origin, type(loader), getattr(loader, "name", None), getattr(loader, "path", None),
        spec.submodule_search_locations, spec.cached, spec.has_location, spec.parent, spec.loader_state,
    )  # fmt: skip


def answers(name: str, path: list[str]) -> tuple[Any, Any]:
    """(ours, the path finder's), the path finder asked second (it may list the directory again)."""
    ours = own.OwnFinder().find_spec(name, path)
    return shown(ours), shown(PathFinder.find_spec(name, path))


def test_every_loaded_tether_module_gets_the_path_finders_spec() -> None:
    import tether.hooks.entry  # noqa: F401  (a few modules at least)

    answered = 0
    for name in sorted(n for n in sys.modules if n.startswith("tether.")):
        parent = sys.modules[name.rpartition(".")[0]]
        path = list(getattr(parent, "__path__", []))
        PathFinder.find_spec(name, path)  # the directory listed and current, as after the package's first import
        ours, theirs = answers(name, path)
        assert ours is None or ours == theirs, name
        answered += ours is not None
    assert answered >= 5  # the plain modules of tether's packages are answered, not left to the walk


@pytest.fixture
def probe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "probe"
    folder.mkdir()
    monkeypatch.setattr(own, "PREFIX", "probe.")
    return folder


def test_a_hostile_package_gets_the_path_finders_answer_or_none(probe: Path) -> None:
    extension = next(s for s in __import__("importlib.machinery").machinery.EXTENSION_SUFFIXES)
    (probe / "plain.py").write_text("x = 1\n")
    (probe / "ext.py").write_text("x = 1\n")
    (probe / f"ext{extension}").write_bytes(b"not really")
    (probe / "pkg").mkdir()
    (probe / "pkg" / "__init__.py").write_text("")
    (probe / "pkg.py").write_text("x = 1\n")
    (probe / "space").mkdir()
    (probe / "space.py").write_text("x = 1\n")
    (probe / "compiled.pyc").write_bytes(b"")
    (probe / "dir.py").mkdir()
    path = [str(probe)]
    PathFinder.find_spec("probe.plain", path)
    for name in ("plain", "ext", "pkg", "space", "compiled", "dir", "missing"):
        ours, theirs = answers(f"probe.{name}", path)
        assert ours is None or ours == theirs, name
        assert (ours is not None) == (name == "plain"), name
    assert answers("other.plain", path)[0] is None  # not a name it answers for
    assert own.OwnFinder().find_spec("probe.plain", [str(probe), str(probe)]) is None  # a package of two places
    assert own.OwnFinder().find_spec("probe.plain", None) is None


def test_a_directory_changed_since_it_was_listed_is_left_to_the_path_finder(probe: Path) -> None:
    path = [str(probe)]
    (probe / "first.py").write_text("")
    PathFinder.find_spec("probe.first", path)
    (probe / "late.py").write_text("")
    stat = os.stat(probe)
    os.utime(probe, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # the listing is stale, whatever the clock
    assert own.OwnFinder().find_spec("probe.late", path) is None  # not "no such module"
    theirs = answers("probe.late", path)[1]  # the path finder listed it again: answered as it answers
    assert theirs is not None and answers("probe.late", path)[0] == theirs


def test_a_directory_no_file_finder_has_listed_is_left_to_the_path_finder(probe: Path) -> None:
    (probe / "alone.py").write_text("")
    sys.path_importer_cache.pop(str(probe), None)
    assert own.OwnFinder().find_spec("probe.alone", [str(probe)]) is None


def test_the_finder_is_gone_once_the_deciding_code_is_imported() -> None:
    probe = (
        "import sys\nfrom tether.hooks import entry\nentry.import_deciding_code()\n"
        "print([type(f).__name__ for f in sys.meta_path].count('OwnFinder'))\n"
    )
    src = str(Path(tether.__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": src}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0"


def test_the_finder_is_first_only_within_its_block_also_when_the_block_raises() -> None:
    finder = own.OwnFinder()
    with pytest.raises(ImportError), finder:
        assert sys.meta_path[0] is finder
        raise ImportError("an import of the deciding code failed")
    assert finder not in sys.meta_path


@pytest.mark.parametrize("flags", [[], ["-O"], ["-X", "pycache_prefix={tmp}"]])
def test_the_bytecodes_file_is_the_one_cache_from_source_names(flags: list[str], tmp_path: Path) -> None:
    """Under an optimisation level or a pycache prefix too: each answer's ``cached`` is the path finder's."""
    probe = """
import sys
from importlib.machinery import PathFinder
from tether.hooks import entry
from tether.hooks.finder import OwnFinder
entry.import_deciding_code()
answered = 0
for name in sorted(n for n in sys.modules if n.startswith("tether.")):
    path = list(getattr(sys.modules[name.rpartition(".")[0]], "__path__", []))
    theirs = PathFinder.find_spec(name, path)
    ours = OwnFinder().find_spec(name, path)
    if ours is not None:
        answered += 1
        seen = [(s.origin, s.cached, s.has_location, s.submodule_search_locations) for s in (ours, theirs)]
        if seen[0] != seen[1]:  # not assert: -O drops it
            raise SystemExit(f"{name}: {seen}")
print(answered)
"""
    src = str(Path(tether.__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": src}
    command = [sys.executable, *[f.format(tmp=tmp_path) for f in flags], "-c", probe]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) >= 50
