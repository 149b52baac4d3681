"""Files Python loads ahead of the sources (extension modules, .pth, sitecustomize) block completion when new.

The attacks: an extension module planted beside ``lib.py`` (ignored by ``.gitignore``, so not in the
snapshot) that makes the failing test pass; a ``.pth`` in a workspace virtualenv that patches ``lib`` at
start-up; a ``.so`` in an ignored ``build/`` directory; a pre-existing extension rewritten in place with its
mtime set back; an extension built by agent-written code during tether's own test run. Real pytest runs
and snapshots; a real extension is compiled where a C compiler and Python's headers exist (elsewhere a file
with the right name is planted: the scan judges names and stamps, it never loads them).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from verify_helpers import envelope

from tether.envelope.schema import Envelope
from tether.sandbox import LocalSandbox
from tether.snapshot import Manifest, MemoryBlobStore, take
from tether.verify import sensors, shadowing
from tether.verify.changes import run_diff
from tether.verify.preflight import record_baseline
from tether.verify.sensors import SensorContext

PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider"
BROKEN, FIXED = "def f():\n    return 1\n", "def f():\n    return 2\n"
TEST = "from lib import f\n\n\ndef test_f():\n    assert f() == 2\n"
EXT = sysconfig.get_config_var("EXT_SUFFIX")  # e.g. .cpython-311-x86_64-linux-gnu.so
C_LIB = """#include <Python.h>
static PyObject *f(PyObject *self, PyObject *args) { return PyLong_FromLong(2); }
static PyMethodDef methods[] = {{"f", f, METH_NOARGS, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "lib", NULL, -1, methods};
PyMODINIT_FUNC PyInit_lib(void) { return PyModule_Create(&mod); }
"""


def env(command: str = PYTEST) -> Envelope:
    return envelope(verification={"sensors": [{"name": "tests", "required": True}], "test_command": command})


class Run:
    """A run's baseline (snapshot + pre-flight) and its completion check, as the runtime does them."""

    def __init__(self, ws: Path, command: str = PYTEST) -> None:
        self.ws, self.command, self.blobs = ws, command, MemoryBlobStore()
        self.manifest: Manifest = take(ws, blobs=self.blobs)
        check, self.suite, blobs = record_baseline(env(command), ws, LocalSandbox())
        assert check.ok, check.detail
        for data in blobs.values():
            self.blobs.put_blob(data)

    def complete(self) -> tuple[str, list[str], list[str]]:
        """The tests sensor's verdict, its diagnostics' codes and messages."""
        final = take(self.ws, previous=self.manifest, blobs=self.blobs)
        diff = run_diff(self.manifest, final, self.blobs, str(self.ws))
        ctx = SensorContext(
            env(self.command), self.ws, tuple(diff.paths), LocalSandbox(), diff, True, self.manifest, self.blobs
        )
        res = sensors.tests(SensorContext(**{**ctx.__dict__, "test_baseline": self.suite}))
        return res.result, [str(d.code) for d in res.diagnostics], [str(d) for d in res.diagnostics]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "lib.py").write_text(BROKEN)
    (tmp_path / "test_lib.py").write_text(TEST)
    (tmp_path / ".gitignore").write_text("*.so\nbuild/\n.venv/\n")
    return tmp_path


def compiled_lib(tmp_path: Path) -> Path | None:
    """A real extension module ``lib`` whose f() returns 2; None without a compiler or Python's headers."""
    cc = shutil.which("cc")
    include = Path(sysconfig.get_paths()["include"])
    if cc is None or not (include / "Python.h").is_file():
        return None
    src, out = tmp_path / "lib.c", tmp_path / f"lib{EXT}"
    src.write_text(C_LIB)
    done = subprocess.run([cc, "-shared", "-fPIC", f"-I{include}", "-o", str(out), str(src)], capture_output=True)
    return out if done.returncode == 0 else None


def test_an_extension_planted_beside_the_buggy_module_blocks(
    ws: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    run = Run(ws)
    built = compiled_lib(tmp_path_factory.mktemp("cc"))
    planted = ws / f"lib{EXT}"
    if built is not None:
        shutil.copy(built, planted)
        assert LocalSandbox().run(PYTEST, cwd=ws, timeout_s=120).exit_code == 0  # the attack is real
    else:
        planted.write_bytes(b"\x7fELF")
    assert planted.name not in take(ws, previous=run.manifest).entries  # ignored: invisible to the diff
    result, codes, messages = run.complete()
    assert (result, codes) == ("FAIL", ["shadowing.new"])
    assert messages[0].startswith(f"lib{EXT}: extension module created during the run, shadows lib.py")


def test_a_pth_planted_in_a_workspace_virtualenv_blocks(ws: Path) -> None:
    venv = ws / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)], check=True)
    python = venv / "bin" / "python"
    command = f"{python} -m pytest -q -p no:cacheprovider"
    run = Run(ws, command)
    assert run.complete()[0] == "FAIL"  # the bug is still there
    (site,) = (venv / "lib").glob("python*/site-packages")
    patch = "import sys, types; sys.modules['lib'] = types.SimpleNamespace(f=lambda: 2)\n"
    (site / "zz_fix.pth").write_text(patch)
    assert LocalSandbox().run(command, cwd=ws, timeout_s=120).exit_code == 0  # the attack is real
    result, codes, messages = run.complete()
    assert (result, codes) == ("FAIL", ["shadowing.new"])
    assert "zz_fix.pth: start-up file created during the run" in messages[0]


