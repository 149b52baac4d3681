"""A managed install vouches for everything the hook process imports, not only tether's package: the
dependencies in the interpreter's site-packages, the ``.pth`` files ``site`` reads at every start-up (and the
directories they add), links leading out of the roots. Each case is a venv every user runs, made for the test
with the system's python3, in which another user could change one thing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hookkit import unavailable

from tether.hooks import import_roots, status
from tether.hooks.install import main

pytestmark = pytest.mark.usefixtures("home")


def install(shared: Path) -> int:
    return main(["claude-code", "--managed", "--managed-dir", str(shared / "m")])


def test_a_dependency_another_user_could_change_is_refused(
    shared: Path, venv: Path, site_packages: Path, capsys
) -> None:
    package = site_packages / "yaml"
    package.mkdir()
    (package / "__init__.py").write_text("")
    assert install(shared) == 0, capsys.readouterr().err
    (package / "__init__.py").chmod(0o666)  # any user could put code into every developer's hook process
    assert install(shared) == 2
    err = capsys.readouterr().err
    assert f"{package / '__init__.py'} (mode -rw-rw-rw-: users other than its owner can change it)" in err, err
    assert "anything its interpreter imports" in err
    (package / "__init__.py").chmod(0o644)
    os.chown(package, 65534, 65534)  # another user's directory: they can add a module, or swap it whole
    assert install(shared) == 2
    assert f"{package} (owned by uid 65534, who can change it)" in capsys.readouterr().err


def test_a_planted_pth_file_is_refused_and_never_run(shared: Path, venv: Path, site_packages: Path, capsys) -> None:
    """A ``.pth`` line starting ``import`` runs at every start-up of the interpreter: the installer asks the
    interpreter for its path without running it, and refuses the file when another user could have put it
    there. Only once every root is root's alone does it run the ``.pth`` code (to see what it adds)."""
    marker = shared / "ran"
    pth = site_packages / "zz-planted.pth"
    pth.write_text(f"import os; open({str(marker)!r}, 'w').close()\n")
    os.chown(pth, 65534, 65534)
    assert install(shared) == 2
    assert f"{pth} (owned by uid 65534, who can change it)" in capsys.readouterr().err
    assert not marker.exists(), "asking the interpreter for its path ran another user's .pth line"
    os.chown(pth, 0, 0)
    assert install(shared) == 0, capsys.readouterr().err


def test_a_directory_a_pth_file_adds_is_walked_too(shared: Path, venv: Path, site_packages: Path, capsys) -> None:
    extra = shared / "extra-libs"  # outside the venv: found only by reading the .pth as site does
    extra.mkdir()
    (extra / "helper.py").write_text("")
    (site_packages / "extra.pth").write_text(f"# a comment\n\n{extra}\n")
    assert install(shared) == 0, capsys.readouterr().err
    (extra / "helper.py").chmod(0o646)
    assert install(shared) == 2
    assert f"{extra / 'helper.py'} (mode -rw-r--rw-" in capsys.readouterr().err


def test_a_link_out_of_the_roots_is_judged_where_it_leads(
    shared: Path, venv: Path, site_packages: Path, capsys
) -> None:
    """A package installed as a link (or one swapped for a link): what it leads to, and the directories above
    that, are what the hook imports."""
    elsewhere = shared / "elsewhere" / "pkg"
    elsewhere.mkdir(parents=True)
    (elsewhere / "__init__.py").write_text("")
    (site_packages / "pkg").symlink_to(elsewhere)
    assert install(shared) == 0, capsys.readouterr().err
    (elsewhere / "__init__.py").chmod(0o666)  # inside the directory the link leads to: walked
    assert install(shared) == 2
    assert f"{elsewhere / '__init__.py'} (mode -rw-rw-rw-" in capsys.readouterr().err
    (elsewhere / "__init__.py").chmod(0o644)
    (shared / "elsewhere").chmod(0o777)  # above where it leads: anyone could swap pkg for their own
    assert install(shared) == 2
    err = capsys.readouterr().err
    assert f"{site_packages / 'pkg'} (a link to {elsewhere} (under {shared / 'elsewhere'}" in err, err


def test_offenders_are_named_a_few_at_a_time(shared: Path, venv: Path, site_packages: Path, capsys) -> None:
    for name in "abcdef":
        (site_packages / f"{name}.py").write_text("")
        (site_packages / f"{name}.py").chmod(0o666)
    assert install(shared) == 2
    err = capsys.readouterr().err
    assert err.count("users other than its owner can change it") == import_roots.SHOWN
    assert f"and {6 - import_roots.SHOWN} more like them" in err


def test_a_walk_past_its_bound_fails_closed(shared: Path, venv: Path, monkeypatch, capsys) -> None:
    monkeypatch.setattr(import_roots, "MAX_ENTRIES", 10)
    assert install(shared) == 2
    assert "more than 10 files under" in capsys.readouterr().err
    assert not (shared / "m").exists()


