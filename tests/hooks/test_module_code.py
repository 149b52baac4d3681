"""tether.hooks.modulecode: a hook process's modules' code from one table, only while each module is as recorded.

Real processes on a copy of tether (its tables written beside the copy's bytecode): a cold call writes the table, the
next ones take every module it imports from there and decide the same; a module edited in place (same inode, same
folder), touched, or shadowed by a package of its name is loaded from its source again, and kept anew. In-process,
on a probe package: each answer is the path finder's spec with the table's code, and a torn, foreign or forged table
answers nothing. Racing writers leave a whole table; nothing is written where bytecode is not (a managed install
refusing a table another user could write: ``tests/test_keptcode.py``).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import marshal
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from importlib.machinery import PathFinder, SourceFileLoader
from pathlib import Path
from typing import Any

import pytest
from hookkit import payload

import tether
from tether import keptcode
from tether.hooks import finder, modulecode
from tether.hooks.modulecode import KeptLoader, Table

pytestmark = pytest.mark.skipif(not finder.MIRRORED, reason="the finder mirrors Python 3.11's; elsewhere not installed")

#: One hook call decided in a process of its own, as the launcher decides it (``own_process``), on the copy of tether
#: at argv[1]; it prints the reply and, for each module of tether imported since it began deciding, its loader's kind.
DRIVER = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from tether.hooks import entry, finder, modulecode  # imported before the call, as the launcher has them
before = set(sys.modules)
raw = sys.stdin.buffer.read()
reply = entry.decide(entry.options(["claude-code", "--no-daemon"])[0], json.loads(raw), raw, own_process=True)
new = [n for n in sys.modules if n.startswith("tether.") and n not in before]
loaders = {n: type(sys.modules[n].__spec__.loader).__name__ for n in new}
print(json.dumps({"reply": reply.stdout, "exit": reply.exit, "loaders": loaders}))
"""


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of tether's package (no bytecode), whose ``src`` a driver puts first on its path."""
    src = tmp_path_factory.mktemp("copy") / "src"
    shutil.copytree(Path(tether.__file__).parent, src / "tether", ignore=shutil.ignore_patterns("__pycache__"))
    return src


def table_file(src: Path, purpose: str) -> Path:
    return src / "tether" / "hooks" / "__pycache__" / Path(table_path(purpose)).name


def table_path(purpose: str) -> str:
    found = keptcode.table_path(modulecode.__cached__, f"module-code-{purpose}", modulecode.FORMAT)
    assert found is not None
    return found


def decided(src: Path, project: Path, data: dict[str, Any], env: dict[str, str] | None = None) -> dict[str, Any]:
    environ = {**os.environ, "CLAUDE_PROJECT_DIR": str(project), "TETHER_HOOK_DAEMON": "0", **(env or {})}
    environ.pop("PYTHONDONTWRITEBYTECODE", None)
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", DRIVER, str(src)],
        input=json.dumps(data),
        capture_output=True,
        text=True,
        env=environ,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def read_call(project: Path, n: int) -> dict[str, Any]:
    return payload("claude-code.PreToolUse", project, tool_use_id=f"toolu_{n}")


def settled(src: Path, project: Path, start: int) -> tuple[dict[str, Any], int]:
    """Calls until one takes every module it imports from the table (a session's first calls import more)."""
    for n in range(start, start + 6):
        out = decided(src, project, read_call(project, n))
        if set(out["loaders"].values()) == {"KeptLoader"}:
            return out, n + 1
    raise AssertionError(f"no call took every module from the table: {out['loaders']}")


def test_a_cold_call_keeps_the_table_and_the_next_ones_take_every_module_from_it(copy: Path, tmp_path: Path) -> None:
    first = decided(copy, tmp_path, read_call(tmp_path, 0))
    assert "allow" in first["reply"]
    assert table_file(copy, "gate-shell-full").exists()  # a session's first: the full path; a command: the shell's
    assert "SourceFileLoader" in first["loaders"].values()  # the first call found them the standard way
    out, n = settled(copy, tmp_path, 1)
    assert len(out["loaders"]) >= 40 and out["reply"] == first["reply"].replace("toolu_0", f"toolu_{n - 1}")
    kept = table_file(copy, "gate-shell").stat().st_mtime_ns
    again = decided(copy, tmp_path, read_call(tmp_path, n))
    assert set(again["loaders"].values()) == {"KeptLoader"}
    assert table_file(copy, "gate-shell").stat().st_mtime_ns == kept  # nothing missed: not written again
    receipt = payload("claude-code.PostToolUse", tmp_path, tool_use_id=f"toolu_{n}")
    decided(copy, tmp_path, receipt)
    assert table_file(copy, "observe").exists()  # a receipt's table, its own
    (tmp_path / "notes.md").write_text("x\n")
    read = {"file_path": str(tmp_path / "notes.md")}
    reply = decided(copy, tmp_path, payload("claude-code.PreToolUse", tmp_path, tool_name="Read", tool_input=read))
    assert "allow" in reply["reply"] and "tether.policy.shell" not in reply["loaders"]
    files = modulecode._read(str(table_file(copy, "gate")))  # a file tool's, without the shell's reading
    assert "tether.policy.gate" in files and "tether.policy.shell" not in files
    assert "tether.policy.shell" in modulecode._read(str(table_file(copy, "gate-shell")))


