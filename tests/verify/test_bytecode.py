"""Completion runs reuse only bytecode tether's baseline run compiled, for sources the agent left alone.

Each attack plants bytecode that would make a failing test pass (or hide a fix) where Python would look
for it, and checks that the tests sensor's run does not use it; real pytest runs, real snapshots.
"""

from __future__ import annotations

import importlib.util
import os
import py_compile
import sys
from pathlib import Path

import pytest
from verify_helpers import envelope

from tether.canonical import bytes_hash
from tether.envelope.schema import Envelope
from tether.events.kinds_baseline import CachedBytecode
from tether.sandbox import BwrapSandbox, LocalSandbox
from tether.snapshot import Manifest, MemoryBlobStore, take
from tether.verify import bytecode, sensors
from tether.verify.changes import run_diff
from tether.verify.preflight import record_baseline, run_preflight
from tether.verify.runner import CommandSandbox
from tether.verify.sensors import SensorContext

PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider"
BROKEN, FIXED, CHEAT = "def f():\n    return 1\n", "def f():\n    return 2\n", "def f():\n    return 3\n"
TEST = "from lib import f\n\n\ndef test_f():\n    assert f() == 2\n"
STAMP = 1_700_000_000


def env() -> Envelope:
    return envelope(verification={"sensors": [{"name": "tests", "required": True}], "test_command": PYTEST})


class Run:
    """A run's baseline (snapshot + pre-flight) and its completion check, as the runtime does them."""

    def __init__(self, ws: Path, sandbox: CommandSandbox | None = None) -> None:
        self.ws, self.sandbox, self.blobs = ws, sandbox or LocalSandbox(), MemoryBlobStore()
        self.manifest: Manifest = take(ws, blobs=self.blobs)
        check, self.suite, blobs = record_baseline(env(), ws, self.sandbox)
        assert check.ok, check.detail
        for data in blobs.values():
            self.blobs.put_blob(data)

    def complete(self) -> tuple[str, list[str]]:
        final = take(self.ws, previous=self.manifest, blobs=self.blobs)
        diff = run_diff(self.manifest, final, self.blobs, str(self.ws))
        ctx = SensorContext(env(), self.ws, tuple(diff.paths), self.sandbox, diff, True, self.manifest, self.blobs)
        res = sensors.tests(SensorContext(**{**ctx.__dict__, "test_baseline": self.suite}))
        return res.result, [str(d.code) for d in res.diagnostics]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "lib.py").write_text(BROKEN)
    (tmp_path / "test_lib.py").write_text(TEST)
    return tmp_path


def plant(source: Path, code: str) -> bytes:
    """Compile ``code`` into the .pyc Python would use for ``source``, stamped with source's mtime and size."""
    st = source.stat()
    assert len(code) == st.st_size
    saved = source.read_text()
    source.write_text(code)
    os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns))
    pyc = Path(importlib.util.cache_from_source(str(source)))
    py_compile.compile(str(source), cfile=str(pyc), doraise=True)
    source.write_text(saved)
    os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns))
    return pyc.read_bytes()


def test_the_baseline_run_compiles_from_source_and_keeps_what_it_compiled(ws: Path) -> None:
    os.utime(ws / "lib.py", (STAMP, STAMP))
    plant(ws / "lib.py", FIXED)  # the user's stale bytecode: the baseline must not run it, nor keep it
    run = Run(ws)
    assert [t.outcome for t in run.suite.tests] == ["failed"]
    kept = {b.source: b for b in run.suite.bytecode}
    assert {"lib.py", "test_lib.py"} <= set(kept)
    assert kept["lib.py"].source_digest == bytes_hash(BROKEN.encode())
    assert any("-pytest-" in b.path for b in run.suite.bytecode)  # pytest's rewritten test module too
    assert all(bytes_hash(run.blobs.get_blob(b.blob)) == b.blob for b in run.suite.bytecode)


