"""The code that wrote a cache file (guard/cachefile.py ``code_made``, ``runs_code``): the modules of tether the writer
had imported, by name, file, size and mtime, and their folders by mtime. A reader takes the file only when each is as it
was and each it imported too is from the same file. Attacked on a copy of tether, in processes of their own: a module
edited in place, touched, a module added beside one, a package made to shadow one; and with headers of every wrong
shape, which are a miss and never an error."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import tether
from tether.guard import cachefile

#: The writer imports ``tether.wildmatch`` too, which the reader does not.
WRITE = "import json, tether.wildmatch, tether.guard.cachefile as c; print(json.dumps(c.code_made()))"
READ = "import json, sys, tether.guard.cachefile as c; print(json.dumps(c.runs_code(json.load(sys.stdin))))"


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of tether's package (its sources only) to change."""
    root = tmp_path_factory.mktemp("made")
    shutil.copytree(Path(tether.__file__).parent, root / "tether", ignore=shutil.ignore_patterns("__pycache__"))
    return root


def run(tree: Path, code: str, stdin: str = "") -> Any:
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run([sys.executable, "-c", code], input=stdin, capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout)


def made(tree: Path) -> dict[str, Any]:
    code = run(tree, WRITE)
    assert isinstance(code, dict)
    return code


def runs(tree: Path, code: dict[str, Any]) -> bool:
    answer = run(tree, READ, json.dumps(code))
    assert isinstance(answer, bool)
    return answer


def later(path: Path) -> None:
    """``path``'s mtime a second on, whatever the clock's resolution."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def test_it_names_the_modules_the_writer_imported_as_they_are(tree: Path) -> None:
    code = made(tree)
    root = tree / "tether"
    assert {"tether", "tether.guard", "tether.guard.cachefile", "tether.jsonc"} <= set(code["modules"])
    assert "tether.cli.main" not in code["modules"]  # never imported by the writer
    for rel, size, mtime in code["modules"].values():
        st = (root / rel).stat()
        assert (size, mtime) == (st.st_size, st.st_mtime_ns)
    assert {"", "guard"} <= set(code["folders"])
    assert runs(tree, code)


def test_a_module_the_writer_imported_edited_or_touched_is_a_miss(tree: Path) -> None:
    code = made(tree)
    module = tree / "tether" / "jsonc.py"
    before = module.stat()
    module.write_text(module.read_text() + "\n# edited\n")
    assert not runs(tree, code)
    module.write_text(module.read_text().removesuffix("\n# edited\n"))
    os.utime(module, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert runs(tree, code)  # the same bytes, size and mtime: the same code
    later(module)
    assert not runs(tree, code)


#: A writer whose module changes on disk after it first saw it (a checkout moving under a running process): what it
#: writes later still names the file as it loaded it, so a reader of the code on disk now does not take it.
RACED = (
    "import json, pathlib, sys, tether.wildmatch, tether.guard.cachefile as c; first = c.code_made(); "
    "m = pathlib.Path(sys.argv[1]); m.write_text(m.read_text() + '\\n# pulled\\n'); "
    "print(json.dumps([first, c.code_made()]))"
)


def test_a_module_changed_after_the_writer_loaded_it_is_named_as_loaded(tree: Path) -> None:
    module = tree / "tether" / "wildmatch.py"
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run([sys.executable, "-c", RACED, str(module)], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    first, then = json.loads(out.stdout)
    assert then["modules"]["tether.wildmatch"] == first["modules"]["tether.wildmatch"]
    assert then["modules"]["tether.wildmatch"][1] != module.stat().st_size  # the file on disk is another now
    assert not runs(tree, then)


def test_a_module_the_writer_did_not_import_changes_nothing(tree: Path) -> None:
    """What the writer never ran made nothing in the file: the point of naming only what it imported."""
    code = made(tree)
    module = tree / "tether" / "cli" / "main.py"
    st = (tree / "tether" / "cli").stat()
    module.write_text(module.read_text() + "\n# edited\n")
    assert (tree / "tether" / "cli").stat().st_mtime_ns == st.st_mtime_ns
    assert runs(tree, code)


def shadow(tether: Path) -> None:
    """``tether.guard.cachefile`` made a package of the same code: the reader imports it from another file."""
    (tether / "guard" / "cachefile").mkdir()
    shutil.copy(tether / "guard" / "cachefile.py", tether / "guard" / "cachefile" / "__init__.py")


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda t: (t / "guard" / "newmodule.py").write_text("x = 1\n"), id="a-module-added-beside"),
        pytest.param(lambda t: (t / "guard" / "log").mkdir(), id="a-folder-made-beside"),
        pytest.param(shadow, id="a-module-shadowed-by-a-package"),
        pytest.param(lambda t: (t / "wildmatch.py").rename(t / "wildmatch_.py"), id="a-module-renamed"),
    ],
)
def test_a_folder_of_the_writers_modules_changed_is_a_miss(tmp_path: Path, change: Any) -> None:
    shutil.copytree(Path(tether.__file__).parent, tmp_path / "tether", ignore=shutil.ignore_patterns("__pycache__"))
    code = made(tmp_path)
    assert "tether.wildmatch" in code["modules"]
    change(tmp_path / "tether")
    assert not runs(tmp_path, code)


def test_another_tree_is_the_same_code_only_while_its_files_are(tree: Path, tmp_path: Path) -> None:
    """A copy of the tree whose files keep their sizes and mtimes is the same code to this check (as to the stamp of
    every module before it, which named paths from the package); one file's mtime moved, it is another."""
    shutil.copytree(tree / "tether", tmp_path / "tether", ignore=shutil.ignore_patterns("__pycache__"))
    code = made(tree)
    assert runs(tmp_path, code)
    later(tmp_path / "tether" / "canonical.py")
    assert not runs(tmp_path, code)