@pytest.mark.parametrize("change", ["in place", "touched", "shadowed by a package"])
def test_a_module_not_as_recorded_is_loaded_from_its_source_and_kept_anew(
    copy: Path, tmp_path: Path, change: str
) -> None:
    _, n = settled(copy, tmp_path, 0)
    module = copy / "tether" / "policy" / "decision.py"
    original = module.read_bytes()
    package = copy / "tether" / "policy" / "decision"
    try:
        if change == "in place":  # same inode, same folder: only the file's stat says it changed
            with open(module, "r+b") as f:
                f.seek(0, os.SEEK_END)
                f.write(b"\nEDITED = 1\n")
        elif change == "touched":  # the same bytes, another mtime (a checkout, a copy)
            os.utime(module, ns=(module.stat().st_atime_ns, module.stat().st_mtime_ns + 1_000_000_000))
        else:  # the folder lists a package of its name now: the import system finds the package, so must the table
            package.mkdir()
            (package / "__init__.py").write_bytes(original + b"\nEDITED = 2\n")
        out = decided(copy, tmp_path, read_call(tmp_path, n))
        assert out["loaders"]["tether.policy.decision"] == "SourceFileLoader", change
        assert "allow" in out["reply"]
        missed = {k for k, v in out["loaders"].items() if v != "KeptLoader"}
        if change.startswith("shadowed"):  # the folder's listing changed: each of its modules is found anew
            assert "tether.policy.gate" in missed, missed
            assert all(k.partition(".")[2].startswith("policy") for k in missed), missed
        else:
            assert missed == {"tether.policy.decision"}
        # a changed module changes the code stamp: the kept envelope is made again on the full path (its own table),
        # and the next plain call, missing it too, keeps it in the plain one
        again, _ = settled(copy, tmp_path, n + 1)
        assert again["loaders"]["tether.policy.decision"] == "KeptLoader", "kept anew by a call that missed it"
        entry = modulecode._read(str(table_file(copy, "gate-shell")))["tether.policy.decision"]
        source = str(package / "__init__.py") if change.startswith("shadowed") else str(module)
        assert entry[0] == source and entry[1] is change.startswith("shadowed")
        if change != "touched":
            assert b"EDITED" in (Path(source).read_bytes()) and "EDITED" in entry[5].co_names
    finally:
        shutil.rmtree(package, ignore_errors=True)
        module.write_bytes(original)


def test_racing_writers_leave_a_whole_table(copy: Path, tmp_path: Path) -> None:
    table = table_file(copy, "gate-shell-full")  # each racer a session's first call
    table.unlink(missing_ok=True)
    projects = [tmp_path / f"p{i}" for i in range(3)]
    for p in projects:
        p.mkdir()
    environ = {**os.environ, "TETHER_HOOK_DAEMON": "0"}
    environ.pop("PYTHONDONTWRITEBYTECODE", None)
    racers = [
        subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", DRIVER, str(copy)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**environ, "CLAUDE_PROJECT_DIR": str(p)},
        )
        for p in projects
    ]
    for racer, p in zip(racers, projects, strict=True):
        _, err = racer.communicate(json.dumps(read_call(p, 0)).encode(), timeout=300)
        assert racer.returncode == 0, err
    entries = modulecode._read(str(table))
    assert len(entries) >= 40 and all(modulecode._fits(e) for e in entries.values())
    assert not [p.name for p in table.parent.iterdir() if p.name.endswith(".tmp")]  # every writer renamed its own


def test_nothing_is_written_where_bytecode_is_not(copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = table_file(copy, "gate-shell-full")  # a session's first call
    table.unlink(missing_ok=True)
    decided(copy, tmp_path, read_call(tmp_path, 0), env={"PYTHONDONTWRITEBYTECODE": "1"})
    assert table.exists(), "-I ignores PYTHONDONTWRITEBYTECODE, as the launcher's interpreter does"
    table.unlink()
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-B", "-c", DRIVER, str(copy)],
        input=json.dumps(read_call(tmp_path, 1)),
        capture_output=True,
        text=True,
        env={**os.environ, "CLAUDE_PROJECT_DIR": str(tmp_path), "TETHER_HOOK_DAEMON": "0"},
        timeout=300,
    )
    assert done.returncode == 0 and "allow" in done.stdout, done.stderr
    assert not table.exists()  # -B: no bytecode written, no table either