def test_an_interpreter_that_cannot_say_what_it_imports_is_refused(shared: Path, system_python, monkeypatch, capsys):
    fake = shared / "bin" / "python3"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nexit 0\n")  # runs, prints nothing
    fake.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(fake))
    assert install(shared) == 2
    assert f"{fake} (what it imports cannot be asked" in capsys.readouterr().err
    assert import_roots.import_roots(str(shared / "bin" / "sh"), shared) == (
        f"{shared / 'bin' / 'sh'} (what it imports cannot be asked: it does not look like a Python interpreter"
        " (python3, python3.12, pypy3…): not run)"
    )


def test_the_roots_are_the_hook_process_path(venv: Path, site_packages: Path) -> None:
    """The probe's roots are what a hook process has on its path once it loaded ``site``: the interpreter run
    ``-I -S``, the launcher's package directory appended, then ``site.main()`` (tether.hooks.entry.full_path)."""
    extra = venv / "extra"
    extra.mkdir()
    (site_packages / "extra.pth").write_text("extra-not-there\n../../../extra\n")
    python = str(venv / "bin" / "python3")
    code = "import json, site, sys; sys.path.append('/opt/pkg-parent'); site.main(); print(json.dumps(sys.path))"
    real = json.loads(subprocess.run([python, "-I", "-S", "-c", code], capture_output=True, check=True).stdout)
    real_roots = import_roots.outermost(Path(os.path.realpath(p)) for p in real if os.path.exists(p))
    found = import_roots.import_roots(python, Path("/opt/pkg-parent"))
    assert not isinstance(found, str) and found.walk == real_roots
    assert Path(os.path.realpath(extra)) in real_roots
    assert Path("/opt/pkg-parent") in found.missing and site_packages / "extra-not-there" in found.missing, found


def test_the_roots_keep_their_order_whatever_the_hash_seed() -> None:
    """Roots at one depth stay in the order the path gives them (lib before lib64): a set's order would change
    from run to run, and with it which offenders a refusal names first."""
    a, b, c = Path("/x/lib/python3.11"), Path("/x/lib64/python3.11"), Path("/x/lib/python3.11/lib-dynload")
    assert import_roots.outermost([a, c, b, a]) == [a, b]
    assert import_roots.outermost([b, c, a]) == [b, a]
    code = "from pathlib import Path; from tether.hooks.import_roots import outermost; "
    code += f"print(outermost(Path(p) for p in {[str(p) for p in (b, a, Path('/x/lib32/python3.11'))]!r}))"
    shown = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            capture_output=True,
            text=True,
        ).stdout
        for seed in range(6)
    }
    assert len(shown) == 1 and "lib64" in next(iter(shown)).split(",")[0], shown


def test_a_path_entry_not_there_yet_is_judged_where_it_would_be_made(shared: Path, site_packages: Path, capsys) -> None:
    """``site`` adds a directory a ``.pth`` file names once it exists: whoever can make it there adds a root."""
    drop = shared / "drop"
    drop.mkdir()
    (site_packages / "later.pth").write_text(f"{drop / 'later'}\n")
    assert install(shared) == 0, capsys.readouterr().err
    drop.chmod(0o777)
    assert install(shared) == 2
    err = capsys.readouterr().err
    assert f"{drop / 'later'} (not there yet, and whoever can make it there adds to the path: {drop} (mode" in err


