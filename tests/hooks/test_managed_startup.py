"""Before a managed install runs the command's interpreter to ask what it imports, it judges what that run
loads first: the interpreter's standard library, found the way CPython's getpath finds it (a venv's ``home``,
the prefix above the interpreter), and the prefix's ``lib``. Each case is a fake prefix in a directory every
user may enter, with a copy of the system's interpreter, in which another user could change one thing: the
install refuses, naming it, and never runs the interpreter."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from tether.hooks import import_roots, status
from tether.hooks.install import main
from tether.hooks.startup import start_roots

pytestmark = pytest.mark.usefixtures("home")


@pytest.fixture
def never_run(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records every interpreter run of the probe: none may happen when the standard library is loose."""
    ran: list[str] = []

    def ask(python: str, code: str) -> object:
        ran.append(python)
        raise import_roots.ProbeError("was run")

    monkeypatch.setattr(import_roots, "ask", ask)
    monkeypatch.setattr(import_roots, "SHOWN", 100)  # every offender named: /tmp/lib is one (see below)
    return ran


@pytest.fixture
def prefix(shared: Path, system_python: str) -> Path:
    """A prefix every user may enter: ``bin/pythonX.Y`` (a copy of the system's) and ``lib/pythonX.Y/os.py``."""
    real = Path(os.path.realpath(system_python))
    (shared / "prefix" / "bin").mkdir(parents=True)
    shutil.copy2(real, shared / "prefix" / "bin" / real.name)
    stdlib = shared / "prefix" / "lib" / real.name
    (stdlib / "encodings").mkdir(parents=True)
    (stdlib / "lib-dynload").mkdir()
    (stdlib / "os.py").write_text("")
    (stdlib / "encodings" / "__init__.py").write_text("")
    for path in [shared / "prefix", *(shared / "prefix").rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    (shared / "prefix" / "bin" / real.name).chmod(0o755)
    return shared / "prefix"


def python_of(prefix: Path) -> Path:
    (python,) = (prefix / "bin").iterdir()
    return python


def install(shared: Path) -> int:
    return main(["claude-code", "--managed", "--managed-dir", str(shared / "m")])


def test_the_standard_library_is_found_as_getpath_finds_it(prefix: Path) -> None:
    python = python_of(prefix)
    found = start_roots(str(python))
    assert not isinstance(found, str), found
    assert found.walk == [prefix / "lib" / python.name]
    assert prefix / "lib" in found.libraries
    assert prefix / "bin" / "lib" / python.name / "os.py" in found.missing  # searched first: whoever can make it
    zipname = "python" + python.name.removeprefix("python").replace(".", "") + ".zip"
    assert prefix / "lib" / zipname in found.missing and Path("/lib") / zipname in found.missing


def test_a_stdlib_module_another_user_could_change_is_refused_before_the_interpreter_runs(
    shared: Path, prefix: Path, never_run: list[str], monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    python = python_of(prefix)
    module = prefix / "lib" / python.name / "encodings" / "__init__.py"
    module.chmod(0o666)
    monkeypatch.setattr(sys, "executable", str(python))
    assert install(shared) == 2
    assert f"{module} (mode -rw-rw-rw-: users other than its owner can change it)" in capsys.readouterr().err
    assert never_run == [] and not (shared / "m").exists()


def test_a_venv_is_judged_by_the_home_its_pyvenv_cfg_names(
    shared: Path, prefix: Path, never_run: list[str], monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    python = python_of(prefix)
    dynload = prefix / "lib" / python.name / "lib-dynload"
    dynload.chmod(0o777)
    venv = shared / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python3").symlink_to(python)
    (venv / "pyvenv.cfg").write_text(f"home = {prefix / 'bin'}\n")
    found = start_roots(str(venv / "bin" / "python3"))
    assert not isinstance(found, str) and found.walk == [prefix / "lib" / python.name]
    monkeypatch.setattr(sys, "executable", str(venv / "bin" / "python3"))
    assert install(shared) == 2
    assert f"{dynload} (mode drwxrwxrwx" in capsys.readouterr().err
    assert never_run == []


def test_a_place_the_search_looks_first_that_others_could_fill_is_refused(
    shared: Path, prefix: Path, never_run: list[str], monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """getpath looks for ``lib/pythonXY.zip`` and ``lib/pythonX.Y/os.py`` from the interpreter's directory up:
    a ``bin/lib`` another user may write in is where they make a standard library of their own."""
    python = python_of(prefix)
    (prefix / "bin" / "lib").mkdir()
    (prefix / "bin" / "lib").chmod(0o777)
    monkeypatch.setattr(sys, "executable", str(python))
    assert install(shared) == 2
    err = capsys.readouterr().err
    assert f"{prefix / 'bin' / 'lib'} (mode drwxrwxrwx" in err and "(not there yet" in err
    assert never_run == []


def test_a_libpython_another_user_could_change_is_refused(
    shared: Path, prefix: Path, never_run: list[str], monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    python = python_of(prefix)
    library = prefix / "lib" / f"lib{python.name}.so.1.0"
    library.write_bytes(b"")
    library.chmod(0o666)
    monkeypatch.setattr(sys, "executable", str(python))
    assert install(shared) == 2
    assert f"{library} (mode -rw-rw-rw-" in capsys.readouterr().err
    assert never_run == []


def test_a_prefix_under_tmp_is_refused(
    shared: Path, prefix: Path, never_run: list[str], monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """getpath searches up to ``/`` for ``lib/pythonXY.zip`` before the standard library: under ``/tmp`` every
    user can make ``/tmp/lib/python3XY.zip`` and have the interpreter import it first."""
    monkeypatch.setattr(sys, "executable", str(python_of(prefix)))
    assert install(shared) == 2
    assert "/tmp/lib/python3" in capsys.readouterr().err
    assert never_run == []


@pytest.mark.parametrize("case", ["no version", "pypy", "no stdlib", "pth", "libpython pth", "build", "relative home"])
def test_what_cannot_be_derived_fails_closed(prefix: Path, never_run: list[str], case: str) -> None:
    python = python_of(prefix)
    if case == "libpython pth":
        (prefix / "lib" / f"lib{python.name}.so.1.0").write_bytes(b"")
        (prefix / "lib" / f"lib{python.name}.so.1.0._pth").write_text("/anywhere\n")
    if case == "relative home":
        (prefix / "venv" / "bin").mkdir(parents=True)
        (prefix / "venv" / "bin" / "python3").symlink_to(python)
        (prefix / "venv" / "pyvenv.cfg").write_text("home = prefix/bin\n")  # from the hook's working directory
        python = prefix / "venv" / "bin" / "python3"
    if case == "no version":
        python = python.rename(python.with_name("python3"))
    elif case == "pypy":
        python = python.rename(python.with_name("pypy3.10"))
    elif case == "no stdlib":
        python = python.rename(python.with_name("python3.99"))  # no python3.99/os.py up to /
    elif case == "pth":
        Path(f"{python}._pth").write_text("/anywhere\n")
    elif case == "build":
        (prefix / "bin" / "pybuilddir.txt").write_text("build/lib\n")
    found = start_roots(str(python))
    assert isinstance(found, str) and found.startswith(f"{python} (what it imports cannot be asked: its standard")
    why = {
        "no version": "does not say its version",
        "pypy": "is PyPy's, whose layout is not CPython's",
        "no stdlib": "no python3.99 found above",
        "pth": "._pth replaces its path",
        "libpython pth": "a ._pth file in",
        "build": "build directory",
        "relative home": "relative home, prefix/bin",
    }
    assert why[case] in found, found
    assert never_run == []


def test_the_system_interpreter_is_judged_as_before(system_python: str) -> None:
    found = start_roots(system_python)
    assert not isinstance(found, str), found
    real = Path(os.path.realpath(system_python))
    assert any((root / "os.py").is_file() and root.name == real.name for root in found.walk), found


def test_status_does_not_run_an_interpreter_whose_standard_library_another_user_could_change(
    tmp_path: Path, prefix: Path, never_run: list[str], monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """``sudo tether hook status`` reading a developer's settings asks the interpreter a user layer names where
    tether is, unless it could run what someone other than root wrote: its standard library counts."""
    python = python_of(prefix)
    module = prefix / "lib" / python.name / "encodings" / "__init__.py"
    module.chmod(0o666)
    monkeypatch.setattr(sys, "executable", str(python))
    project = tmp_path / "project"
    project.mkdir()
    assert main(["claude-code", "--user"]) == 0
    capsys.readouterr()
    status.main(["claude-code", "--dir", str(project), "--managed-dir", str(prefix / "m"), "--json"])
    out = json.loads(capsys.readouterr().out)
    (user,) = [layer for layer in out["agents"]["claude-code"]["layers"] if layer["layer"] == "user"]
    (cmd,) = user["commands"]
    assert f"{python} loads what is not known to be safe to run" in cmd["notes"][0] and str(module) in cmd["notes"][0]
    assert cmd["runnable"] is False and never_run == []