# ---- in-process, on a probe package ----------------------------------------------------------------------------


@pytest.fixture
def probe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A package ``probe`` (a module ``mod`` in it) imported the standard way, under the prefix the table keeps."""
    folder = tmp_path / "probe"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "mod.py").write_text("VALUE = 1\n\n\ndef f(x):\n    return x + VALUE\n")
    (folder / "pkg").mkdir()
    (folder / "pkg" / "__init__.py").write_text("INNER = 2\n")
    monkeypatch.setattr(modulecode, "PREFIX", "probe.")
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [n for n in sys.modules if n == "probe" or n.startswith("probe.")]:
        monkeypatch.delitem(sys.modules, name)
    yield folder
    for name in [n for n in sys.modules if n == "probe" or n.startswith("probe.")]:
        del sys.modules[name]


def kept_table(probe: Path, names: tuple[str, ...] = ("probe.mod", "probe.pkg")) -> Table:
    """A table at a file of the probe's, written after the standard import of ``names``."""
    importlib.import_module("probe")
    table = Table(str(probe.parent / "table.marshal"))
    table.watch()
    for name in names:
        importlib.import_module(name)
    assert table.write()
    return Table(table.path)


def shown(spec: Any) -> Any:
    return (
        spec.name, spec.origin, spec.submodule_search_locations, spec.cached, spec.has_location, spec.parent,
        spec.loader_state, spec.loader.name, spec.loader.path, isinstance(spec.loader, SourceFileLoader),
    )  # fmt: skip


def test_an_answer_is_the_path_finders_spec_with_the_same_code(probe: Path) -> None:
    table = kept_table(probe)
    for name in ("probe.mod", "probe.pkg"):
        ours, theirs = table.spec(name, [str(probe)]), PathFinder.find_spec(name, [str(probe)])
        assert ours is not None and theirs is not None and type(ours.loader) is KeptLoader
        assert shown(ours) == shown(theirs), name
        assert ours.loader.get_code(name) == theirs.loader.get_code(name)  # the same code object's contents
        assert ours.loader.get_source(name) == theirs.loader.get_source(name)
    assert table.spec("probe.mod", [str(probe), "/elsewhere"]) is None  # not the parent's one directory
    assert table.spec("probe.mod", [str(probe.parent)]) is None
    assert table.spec("probe.other", [str(probe)]) is None


def test_a_table_that_fails_leaves_each_module_to_the_standard_way(probe: Path, monkeypatch) -> None:
    table = kept_table(probe)
    monkeypatch.setattr(finder, "PREFIX", "probe.")
    own = finder.OwnFinder(table)
    assert type(own.find_spec("probe.mod", [str(probe)]).loader) is KeptLoader  # type: ignore[union-attr]

    def broken(name: str, path: Any) -> None:
        raise RuntimeError("a table in trouble")

    monkeypatch.setattr(table, "spec", broken)
    found = own.find_spec("probe.mod", [str(probe)])
    assert found is not None and type(found.loader) is SourceFileLoader  # the path finder's answer, as ever


def test_every_loaded_module_of_tether_answers_as_the_path_finder(tmp_path: Path, monkeypatch) -> None:
    import tether.hooks.entry  # noqa: F401  (a few modules at least)

    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    table = Table(str(tmp_path / "table.marshal"))
    table._before = set()  # every module of tether loaded is recorded, as if imported after watch()
    table._entries = {}
    assert table.write()
    table = Table(table.path)
    answered = 0
    for name in sorted(n for n in sys.modules if n.startswith("tether.")):
        path = list(getattr(sys.modules[name.rpartition(".")[0]], "__path__", []))
        ours, theirs = table.spec(name, path), PathFinder.find_spec(name, path)
        if ours is None:
            continue
        assert theirs is not None and shown(ours) == shown(theirs), name
        assert ours.loader.get_code(name) == theirs.loader.get_code(name), name
        answered += 1
    assert answered >= 10


