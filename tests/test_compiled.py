"""tether.compiled keeps the code ``dataclasses`` compiles for an ``__init__`` from one process to the next.

The class made from a kept code must be the class the standard library makes (the same code object, signature,
defaults, closure, behaviour); a table that is torn, foreign, forged under a right key, too large, or being
renamed by another process must never be used wrongly; writers racing or killed mid-write leave a whole table;
and a managed install refuses a table another user could write, as it refuses a ``.pyc`` (tests/test_keptcode.py).
"""

from __future__ import annotations

import builtins
import dataclasses
import inspect
import marshal
import os
import subprocess
import sys
import time
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_records import VALUES, observe, plain, shapes

from tether import compiled, keptcode, records

pytestmark = pytest.mark.skipif(not records.MIRRORED, reason="nothing is stood in for on this Python")


@pytest.fixture
def table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh process's state, its table at a path of the test's."""
    path = tmp_path / "__pycache__" / "table.marshal"
    path.parent.mkdir()
    fresh(monkeypatch, path)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    yield path


#: The packages kept as shipped; these tests' own modules are added by :func:`fresh` (their classes are kept then).
SHIPPED_KEPT = compiled.KEPT


def fresh(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    """As a new process that has read nothing and compiled nothing (its table at ``path``), which keeps the
    classes of these tests' modules too."""
    monkeypatch.setattr(compiled, "KEPT", (*SHIPPED_KEPT, "test_records", "test_compiled"))
    monkeypatch.setattr(compiled, "location", str(path))
    monkeypatch.setattr(compiled, "_table", None)
    monkeypatch.setattr(compiled, "_used", {})
    monkeypatch.setattr(compiled, "_keeping", None)


class Compiles:
    """``compile`` as tether.compiled calls it, counted."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.texts: list[str] = []
        monkeypatch.setattr(compiled, "compile", self, raising=False)

    def __call__(self, text: str, *args: Any, **kwargs: Any) -> Any:
        self.texts.append(text)
        return compile(text, *args, **kwargs)


def init_seen(cls: type) -> list[Any]:
    """What a caller can see of a class's ``__init__`` (comparable between two makings of one class body)."""
    init: Any = cls.__init__
    code = init.__code__
    cells = [plain(c.cell_contents) for c in init.__closure__ or ()]
    return [
        code == STANDARD[cls.__name__].__init__.__code__ if cls.__name__ in STANDARD else None,
        code.co_filename,
        code.co_firstlineno,
        code.co_varnames,
        init.__name__,
        init.__qualname__.rpartition(".")[2],
        plain(init.__defaults__),
        plain(init.__kwdefaults__),
        plain(init.__annotations__),
        str(inspect.signature(cls)),
        str(inspect.signature(init)),
        init.__code__.co_freevars,
        cells,
        sorted(init.__globals__) == sorted(sys.modules[cls.__module__].__dict__),
    ]


STANDARD = shapes(dataclasses.dataclass)