def test_without_sources_nothing_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cachefile, "_package", lambda: None)
    assert cachefile.code_made() is None and not cachefile.has_sources()
    assert not cachefile.runs_code({"modules": {"tether": ["__init__.py", 1, 1]}, "folders": {}})


def this() -> dict[str, Any]:
    code = cachefile.code_made()
    assert code is not None and cachefile.runs_code(code)
    return code


def row(code: dict[str, Any], value: Any, name: str = "tether.jsonc") -> dict[str, Any]:
    return {**code, "modules": {**code["modules"], name: value}}


@pytest.mark.parametrize(
    "forge",
    [
        pytest.param(lambda c: "a stamp of every module", id="a-string"),
        pytest.param(lambda c: None, id="none"),
        pytest.param(lambda c: [c], id="a-list"),
        pytest.param(lambda c: {**c, "more": 1}, id="another-key"),
        pytest.param(lambda c: {"modules": c["modules"]}, id="no-folders"),
        pytest.param(lambda c: {**c, "modules": {}}, id="no-modules"),
        pytest.param(lambda c: {**c, "modules": list(c["modules"].values())}, id="modules-a-list"),
        pytest.param(lambda c: row(c, ["jsonc.py", 1]), id="a-short-row"),
        pytest.param(lambda c: row(c, ("jsonc.py", *c["modules"]["tether.jsonc"][1:])), id="a-tuple"),
        pytest.param(lambda c: row(c, ["jsonc.py", float(c["modules"]["tether.jsonc"][1]), 0]), id="a-float"),
        pytest.param(lambda c: row(c, ["jsonc.py", True, c["modules"]["tether.jsonc"][2]]), id="a-bool"),
        pytest.param(lambda c: row(c, ["../tether/jsonc.py", *c["modules"]["tether.jsonc"][1:]]), id="dot-dot"),
        pytest.param(lambda c: row(c, ["/etc/passwd.py", 1, 1]), id="absolute"),
        pytest.param(lambda c: row(c, ["./jsonc.py", *c["modules"]["tether.jsonc"][1:]]), id="dot"),
        pytest.param(lambda c: row(c, ["guard//cachefile.py", *c["modules"]["tether.jsonc"][1:]]), id="empty-part"),
        pytest.param(lambda c: row(c, ["jsonc.py\0", *c["modules"]["tether.jsonc"][1:]]), id="nul"),
        pytest.param(lambda c: row(c, [7, 1, 1]), id="a-number-for-a-path"),
        pytest.param(lambda c: row(c, ["guard", 4096, 0]), id="a-folder-for-a-module"),
        pytest.param(lambda c: row(c, c["modules"]["tether.canonical"]), id="another-file-of-its-name"),
        pytest.param(lambda c: {**c, "folders": {**c["folders"], "..": 0}}, id="a-folder-outside"),
        pytest.param(lambda c: {**c, "folders": {**c["folders"], "guard": "0"}}, id="a-folder-mtime-a-string"),
        pytest.param(lambda c: {**c, "folders": {**c["folders"], "nowhere": 0}}, id="a-folder-not-there"),
        pytest.param(lambda c: {**c, "folders": {f"f{i}": 0 for i in range(cachefile.MAX_MADE)}}, id="too-many-names"),
    ],
)
def test_a_header_of_another_shape_is_a_miss(forge: Any) -> None:
    assert cachefile.runs_code(forge(this())) is False


def test_the_daemons_view_is_its_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """``first_seen``: every module stat'ed at once, so what a later write names is the code as it was then."""
    monkeypatch.setattr(cachefile, "_SEEN", {})
    cachefile.first_seen()
    root = Path(tether.__file__).parent
    modules = {str(p) for p in root.rglob("*.py") if "__pycache__" not in p.parts}
    assert modules <= set(cachefile._SEEN)
    stats = dict(cachefile._SEEN)
    monkeypatch.setattr(cachefile, "_stat", lambda path: (0, 0))  # the tree on disk changes: not looked at again
    assert cachefile.code_made() is not None
    assert stats == cachefile._SEEN