@pytest.mark.parametrize("change", ["source edited", "source touched", "folder listed anew", "package's folder"])
def test_an_entry_no_longer_as_recorded_answers_nothing(probe: Path, change: str) -> None:
    table = kept_table(probe)
    name, module = ("probe.pkg", probe / "pkg") if change == "package's folder" else ("probe.mod", probe / "mod.py")
    assert table.spec(name, [str(probe)]) is not None
    if change == "source edited":
        module.write_text(module.read_text() + "# more\n")
    elif change == "source touched":
        st = module.stat()
        os.utime(module, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    elif change == "folder listed anew":
        (probe / f"mod{__import__('importlib.machinery').machinery.EXTENSION_SUFFIXES[0]}").write_bytes(b"")
    else:
        (module / f"__init__{__import__('importlib.machinery').machinery.EXTENSION_SUFFIXES[0]}").write_bytes(b"")
    assert table.spec(name, [str(probe)]) is None, change


def test_a_module_with_a_folder_of_its_name_beside_it_is_not_kept(probe: Path) -> None:
    (probe / "mod").mkdir()  # a namespace portion: the module wins today, a package tomorrow (an __init__ added)
    table = kept_table(probe)
    assert table.spec("probe.mod", [str(probe)]) is None and table.spec("probe.pkg", [str(probe)]) is not None


def forged(path: Path, body: bytes, head: bytes = modulecode.HEAD) -> None:
    path.write_bytes(keptcode.header(head, modulecode.FORMAT, body) + body)


def test_a_torn_foreign_or_forged_table_answers_nothing(probe: Path) -> None:
    table = kept_table(probe)
    path = Path(table.path or "")
    good = path.read_bytes()
    entries = modulecode._read(str(path))
    source, package, dirs, mtime, size, code = entries["probe.mod"]
    other = compile("VALUE = 666\n", str(probe / "pkg" / "__init__.py"), "exec")
    elsewhere = ((str(probe.parent), dirs[0][1]),)
    bodies = {
        "another table's head": marshal.dumps(entries),
        "not a dict": marshal.dumps([entries]),
        "not marshal": b"\xff" * 100,
        "an entry short": marshal.dumps({"probe.mod": (source, package, dirs, mtime, size)}),
        "a string for a size": marshal.dumps({"probe.mod": (source, False, dirs, mtime, "1", code)}),
        "code of another file": marshal.dumps({"probe.mod": (source, False, dirs, mtime, size, other)}),
        "a package without its folder": marshal.dumps({"probe.mod": (source, True, dirs, mtime, size, code)}),
        "another parent": marshal.dumps({"probe.mod": (source, False, elsewhere, mtime, size, code)}),
        "another file's entry": marshal.dumps({"probe.mod": entries["probe.pkg"]}),
    }
    cases: dict[str, Any] = {
        "truncated": lambda: path.write_bytes(good[:-10]),
        "a byte changed": lambda: path.write_bytes(good[:-10] + bytes([good[-10] ^ 1]) + good[-9:]),
        **{
            case: (lambda b=b, case=case: forged(path, b, b"TETHERDC" if "head" in case else modulecode.HEAD))
            for case, b in bodies.items()
        },
    }
    for case, write in cases.items():
        write()
        assert Table(str(path)).spec("probe.mod", [str(probe)]) is None, case
    path.write_bytes(good)
    assert Table(str(path)).spec("probe.mod", [str(probe)]) is not None


def test_odd_modules_are_not_kept_and_never_fail_the_write(probe: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a process put in ``sys.modules`` by hand (no spec, a spec of another shape, a spec whose origin is not
    where the path finder finds the name) is passed over; a write that fails in any way leaves the table on disk."""
    import types

    table = kept_table(probe, ("probe.mod",))
    before = Path(table.path or "").read_bytes()
    again = Table(table.path)
    again.watch()
    bare, odd, moved = types.ModuleType("probe.bare"), types.ModuleType("probe.odd"), types.ModuleType("probe.moved")
    odd.__spec__ = types.SimpleNamespace(origin=str(probe / "mod.py"))  # type: ignore[assignment]
    moved.__spec__ = importlib.util.spec_from_file_location("probe.moved", str(probe / "mod.py"))
    for module in (bare, odd, moved):
        monkeypatch.setitem(sys.modules, module.__name__, module)
    assert not again.write() and Path(table.path or "").read_bytes() == before  # nothing kept: not written

    def broken(name: str) -> None:
        raise RuntimeError("a recording in trouble")

    monkeypatch.setattr(modulecode, "_recorded", broken)
    assert not again.write() and Path(table.path or "").read_bytes() == before


def test_a_table_is_bounded_and_keeps_what_is_still_current(probe: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (probe / "third.py").write_text("X = 3\n")
    table = kept_table(probe, ("probe.mod",))
    again = Table(table.path)
    again.watch()
    importlib.import_module("probe.third")

    assert again.write()
    assert set(modulecode._read(table.path)) == {"probe.mod", "probe.third"}  # merged with what is still current
    (probe / "mod.py").write_text("VALUE = 5\n")  # in place: the folder's listing as it was
    monkeypatch.delitem(sys.modules, "probe.third")
    once_more = Table(table.path)
    once_more.watch()
    importlib.import_module("probe.third")

    assert once_more.write() and set(modulecode._read(table.path)) == {"probe.third"}  # mod.py changed: dropped
    monkeypatch.setattr(modulecode, "MAX_ENTRIES", 1)
    assert marshal.loads(modulecode._body({"a": 1, "b": 2})) == {"a": 1}
