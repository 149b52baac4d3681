"""The Bash grammar, loaded the cheapest supported way: the parser :mod:`tether.policy.shell` uses.

tether needs one thing from ``tree_sitter_bash``: ``language()``, the pointer to the compiled grammar, which the
package's ``__init__`` re-exports from its extension module ``tree_sitter_bash._binding``. Importing the package
runs that ``__init__``, which also imports ``importlib.resources`` (with ``tempfile``, ``shutil``, ``random``,
``bz2``, ``lzma``, …) for its highlight query, which tether never reads: on every cold hook call. So the
extension module is found in the package's directory and loaded by the import system's own extension loader,
under its own name in ``sys.modules`` (a later ``import tree_sitter_bash`` reuses it rather than load it twice),
without running the package's ``__init__``. Whenever that is not possible (no such package directory, no
``_binding`` in it, no ``language`` in it) the package is imported the ordinary way. ``tests/policy/
test_grammar.py`` fails if the package's public ``language`` is no longer the extension module's (an upgrade
that moved it) and checks both ways give the same grammar.

``tree_sitter`` itself is loaded the same way: its ``__init__`` re-exports ``Parser`` and ``Language`` (and the
rest) from its extension module ``tree_sitter._binding``, and imports ``typing`` for one ``Protocol``: ``typing``
(with ``re``, ``enum``, ``contextlib``, ``functools``, ``collections``) was ~10 M instructions of a cold hook call
once tether's own modules no longer imported it (tether/typeless.py). The same fallback: the package the ordinary
way when its extension module is not where the import system would find it, or lacks ``Parser`` or ``Language``.

Standard library and ``tree_sitter`` only, no other module of tether: ``benchmarks/hook.py`` loads this file by
its path to measure the floor of a decision (the interpreter and the libraries any decision needs).
"""

from __future__ import annotations

import sys

# importlib.util's and importlib.machinery's very objects, from the frozen modules the interpreter starts with: the
# importlib package itself imports warnings, and importlib.util contextlib
from _frozen_importlib import ModuleSpec, module_from_spec
from _frozen_importlib_external import ExtensionFileLoader, PathFinder

TYPE_CHECKING = False  # not typing's: see the module docstring
if TYPE_CHECKING:
    from typing import Any

    import tree_sitter

PACKAGE = "tree_sitter_bash"
BINDING = PACKAGE + "._binding"
TREE_SITTER = "tree_sitter"
TREE_SITTER_BINDING = TREE_SITTER + "._binding"


def language() -> object:
    """``tree_sitter_bash.language()``: the grammar's pointer, without the package's ``__init__`` when possible."""
    binding = sys.modules.get(BINDING) or _binding(PACKAGE, BINDING)
    load = getattr(binding, "language", None)
    if not callable(load):
        import tree_sitter_bash

        return tree_sitter_bash.language()
    pointer: object = load()
    return pointer


def _binding(name: str, binding_name: str) -> object | None:
    """The extension module ``binding_name`` of package ``name``, loaded from the package's directory; None when
    the package or the module is not where the import system would find them."""
    if name in sys.modules:  # already imported: its own binding is the one to use
        return sys.modules.get(binding_name)
    package = find_spec(name)  # found as ``import`` would find it (sys.meta_path), not executed
    if package is None or not package.submodule_search_locations:
        return None
    spec = PathFinder.find_spec(binding_name, list(package.submodule_search_locations))
    if spec is None or not isinstance(spec.loader, ExtensionFileLoader):
        return None
    module = module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[binding_name] = module
    return module


def find_spec(name: str) -> ModuleSpec | None:
    """``importlib.util.find_spec`` of a top-level module not imported yet: the import system's finders
    (``sys.meta_path``) asked in turn, as ``import`` asks them; none executes it. (``importlib.util`` imports
    ``contextlib``, which a cold hook call does without: tether/scoped.py.)"""
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        spec = find(name, None) if find is not None else None
        if spec is not None:
            return spec  # type: ignore[no-any-return]
    return None


def _tree_sitter() -> Any:
    """``tree_sitter``'s ``Parser`` and ``Language``: from its extension module without the package's ``__init__``
    when possible, else the package imported the ordinary way."""
    found: Any = sys.modules.get(TREE_SITTER) or sys.modules.get(TREE_SITTER_BINDING)
    found = found or _binding(TREE_SITTER, TREE_SITTER_BINDING)
    if found is None or not (hasattr(found, "Parser") and hasattr(found, "Language")):
        import tree_sitter

        return tree_sitter
    return found


def parser() -> tree_sitter.Parser:
    """A Bash parser."""
    binding = _tree_sitter()
    made: tree_sitter.Parser = binding.Parser(binding.Language(language()))
    return made