def test_unchanged_sources_get_their_baseline_bytecode_back(ws: Path) -> None:
    (ws / "other.py").write_text("X = 1\n")
    (ws / "test_other.py").write_text("from other import X\n\n\ndef test_x():\n    assert X == 1\n")
    run = Run(ws)
    (ws / "lib.py").write_text(FIXED)  # the agent's fix
    assert bytecode.drop(ws).complete
    restored = bytecode.restore(ws, run.suite.bytecode, lambda s, d: s != "lib.py", run.blobs)
    assert restored >= 3  # other.py, test_other.py (CPython's and pytest's), test_lib.py
    pyc = Path(importlib.util.cache_from_source(str(ws / "other.py")))
    assert bytes_hash(pyc.read_bytes()) == next(
        b.blob for b in run.suite.bytecode if b.path.startswith("__pycache__/other.")
    )
    assert run.complete() == ("PASS", [])


def test_bytecode_planted_for_an_unchanged_source_is_not_run(ws: Path) -> None:
    """The agent leaves lib.py alone and plants bytecode that makes the failing test pass."""
    run = Run(ws)
    planted = plant(ws / "lib.py", FIXED)
    assert LocalSandbox().run(PYTEST, cwd=ws, timeout_s=120).exit_code == 0  # the attack is real
    assert run.complete() == ("FAIL", ["test_lib.py::test_f"])
    pyc = Path(importlib.util.cache_from_source(str(ws / "lib.py")))
    assert pyc.read_bytes() != planted


def test_a_same_size_edit_with_its_mtime_set_back_runs_from_source(ws: Path) -> None:
    """Timestamps cannot make tether restore the baseline's bytecode for a changed file (ctime, bytes)."""
    lib = ws / "lib.py"
    os.utime(lib, (STAMP, STAMP))
    run = Run(ws)
    lib.write_text(FIXED)
    os.utime(lib, (STAMP, STAMP))
    assert run.complete() == ("PASS", [])


def test_a_planted_pytest_rewrite_cache_for_a_test_file_is_not_run(ws: Path) -> None:
    """pytest checks its cache by a 64-bit source hash with a public key: forgeable, so never trusted."""
    run = Run(ws)
    (ws / "lib.py").write_text(FIXED.replace("2", "5"))  # still wrong
    test = ws / "test_lib.py"
    test.write_text(TEST.replace("f() == 2", "f() >= 0"))
    assert LocalSandbox().run(PYTEST, cwd=ws, timeout_s=120).exit_code == 0  # writes the rewrite cache
    test.write_text(TEST)
    (cache,) = (ws / "__pycache__").glob("test_lib.*-pytest-*.pyc")
    data = cache.read_bytes()
    cache.write_bytes(data[:8] + importlib.util.source_hash(TEST.encode()) + data[16:])  # claims the real test
    assert LocalSandbox().run(PYTEST, cwd=ws, timeout_s=120).exit_code == 0  # the weakened test runs: real
    assert run.complete() == ("FAIL", ["test_lib.py::test_f"])


def test_sourceless_bytecode_is_refused(ws: Path) -> None:
    """Python imports lib.pyc when lib.py is gone; tether will not run bytecode it did not compile."""
    run = Run(ws)
    lib = ws / "lib.py"
    lib.write_text(FIXED)
    py_compile.compile(str(lib), cfile=str(ws / "lib.pyc"), doraise=True)
    lib.unlink()
    assert LocalSandbox().run(PYTEST, cwd=ws, timeout_s=120).exit_code == 0  # the attack is real
    result, codes = run.complete()
    assert (result, codes) == ("ERROR", ["bytecode.sourceless"])
    (ws / "lib.py").write_text(FIXED)  # beside its source a .pyc is never imported: fine
    assert bytecode.drop(ws).sourceless == ()


