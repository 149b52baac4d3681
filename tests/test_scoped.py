"""tether.scoped against contextlib: every way a once-yielding generator and its ``with`` block can end, each
answered as contextlib answers it (what the ``with`` gives, what propagates and whether it is the block's own
exception, what the generator ran), and ``suppress`` likewise."""

from __future__ import annotations

import contextlib
import copy
import itertools
import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tether import scoped


def plain(log: list[str]) -> Iterator[int]:
    yield 1
    log.append("after")


def finally_(log: list[str]) -> Iterator[int]:
    try:
        yield 1
    finally:
        log.append("finally")


def swallows(log: list[str]) -> Iterator[int]:
    try:
        yield 1
    except Exception as e:
        log.append(f"swallowed {type(e).__name__}")


def translates(log: list[str]) -> Iterator[int]:
    try:
        yield 1
    except ValueError as e:
        raise KeyError("translated") from e


def reraises(log: list[str]) -> Iterator[int]:
    try:
        yield 1
    except BaseException:
        log.append("re-raised")
        raise


def never_yields(log: list[str]) -> Iterator[int]:
    log.append("ran")
    return
    yield 1


def yields_twice(log: list[str]) -> Iterator[int]:
    yield 1
    yield 2


def yields_again_on_throw(log: list[str]) -> Iterator[int]:
    try:
        yield 1
    except Exception:
        yield 2


def stops_itself(log: list[str]) -> Iterator[int]:
    try:
        yield 1
    except Exception:
        raise StopIteration("its own") from None


GENERATORS = [plain, finally_, swallows, translates, reraises, never_yields, yields_twice, yields_again_on_throw]
GENERATORS.append(stops_itself)
BLOCKS: list[BaseException | None] = [
    None,
    ValueError("v"),
    StopIteration("s"),
    RuntimeError("r"),
    KeyboardInterrupt(),
    KeyError("k"),
    GeneratorExit(),
]


def outcome(maker: Callable[..., Any], generator: Callable[[list[str]], Iterator[int]], raised: Any) -> list[Any]:
    log: list[str] = []
    raised = copy.copy(raised)  # a fresh one each run: raising sets its traceback and context
    manager = maker(generator)
    got = None
    try:
        with manager(log) as got:
            if raised is not None:
                raise raised
        out: list[Any] = ["completed"]
    except BaseException as e:  # what propagates: its class, text, identity, cause and context
        cause, context = e.__cause__, e.__context__
        out = [type(e).__name__, str(e), e is raised, type(cause).__name__, type(context).__name__]
    return [got, log, *out]


@pytest.mark.parametrize(("generator", "raised"), list(itertools.product(GENERATORS, BLOCKS)))
def test_contextmanager_ends_every_way_as_contextlibs(generator: Any, raised: Any) -> None:
    theirs = outcome(contextlib.contextmanager, generator, raised)
    mine = outcome(scoped.contextmanager, generator, raised)
    assert mine == theirs


def test_the_made_function_is_named_as_its_generator() -> None:
    made: Any = scoped.contextmanager(finally_)
    assert (made.__name__, made.__qualname__, made.__doc__, made.__wrapped__) == (
        "finally_",
        "finally_",
        None,
        finally_,
    )


@pytest.mark.parametrize(
    ("kinds", "raised"),
    list(itertools.product([(OSError,), (ValueError, KeyError), (), (Exception,)], [*BLOCKS, FileNotFoundError("f")])),
)
def test_suppress_as_contextlibs(kinds: tuple[type[BaseException], ...], raised: Any) -> None:
    def run(maker: Any) -> list[Any]:
        fresh = copy.copy(raised)
        try:
            with maker(*kinds):
                if fresh is not None:
                    raise fresh
            return ["completed"]
        except BaseException as e:
            return [type(e).__name__, e is fresh]

    assert run(scoped.suppress) == run(contextlib.suppress)


def test_a_process_with_them_imports_no_contextlib() -> None:
    """A bare interpreter (as the hook's launcher starts) that uses both imports neither contextlib nor typing."""
    probe = (
        "import json, sys\nsys.path.insert(0, sys.argv[1])\nfrom tether import scoped\n"
        "@scoped.contextmanager\ndef held():\n    yield 1\n"
        "with scoped.suppress(OSError), held():\n    open('/nonexistent/x')\n"
        "print(json.dumps([m for m in ('contextlib', 'typing') if m in sys.modules]))"
    )
    src = str(Path(scoped.__file__).parents[1])
    out = subprocess.run([sys.executable, "-I", "-S", "-c", probe, src], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == []


@pytest.mark.parametrize("raised", [*BLOCKS, FileNotFoundError("f")])
def test_nullcontext_as_contextlibs(raised: Any) -> None:
    """It holds nothing: its value is the one given, and what the block raises goes on as it was."""

    def run(maker: Any) -> list[Any]:
        fresh = copy.copy(raised)
        try:
            with maker("value") as got:
                if fresh is not None:
                    raise fresh
            return ["completed", got]
        except BaseException as e:
            return [type(e).__name__, e is fresh]

    assert run(scoped.nullcontext) == run(contextlib.nullcontext)
    with scoped.nullcontext() as nothing:
        assert nothing is None
