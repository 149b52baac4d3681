"""A package's public names, each imported on first use (PEP 562).

A package lists where each name lives; ``__getattr__ = lazy(globals(), HOMES)`` imports a name's home the
first time someone asks for it and keeps it. Why: importing one module of a package must not import all of
them — a hook call needs the gate, not the kernel loop, and every module it skips is start-up it does not
pay (docs/hook-latency.md). The packages keep ``TYPE_CHECKING`` imports of the same names, for the type checker.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # not `typing`'s: the root package uses this module, and a hook call counts milliseconds
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any


def lazy(namespace: dict[str, Any], homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of the package whose globals are ``namespace``; ``homes`` maps each name to
    its module (absolute, or relative to the package)."""
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(home, package), name)
        namespace[name] = value
        return value

    return __getattr__


def import_module(name: str, package: str) -> Any:
    """``importlib.import_module(name, package)``, by the import statement's own ``__import__``: the ``importlib``
    package imports ``warnings`` (~1 M instructions of a cold hook call, which imports ``tether`` and so this module).
    A relative ``name`` is resolved as ``importlib`` resolves it (one dot: ``package``; each more: its parent)."""
    level = len(name) - len(name.lstrip("."))
    if level:
        bits = package.rsplit(".", level - 1)
        if len(bits) < level:
            raise ImportError("attempted relative import beyond top-level package")
        name = f"{bits[0]}.{name[level:]}" if name[level:] else bits[0]
    __import__(name)
    return sys.modules[name]
