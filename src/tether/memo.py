"""``functools.cache`` and ``functools.cached_property`` as tether's cold-path modules use them, without
``functools``.

``functools`` is a Python module over the C one, ``_functools``, and imports ``collections`` (for the named tuple
of ``cache_info()``) and ``types``. Nothing of tether's on a cold hook call's path needs more of it than these
two: ``cache`` is ``lru_cache(maxsize=None)``, i.e. ``_functools._lru_cache_wrapper`` (the very C wrapper
``functools`` makes, so the same keys, the same thread safety, ``cache_clear`` and ``cache_info``) named as its
function; ``cached_property`` is 3.12's (3.11's also takes a lock per property, which tether's single-threaded
readers do not need: two threads may compute a value twice, as on 3.12, and the first one set stays). Where
``_functools`` has no such wrapper (another interpreter), ``functools``'s own. ``re`` and ``enum`` still import
``functools`` today; this keeps tether itself from being an importer of it (tests/hooks/test_cold_libraries.py),
and ``tests/test_memo.py`` holds both to functools's.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing (tether/typeless.py)
if TYPE_CHECKING:  # the type checker reads functools's own signatures
    from functools import cache as cache
    from functools import cached_property as cached_property
else:
    _NOT_FOUND = object()

    try:
        from _functools import _lru_cache_wrapper
    except ImportError:  # an interpreter without the C wrapper: functools's
        from functools import cache
    else:

        class CacheInfo(tuple):
            """``cache_info()``'s answer: ``functools``'s named tuple's fields, without ``collections``."""

            __slots__ = ()

            def __new__(cls, hits, misses, maxsize, currsize):
                return tuple.__new__(cls, (hits, misses, maxsize, currsize))

            hits = property(lambda self: self[0])
            misses = property(lambda self: self[1])
            maxsize = property(lambda self: self[2])
            currsize = property(lambda self: self[3])

            def __repr__(self):
                return "CacheInfo(hits={}, misses={}, maxsize={}, currsize={})".format(*self)

        def cache(func):
            """``functools.cache``: ``lru_cache(maxsize=None)``'s C wrapper, named as ``func`` (``update_wrapper``)."""
            wrapper = _lru_cache_wrapper(func, None, False, CacheInfo)
            for name in ("__module__", "__name__", "__qualname__", "__doc__", "__annotations__"):
                value = getattr(func, name, _NOT_FOUND)
                if value is not _NOT_FOUND:
                    setattr(wrapper, name, value)
            wrapper.__dict__.update(getattr(func, "__dict__", {}))
            wrapper.__wrapped__ = func
            wrapper.cache_parameters = lambda: {"maxsize": None, "typed": False}
            return wrapper

    class cached_property:
        """``functools.cached_property`` (3.12's: no lock): computed at the first read, then the instance's own."""

        def __init__(self, func):
            self.func = func
            self.attrname = None
            self.__doc__ = func.__doc__
            self.__module__ = func.__module__

        def __set_name__(self, owner, name):
            if self.attrname is None:
                self.attrname = name
            elif name != self.attrname:
                raise TypeError(
                    f"Cannot assign the same cached_property to two different names ({self.attrname!r} and {name!r})."
                )

        def __get__(self, instance, owner=None):
            if instance is None:
                return self
            if self.attrname is None:
                raise TypeError("Cannot use cached_property instance without calling __set_name__ on it.")
            try:
                cache = instance.__dict__
            except AttributeError:  # not all objects have __dict__ (e.g. class defines slots)
                msg = (
                    f"No '__dict__' attribute on {type(instance).__name__!r} "
                    f"instance to cache {self.attrname!r} property."
                )
                raise TypeError(msg) from None
            val = cache.get(self.attrname, _NOT_FOUND)
            if val is _NOT_FOUND:
                val = self.func(instance)
                try:
                    cache[self.attrname] = val
                except TypeError:
                    msg = (
                        f"The '__dict__' attribute on {type(instance).__name__!r} instance "
                        f"does not support item assignment for caching {self.attrname!r} property."
                    )
                    raise TypeError(msg) from None
            return val
