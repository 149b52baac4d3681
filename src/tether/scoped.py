"""``contextlib.contextmanager`` and ``contextlib.suppress`` as tether's cold-path modules use them, without
``contextlib``.

``contextlib`` (which imports ``functools``, ``collections`` and ``types``) was 2.5 M instructions of a cold hook
call (benchmarks/hook_modules.py) for two names: the generator-made context managers of the stores, the shell
walker, the record maker and the collector's pause, and ``suppress``. Both are a few lines; what they do is
contextlib's exactly for a generator that yields once (the only kind tether writes): the value it yields is the
``with``'s; an exception in the block is thrown in at the ``yield``, and what the generator then does decides —
it returns (the exception is swallowed), raises the same exception (it propagates, its traceback kept) or raises
another (that one propagates); a generator that does not yield, or yields twice, is a ``RuntimeError``, and a
``StopIteration`` raised in the block propagates as itself, not as the generator's end. No decorator use
(``@gc_paused()`` over a function), no ``recreate``: tether uses neither. ``tests/test_scoped.py`` holds each
case to contextlib's answer, and ``tests/hooks/test_cold_libraries.py`` fails when a cold call imports
``contextlib`` again.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing (tether/typeless.py)
if TYPE_CHECKING:  # the type checker reads contextlib's own signatures
    from contextlib import contextmanager as contextmanager
    from contextlib import nullcontext as nullcontext
    from contextlib import suppress as suppress
else:

    def contextmanager(func):
        """``contextlib.contextmanager`` for a generator that yields once (see the module docstring)."""

        def scoped(*args, **kwargs):
            return _Scoped(func(*args, **kwargs))

        scoped.__name__, scoped.__qualname__, scoped.__doc__ = func.__name__, func.__qualname__, func.__doc__
        scoped.__module__, scoped.__wrapped__ = func.__module__, func
        return scoped

    class _Scoped:
        """One ``with`` over one generator: contextlib's ``_GeneratorContextManager``, less its decorator use."""

        __slots__ = ("gen",)

        def __init__(self, gen):
            self.gen = gen

        def __enter__(self):
            try:
                return next(self.gen)
            except StopIteration:
                raise RuntimeError("generator didn't yield") from None

        def __exit__(self, kind, value, traceback):
            if kind is None:
                try:
                    next(self.gen)
                except StopIteration:
                    return False
                try:
                    raise RuntimeError("generator didn't stop")
                finally:
                    self.gen.close()
            if value is None:
                value = kind()
            try:
                self.gen.throw(value)
            except StopIteration as exc:
                return exc is not value  # the generator returned: swallowed, unless it was the block's own
            except RuntimeError as exc:
                if exc is value or (isinstance(value, StopIteration) and exc.__cause__ is value):
                    value.__traceback__ = traceback
                    return False  # the block's exception, or its StopIteration that PEP 479 wrapped: re-raised
                raise
            except BaseException as exc:
                if exc is not value:
                    raise  # another exception: it propagates (its context is the block's)
                exc.__traceback__ = traceback
                return False
            try:
                raise RuntimeError("generator didn't stop after throw()")
            finally:
                self.gen.close()

    class suppress:
        """``contextlib.suppress`` (3.11's): an exception of the listed classes ends the block quietly."""

        __slots__ = ("kinds",)

        def __init__(self, *kinds):
            self.kinds = kinds

        def __enter__(self):
            return None

        def __exit__(self, kind, value, traceback):
            return kind is not None and issubclass(kind, self.kinds)

    class nullcontext:
        """``contextlib.nullcontext``: a ``with`` that holds nothing, its value ``enter_result`` (a lock taken only
        on some paths, the other's stand-in)."""

        __slots__ = ("enter_result",)

        def __init__(self, enter_result=None):
            self.enter_result = enter_result

        def __enter__(self):
            return self.enter_result

        def __exit__(self, *exc):
            return None
