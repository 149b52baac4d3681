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

Standard library and ``tree_sitter`` only, no other module of tether: ``benchmarks/hook.py`` loads this file by
its path to measure the floor of a decision (the interpreter and the libraries any decision needs).
"""

from __future__ import annotations

import sys
from importlib.machinery import ExtensionFileLoader, PathFinder
from importlib.util import find_spec, module_from_spec

import tree_sitter

PACKAGE = "tree_sitter_bash"
BINDING = PACKAGE + "._binding"


def language() -> object:
    """``tree_sitter_bash.language()``: the grammar's pointer, without the package's ``__init__`` when possible."""
    binding = sys.modules.get(BINDING) or _binding()
    load = getattr(binding, "language", None)
    if not callable(load):
        import tree_sitter_bash

        return tree_sitter_bash.language()
    pointer: object = load()
    return pointer


def _binding() -> object | None:
    """The extension module ``tree_sitter_bash._binding``, loaded from the package's directory; None when the
    package or the module is not where the import system would find them."""
    if PACKAGE in sys.modules:  # already imported: its own binding is the one to use
        return sys.modules.get(BINDING)
    package = find_spec(PACKAGE)  # found as ``import`` would find it (sys.meta_path), not executed
    if package is None or not package.submodule_search_locations:
        return None
    spec = PathFinder.find_spec(BINDING, list(package.submodule_search_locations))
    if spec is None or not isinstance(spec.loader, ExtensionFileLoader):
        return None
    module = module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[BINDING] = module
    return module


def parser() -> tree_sitter.Parser:
    """A Bash parser."""
    return tree_sitter.Parser(tree_sitter.Language(language()))