def test_status_reports_a_loose_dependency_of_a_managed_command(
    shared: Path, venv: Path, site_packages: Path, capsys
) -> None:
    assert install(shared) == 0
    capsys.readouterr()
    (site_packages / "sitecustomize.py").write_text("")  # imported at every start-up once site loads
    os.chown(site_packages / "sitecustomize.py", 65534, 65534)
    assert status.main(["claude-code", "--managed-dir", str(shared / "m"), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert any(
        "sitecustomize.py (owned by uid 65534, who can change it)" in p["problem"]
        and "runs code as all" in p["problem"]
        for p in out["problems"]
    ), out["problems"]


def test_status_finds_tether_without_running_pth_code_or_sitecustomize(
    shared: Path, site_packages: Path, tmp_path: Path, capsys
) -> None:
    """``sudo tether hook status`` asks the interpreter in a hook command which tether it finds: that must not run
    a ``.pth`` line or a ``sitecustomize`` another user could have planted in its site-packages (as root)."""
    marker = shared / "ran"
    src = Path(status.__file__).resolve().parents[2]
    (site_packages / "tether-src.pth").write_text(f"{src}\n")  # how an editable install puts tether on the path
    (site_packages / "zz.pth").write_text(f"import os; open({str(marker)!r}, 'a').write('pth')\n")
    (site_packages / "sitecustomize.py").write_text(f"open({str(marker)!r}, 'a').write('sitecustomize')\n")
    assert main(["claude-code", "--user"]) == 0
    capsys.readouterr()
    status.main(["claude-code", "--dir", str(tmp_path), "--managed-dir", str(shared / "none"), "--json"])
    out = json.loads(capsys.readouterr().out)
    (layer,) = [layer for layer in out["agents"]["claude-code"]["layers"] if layer["commands"]]
    (cmd,) = layer["commands"]
    assert cmd["runnable"] and cmd["package"] == str(src / "tether") and cmd["version"] == out["tether"]["version"]
    assert not marker.exists(), f"status ran {marker.read_text()}"


def test_what_pth_code_adds_to_the_path_is_walked_once_the_roots_are_vouched_for(
    shared: Path, site_packages: Path, capsys
) -> None:
    """A ``.pth`` line of code can put any directory on the path: read, the line says nothing; run (once all it
    could run is root's), what it added shows."""
    added = shared / "added-by-code"
    added.mkdir()
    (added / "mod.py").write_text("")
    (site_packages / "code.pth").write_text(f"import sys; sys.path.append({str(added)!r})\n")
    assert install(shared) == 0, capsys.readouterr().err
    (added / "mod.py").chmod(0o666)
    assert install(shared) == 2
    assert f"{added / 'mod.py'} (mode -rw-rw-rw-" in capsys.readouterr().err


EDITABLE_FINDER = """
import sys
MAPPING: dict[str, str] = {{"demo": {demo!r}}}
NAMESPACES: dict[str, list[str]] = {{}}
class _EditableFinder:
    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        return None
def install():
    sys.meta_path.append(_EditableFinder)
"""


def test_an_editable_finder_is_walked_where_it_maps_modules(shared: Path, site_packages: Path, capsys) -> None:
    """setuptools' editable install of a flat project: a finder that maps ``demo`` to its source folder,
    which is on no path entry."""
    demo = shared / "work" / "demo"
    demo.mkdir(parents=True)
    (demo / "__init__.py").write_text("")
    (site_packages / "__editable___demo_0_1_finder.py").write_text(EDITABLE_FINDER.format(demo=str(demo)))
    (site_packages / "__editable__.demo-0.1.pth").write_text(
        "import __editable___demo_0_1_finder; __editable___demo_0_1_finder.install()\n"
    )
    assert install(shared) == 0, capsys.readouterr().err
    (demo / "__init__.py").chmod(0o666)
    assert install(shared) == 2
    assert f"{demo / '__init__.py'} (mode -rw-rw-rw-" in capsys.readouterr().err


def test_a_finder_that_does_not_say_where_it_imports_from_is_refused(shared: Path, site_packages: Path, capsys) -> None:
    (site_packages / "odd.py").write_text("class Odd:\n    def find_spec(self, *args):\n        return None\n")
    (site_packages / "odd.pth").write_text("import sys, odd; sys.meta_path.append(odd.Odd())\n")
    assert install(shared) == 2
    assert "installs an import finder, odd.Odd, that does not say where it finds modules" in capsys.readouterr().err


def test_a_root_named_through_a_link_others_could_swap_is_refused(shared: Path, site_packages: Path, capsys) -> None:
    """A ``.pth`` names ``open/lib``, a link to a directory only root may change: where it leads is fine, but
    whoever may write in ``open`` can point the link elsewhere."""
    safe = shared / "safe" / "lib"
    safe.mkdir(parents=True)
    (safe / "m.py").write_text("")
    (shared / "open").mkdir()
    (shared / "open" / "lib").symlink_to(safe)
    (site_packages / "libs.pth").write_text(f"{shared / 'open' / 'lib'}\n")
    assert install(shared) == 0, capsys.readouterr().err
    (shared / "open").chmod(0o777)
    assert install(shared) == 2
    assert f"{shared / 'open' / 'lib'} (under {shared / 'open'} (mode drwxrwxrwx" in capsys.readouterr().err


def test_a_shared_library_loaded_from_elsewhere_is_judged_where_it_lies(
    shared: Path, site_packages: Path, capsys
) -> None:
    """Native code the process maps (``libpython`` of a shared build, a library an extension or a ``.pth``
    loads) runs as every user as much as a module does: each file mapped, with the directories above it."""
    system = next(Path("/usr/lib").rglob("libz.so.1*"), None) or next(Path("/lib").rglob("libz.so.1*"), None)
    if system is None:
        unavailable("no libz to stand for a native library")
    native = shared / "native"
    native.mkdir()
    library = native / "libdemo.so"
    library.write_bytes(system.read_bytes())
    (site_packages / "native.pth").write_text(f"import ctypes; ctypes.CDLL({str(library)!r})\n")
    assert install(shared) == 0, capsys.readouterr().err
    native.chmod(0o777)  # another user could swap the library every developer's hook maps
    assert install(shared) == 2
    assert f"{library} (under {native} (mode drwxrwxrwx" in capsys.readouterr().err


def test_a_dependency_other_users_cannot_read_is_refused(shared: Path, site_packages: Path, capsys) -> None:
    """``pip`` run as root under a umask of ``077`` writes ``0600`` files: every other developer's hook would
    fail to import them, and so refuse every call."""
    package = site_packages / "yaml"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "__init__.py").chmod(0o600)
    assert install(shared) == 2
    err = capsys.readouterr().err
    assert f"other users cannot use {package / '__init__.py'} (mode -rw-------: other users cannot read it)" in err
    (package / "__init__.py").chmod(0o644)
    package.chmod(0o700)
    assert install(shared) == 2
    assert f"{package} (mode drwx------: other users cannot read it)" in capsys.readouterr().err
    package.chmod(0o755)
    assert install(shared) == 0, capsys.readouterr().err