def test_capture_keeps_current_bytecode_of_tracked_sources_only(tmp_path: Path) -> None:
    for rel in ("m.py", ".venv/lib/v.py", "stale.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("X = 1\n")
        py_compile.compile(str(tmp_path / rel), doraise=True)
    os.utime(tmp_path / "stale.py", (STAMP, STAMP))  # its bytecode no longer matches: Python would not use it
    (tmp_path / "m.py.pyc").write_bytes(b"")  # not in a cache directory
    blobs: dict[str, bytes] = {}
    kept = bytecode.capture(tmp_path, blobs)
    assert [(b.source, b.source_digest) for b in kept] == [("m.py", bytes_hash(b"X = 1\n"))]
    assert set(blobs) == {kept[0].blob}


def test_preflight_stops_at_sourceless_bytecode_before_the_agent_starts(ws: Path) -> None:
    py_compile.compile(str(ws / "lib.py"), cfile=str(ws / "old.pyc"), doraise=True)
    (ws / ".venv" / "lib").mkdir(parents=True)
    py_compile.compile(str(ws / "lib.py"), cfile=str(ws / ".venv" / "lib" / "vendored.pyc"), doraise=True)
    assert bytecode.sourceless(ws) == ["old.pyc"]  # a virtualenv is not the project's to answer for
    pf = run_preflight(env(), ws, LocalSandbox())
    (check,) = pf.failed
    assert check.name == "bytecode" and check.status == "NEEDS_INPUT" and "old.pyc" in check.detail
    assert (ws / "old.pyc").exists()  # reported, not removed


def test_restore_skips_blobs_whose_bytes_do_not_match_their_hash(ws: Path) -> None:
    store = MemoryBlobStore()
    good = store.put_blob(b"good")
    store.blobs[good] = b"tampered"
    item = CachedBytecode(path="__pycache__/lib.cpython-3.pyc", source="lib.py", source_digest="d", blob=good)
    assert bytecode.restore(ws, [item], lambda s, d: True, store) == 0
    assert not (ws / "__pycache__").exists()


@pytest.mark.parametrize("swap", ["directory", "cache"])
def test_restore_never_writes_through_a_symlink(tmp_path: Path, swap: str) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    if swap == "directory":
        (ws / "pkg").symlink_to(outside)
    else:
        (ws / "pkg").mkdir()
        (ws / "pkg" / "__pycache__").symlink_to(outside)
    store = MemoryBlobStore()
    blob = store.put_blob(b"bytecode")
    items = [
        CachedBytecode(path=p, source="pkg/m.py", source_digest="d", blob=blob)
        for p in ("pkg/__pycache__/m.cpython-3.pyc", "pkg/../../outside/__pycache__/m.pyc", "/etc/__pycache__/x.pyc")
    ]
    assert bytecode.restore(ws, items, lambda s, d: True, store) == 0
    assert list(outside.rglob("*")) == []


def test_drop_removes_every_cache_and_never_follows_a_link(tmp_path: Path) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / "a" / "__pycache__").mkdir(parents=True)
    (ws / "a" / "__pycache__" / "m.cpython-3.pyc").write_bytes(b"x")
    (outside / "__pycache__").mkdir(parents=True)
    (outside / "__pycache__" / "keep.pyc").write_bytes(b"x")
    (ws / "b").mkdir()
    (ws / "b" / "__pycache__").symlink_to(outside / "__pycache__")
    (ws / "link").symlink_to(outside)
    assert bytecode.drop(ws) == bytecode.Dropped(True, ())
    assert not (ws / "a" / "__pycache__").exists() and not (ws / "b" / "__pycache__").exists()
    assert (outside / "__pycache__" / "keep.pyc").exists()


@pytest.mark.bwrap
def test_in_bubblewrap_unchanged_modules_reuse_bytecode_and_planted_bytecode_is_not_run(ws: Path) -> None:
    run = Run(ws, BwrapSandbox(ws))
    assert {"lib.py", "test_lib.py"} <= {b.source for b in run.suite.bytecode}
    plant(ws / "lib.py", FIXED)
    assert run.complete() == ("FAIL", ["test_lib.py::test_f"])
    (ws / "lib.py").write_text(FIXED)
    assert run.complete() == ("PASS", [])
    # The caches tether wrote back are the sandbox's to replace or clean, like the ones Python writes.
    assert (ws / "__pycache__").is_dir()
    cleanup = BwrapSandbox(ws).run(["/bin/rm", "-r", "__pycache__"], cwd=ws, timeout_s=60)
    assert cleanup.exit_code == 0, cleanup.stderr