def test_a_class_made_from_the_table_is_the_one_the_standard_library_makes(
    table: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = Compiles(monkeypatch)
    cold = shapes(records.dataclass)  # compiles and keeps every __init__
    assert len(first.texts) >= 12 and compiled._keeping
    assert compiled.write() and table.exists()
    fresh(monkeypatch, table)
    again = Compiles(monkeypatch)
    warm = shapes(records.dataclass)  # from the table
    assert again.texts == [], "an __init__ the table holds was compiled again"
    assert not compiled._keeping and len(compiled._used) == len(set(first.texts)) == len(first.texts)
    for name, cls in warm.items():
        if "__dataclass_fields__" not in cls.__dict__ or "__init__" not in cls.__dict__:
            continue  # not a dataclass (a base of one), or an __init__ of its own
        assert init_seen(cls) == init_seen(cold[name]) == init_seen(STANDARD[name]), name
        assert cls.__init__.__code__ == STANDARD[name].__init__.__code__  # type: ignore[misc]
        assert cls.__init__.__qualname__ == f"{cls.__qualname__}.__init__"  # type: ignore[misc]
        for kwargs in VALUES[name]:
            seen = observe(cls, kwargs, VALUES[name])
            assert [plain(s) for s in seen] == [plain(s) for s in observe(STANDARD[name], kwargs, VALUES[name])]
    assert dataclasses.__dict__.get("exec") in (None, builtins.exec)  # the stand-in is gone


def test_only_the_classes_of_tethers_packages_are_kept(table: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A class of another module (this test's, as any test run with bytecode written makes hundreds) is compiled
    as ever and never kept; one of tether's is."""
    monkeypatch.setattr(compiled, "KEPT", SHIPPED_KEPT)
    counted = Compiles(monkeypatch)

    @records.dataclass
    class Mine:
        a: int
        b: int = 1

    probe = types.ModuleType("tether._kept_probe")
    monkeypatch.setitem(sys.modules, probe.__name__, probe)
    exec("from tether import records\n@records.dataclass\nclass Ours:\n    c: int\n    d: str = 'x'\n", vars(probe))
    assert Mine(2).b == 1 and probe.Ours(3).d == "x"
    mine, ours = counted.texts
    assert "self.a=a" in mine and "self.c=c" in ours
    assert list(compiled._used) == [ours]
    assert compiled.write() and list(compiled.read(str(table))) == [ours]
    for name in ("tether", "tether.x", "pydantic.fields", "annotated_types", "pathspec.patterns.gitwildmatch"):
        assert compiled.kept_for(name), name
    for name in ("tetherx", "pydantic_core.x", "test_compiled", "", None, 3, "x.tether"):
        assert not compiled.kept_for(name), name


def test_init_errors_and_defaults_behave_as_compiled(table: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def body() -> type:
        @records.dataclass(frozen=True)
        class C:
            a: int
            b: list[int] = dataclasses.field(default_factory=list)
            c: str = "c"

        return C

    cold = body()
    compiled.write()
    fresh(monkeypatch, table)
    counted = Compiles(monkeypatch)
    warm = body()
    assert counted.texts == []
    for cls in (cold, warm):
        x, y = cls(1), cls(1)
        assert x.b == [] and x.b is not y.b and x.c == "c"
        with pytest.raises(TypeError, match=r"__init__\(\) missing 1 required positional argument: 'a'"):
            cls()
        with pytest.raises(TypeError, match="unexpected keyword argument 'z'"):
            cls(1, z=2)


def write_table(path: Path, body: bytes, head: bytes | None = None) -> None:
    path.write_bytes((compiled.header(body) if head is None else head) + body)


def made_fresh(monkeypatch: pytest.MonkeyPatch, path: Path) -> tuple[type, list[str]]:
    fresh(monkeypatch, path)
    counted = Compiles(monkeypatch)

    @records.dataclass
    class K:
        a: int
        b: int = 2

    assert K(1).b == 2 and K(1, 3) == K(a=1, b=3)
    return K, counted.texts


def kept(monkeypatch: pytest.MonkeyPatch, path: Path) -> dict[str, bytes]:
    """A valid table of the one class :func:`made_fresh` makes, written to ``path``."""
    made_fresh(monkeypatch, path)
    assert compiled.write()
    table = compiled.read(str(path))
    assert len(table) == 1
    return table


def test_a_torn_or_foreign_table_is_ignored_and_the_text_compiled(table: Path, monkeypatch) -> None:
    good = kept(monkeypatch, table)
    data = table.read_bytes()
    body = marshal.dumps(good)
    assert made_fresh(monkeypatch, table)[1] == []  # the valid table is used
    size = compiled.HEADER_SIZE
    assert len(compiled.header(body)) == size and data[:size] == compiled.header(data[size:])
    for torn in (data[: len(data) // 2], data[:size], data[:-1], b"", data[:5]):
        table.write_bytes(torn)
        assert compiled.read(str(table)) == {}
        assert len(made_fresh(monkeypatch, table)[1]) == 1
    flipped = bytearray(data)
    flipped[-20] ^= 1
    table.write_bytes(bytes(flipped))
    assert compiled.read(str(table)) == {} and len(made_fresh(monkeypatch, table)[1]) == 1
    magic = compiled.HEAD + compiled.FORMAT.to_bytes(4, "little") + b"\x00\x00\r\n"
    write_table(table, body, head=magic + data[size - 8 : size])  # another Python's bytecode
    assert compiled.read(str(table)) == {}
    other = compiled.HEAD + (compiled.FORMAT + 1).to_bytes(4, "little") + data[len(compiled.HEAD) + 4 : size]
    write_table(table, body, head=other)  # another layout
    assert compiled.read(str(table)) == {}
    write_table(table, marshal.dumps([1, 2]))  # a valid digest over a body that is no table
    assert compiled.read(str(table)) == {} and len(made_fresh(monkeypatch, table)[1]) == 1
    table.write_bytes(data + b"\0" * (compiled.MAX_BYTES))  # too large: not read at all
    assert compiled.read(str(table)) == {}


def test_an_entry_that_is_not_the_texts_code_is_not_used(table: Path, monkeypatch) -> None:
    good = kept(monkeypatch, table)
    ((text, entry),) = good.items()
    other = compile(text.replace("def __init__(", "def __other__(", 1), "<string>", "exec", dont_inherit=True)
    more = compile(text.replace("def __create_fn__(", "def __create_fn__(___x, ", 1), "<string>", "exec")
    unrelated = compile("def f():\n def g(): pass\n return g", "<string>", "exec")
    for forged in (
        marshal.dumps(other),  # the code of another function under this text
        marshal.dumps(more),  # of a function of other arguments
        marshal.dumps(unrelated),
        marshal.dumps("not code"),
        entry[: len(entry) // 2],  # an entry that does not unmarshal
        b"",
        marshal.dumps(compile(text, "elsewhere.py", "exec")),  # not what exec of the text compiles
        7,
    ):
        write_table(table, marshal.dumps({text: forged}))
        cls, texts = made_fresh(monkeypatch, table)
        assert texts == [text], forged
        outer = compile(text, "<string>", "exec", dont_inherit=True).co_consts[0]
        assert [cls.__init__.__code__] == [c for c in outer.co_consts if isinstance(c, type(outer))]
        assert str(inspect.signature(cls)) == "(a: 'int', b: 'int' = 2) -> None"


def test_nothing_is_written_where_bytecode_is_not(table: Path, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert len(made_fresh(monkeypatch, table)[1]) == 1
    assert compiled._keeping is False and compiled._used == {}  # compiled as ever, nothing kept to write
    assert not compiled.write() and not table.exists()
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    made_fresh(monkeypatch, table)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert not compiled.write() and not table.exists()
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    missing = tmp_path / "no-such-dir" / "table.marshal"
    assert not compiled.write(str(missing)) and not missing.parent.exists()  # silently, as for a .pyc
    assert compiled.write() and table.exists()
    assert not made_fresh(monkeypatch, table)[1] and not compiled.write()  # nothing new: not written again


def test_the_table_is_bounded(table: Path, monkeypatch) -> None:
    monkeypatch.setattr(compiled, "MAX_ENTRIES", 5)
    ours = {f"text {i}": b"x" * 10 for i in range(3)}
    theirs = {f"their {i}": b"y" * 10 for i in range(6)}
    both = compiled.merged(ours, {**theirs, 5: b"", "bad": 5})
    assert list(both) == [*ours, "their 0", "their 1"]  # ours first, then theirs, at most MAX_ENTRIES
    monkeypatch.setattr(compiled, "MAX_BYTES", 300)
    big = {"big": b"z" * 400, "small": b"s"}
    assert list(compiled.merged(big, {})) == ["small"]


def test_the_table_lives_beside_the_packages_bytecode() -> None:
    import importlib.util

    path = compiled.table_path()
    assert path is not None
    expected = Path(importlib.util.cache_from_source(compiled.__file__)).parent
    assert Path(path).parent == expected and Path(path).parent.name == "__pycache__"
    name = Path(path).name
    assert sys.implementation.cache_tag in name and importlib.util.MAGIC_NUMBER.hex() in name
    assert f".v{compiled.FORMAT}." in name


RACER = """
import sys, dataclasses
import tether.compiled as c
c.location = sys.argv[1]
c.KEPT = (*c.KEPT, "__main__")  # the classes below are this script's
sys.dont_write_bytecode = False
from tether.records import dataclass
n = int(sys.argv[2])
for i in range(40):
    dataclass(type(f"R{n}_{i}", (), {"__annotations__": {f"f{n}_{i}_{j}": "int" for j in range(i % 5 + 1)}}))
if sys.argv[3] == "loop":
    c._keeping = True  # its classes are in the table already: written all the same, again and again
    for _ in range(150):
        assert c.write()
if sys.argv[3] == "crash":
    import os
    os.replace = lambda *a: os._exit(9)
"""


def racers(path: Path, mode: str, count: int) -> list[subprocess.Popen[str]]:
    env = {**os.environ}
    return [
        subprocess.Popen([sys.executable, "-c", RACER, str(path), str(n), mode], env=env, text=True)
        for n in range(count)
    ]


def test_racing_writers_leave_a_whole_table_and_readers_never_see_a_torn_one(table: Path) -> None:
    for p in racers(table, "once", 4):
        assert p.wait(timeout=120) == 0
    whole = compiled.read(str(table))
    assert len(whole) >= 40 and all(compiled._fits(marshal.loads(e), t) for t, e in whole.items())
    assert [p.name for p in table.parent.iterdir()] == [table.name]  # no temporary file left
    writers = racers(table, "loop", 2)
    reads = 0
    while any(p.poll() is None for p in writers):
        assert len(compiled.read(str(table))) >= 40  # the old table or a new one, whole: never torn, never none
        reads += 1
    assert all(p.returncode == 0 for p in writers) and reads > 0
    assert [p.name for p in table.parent.iterdir()] == [table.name]


def test_a_writer_killed_before_its_rename_leaves_the_old_table(table: Path, monkeypatch) -> None:
    good = kept(monkeypatch, table)
    before = table.read_bytes()
    (crashed,) = racers(table, "crash", 1)
    assert crashed.wait(timeout=120) == 9
    assert table.read_bytes() == before and compiled.read(str(table)) == good
    left = [p for p in table.parent.iterdir() if p.name != table.name]
    assert len(left) == 1 and left[0].name.endswith(".tmp")  # as an interrupted .pyc write leaves one
    assert made_fresh(monkeypatch, table)[1] == []
    young, other = table.parent / f"{table.name}.1.ab.tmp", table.parent / "other.1.tmp"
    young.write_bytes(b"")
    other.write_bytes(b"")
    old = time.time() - keptcode.STALE_S - 5
    os.utime(left[0], (old, old))
    os.utime(other, (old, old))
    monkeypatch.setattr(compiled, "_keeping", True)
    assert compiled.write()  # the next write removes the killed writer's file once it is old, and only that
    assert sorted(p.name for p in table.parent.iterdir()) == sorted([table.name, young.name, other.name])


def test_exec_cached_is_exec(table: Path) -> None:
    scope: dict[str, Any] = {}
    compiled.exec_cached("x = 1", scope)
    assert scope["x"] == 1 and "__builtins__" in scope  # as exec adds them
    local: dict[str, Any] = {}
    compiled.exec_cached("z = STANDARD is not None", None, local)  # the caller's globals, as exec takes them
    compiled.exec_cached(compile("w = 2", "<s>", "exec"), scope)
    assert local["z"] is True and scope["w"] == 2
    with pytest.raises(SyntaxError):
        compiled.exec_cached("def (", {})