def test_sitecustomize_in_a_virtualenv_blocks(ws: Path) -> None:
    run = Run(ws)
    site = ws / ".venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (site / "sitecustomize.py").write_text("print('hello')\n")
    (ws / "lib.py").write_text(FIXED)
    assert run.complete()[:2] == ("FAIL", ["shadowing.new"])


def test_an_untouched_pre_existing_shadowing_extension_is_reported_not_blocking(ws: Path) -> None:
    (ws / "other.py").write_text("X = 1\n")
    (ws / f"other{EXT}").write_bytes(b"\x7fELF")  # the user's own build artefact, not imported by the tests
    run = Run(ws)
    (ws / "lib.py").write_text(FIXED)  # the honest fix
    result, codes, messages = run.complete()
    assert (result, codes) == ("PASS", ["shadowing.preexisting"])
    assert "shadows other.py (there at the run's start" in messages[0]


def test_a_new_extension_in_an_ignored_build_dir_without_a_source_blocks(ws: Path) -> None:
    run = Run(ws)
    (ws / "lib.py").write_text(FIXED)
    out = ws / "build" / "lib.linux-x86_64-3.11"
    out.mkdir(parents=True)
    (out / f"_speedups{EXT}").write_bytes(b"\x7fELF")
    result, codes, messages = run.complete()
    assert (result, codes) == ("FAIL", ["shadowing.new"])
    assert messages[0].startswith(f"build/lib.linux-x86_64-3.11/_speedups{EXT}: extension module created")


def test_a_pre_existing_extension_rewritten_with_its_stamp_set_back_blocks(ws: Path) -> None:
    so = ws / "helper.abi3.so"
    so.write_bytes(b"\x7fELF-one")
    st = so.stat()
    run = Run(ws)
    (ws / "lib.py").write_text(FIXED)
    with so.open("r+b") as f:  # same inode, same size, mtime put back: only ctime tells
        f.write(b"\x7fELF-two")
    os.utime(so, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert run.complete()[:2] == ("FAIL", ["shadowing.new"])


def test_an_extension_built_by_the_agents_code_during_the_test_run_blocks(ws: Path) -> None:
    """Scanned before the run too late: agent-written conftest.py builds the file while tether's run starts."""
    run = Run(ws)
    (ws / "lib.py").write_text(FIXED)
    (ws / "conftest.py").write_text(
        "import pathlib\npathlib.Path('build').mkdir()\npathlib.Path('build/x.so').write_bytes(b'')\n"
    )
    result, codes, _ = run.complete()
    assert (result, codes) == ("FAIL", ["shadowing.new"])


def test_without_a_baseline_scan_a_shadowing_extension_blocks(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("")
    (tmp_path / "m.so").write_bytes(b"")
    (tmp_path / "ns").mkdir()
    (tmp_path / "ns.pyd").write_bytes(b"")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg.so").write_bytes(b"")  # a package with __init__.py wins over the extension: not shadowed
    found = shadowing.judge(tmp_path, None)
    assert [(f.path, f.code, f.blocking) for f in found] == [
        ("m.so", "shadowing.shadows", True),
        ("ns.pyd", "shadowing.shadows", True),
    ]
    assert "shadows ns/" in found[1].why


def test_the_scan_reads_names_and_stamps_only_and_skips_git_and_tether(tmp_path: Path) -> None:
    for d in (".git/hooks", ".tether", "a/b", "outside"):
        (tmp_path / d).mkdir(parents=True)
    (tmp_path / ".git" / "hooks" / "x.so").write_bytes(b"")
    (tmp_path / ".tether" / "y.pth").write_text("")
    (tmp_path / "a" / "b" / "z.pth").write_text("")
    (tmp_path / "outside" / "w.so").write_bytes(b"")
    (tmp_path / "link").symlink_to(tmp_path / "outside")  # a directory behind a symlink is not entered twice
    (tmp_path / "libfoo.so.1").write_bytes(b"")  # a versioned shared library is not an importable module
    (tmp_path / "not-a-module.so").write_bytes(b"")
    stamps, shadows = shadowing.scan(tmp_path)
    assert sorted(stamps) == ["a/b/z.pth", "outside/w.so"] and shadows == {}
    assert shadowing.load(shadowing.dump(stamps)) == stamps


@pytest.mark.parametrize("blob", [b"[]", b"{", b'{"a.so": [1, 2, 3]}', b'{"a.so": [1, 2, 3, "4"]}'])
def test_a_malformed_baseline_scan_is_refused(blob: bytes) -> None:
    with pytest.raises(ValueError):
        shadowing.load(blob)


def test_an_unreadable_baseline_scan_fails_closed(ws: Path) -> None:
    (ws / "other.py").write_text("X = 1\n")
    (ws / "other.so").write_bytes(b"")
    run = Run(ws)
    run.suite = run.suite.model_copy(update={"loaders": "sha256:" + "0" * 64})  # the blob is missing
    (ws / "lib.py").write_text(FIXED)
    assert run.complete()[:2] == ("FAIL", ["shadowing.shadows"])


def test_many_pre_existing_shadowing_extensions_are_summed_up(ws: Path) -> None:
    for i in range(8):
        (ws / f"m{i}.py").write_text("")
        (ws / f"m{i}.so").write_bytes(b"")
    run = Run(ws)
    (ws / "lib.py").write_text(FIXED)
    result, codes, messages = run.complete()
    assert (result, codes) == ("PASS", ["shadowing.preexisting"] * 6)
    assert (
        messages[-1] == "3 more extension modules shadow a source, all there at the run's start [shadowing.preexisting]"
    )
