"""The Bash grammar loaded without ``tree_sitter_bash``'s ``__init__`` (:mod:`tether.policy.grammar`).

The shortcut is only valid while the package's public ``language`` is its extension module's: an upgrade that
moves it fails here, by name, rather than parsing with something else. Each check runs in a fresh interpreter
(the package must not be imported before), except the comparison of the two grammars.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import tree_sitter
import tree_sitter_bash

from tether.policy import grammar


def fresh(code: str) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ), timeout=120, check=True
    )
    result: dict[str, object] = json.loads(out.stdout)
    return result


def test_the_public_language_is_the_extension_modules() -> None:
    """What the shortcut loads is exactly what ``tree_sitter_bash.language`` is."""
    binding = sys.modules[grammar.BINDING]
    assert tree_sitter_bash.language is binding.language
    assert binding.__spec__ is not None and binding.__spec__.origin is not None
    assert Path(binding.__spec__.origin).parent == Path(tree_sitter_bash.__file__).parent  # the package's own


def test_loaded_without_the_package_init_and_the_same_grammar() -> None:
    probe = """
import json, sys
from tree_sitter import Language
from tether.policy import grammar
pointer = grammar.language()
before = {m: m in sys.modules for m in ("tree_sitter_bash", "importlib.resources", "tempfile")}
import tree_sitter_bash  # afterwards, the ordinary way: reuses the loaded binding, same pointer
print(json.dumps({"before": before, "same": Language(tree_sitter_bash.language()) == Language(pointer),
                  "reused": tree_sitter_bash.language is sys.modules[grammar.BINDING].language}))
"""
    seen = fresh(probe)
    assert seen["before"] == {"tree_sitter_bash": False, "importlib.resources": False, "tempfile": False}
    assert seen["same"] is True and seen["reused"] is True


def test_after_the_package_was_imported_its_own_binding_is_used() -> None:
    probe = """
import json, sys
import tree_sitter_bash
from tree_sitter import Language
from tether.policy import grammar
print(json.dumps({"same": Language(grammar.language()) == Language(tree_sitter_bash.language())}))
"""
    assert fresh(probe) == {"same": True}


def test_the_ordinary_import_when_the_binding_cannot_be_found() -> None:
    """No package directory to load from (a finder that is not a path, a zip): the package is imported."""
    probe = """
import json, sys
from tree_sitter import Language
from tether.policy import grammar
grammar.find_spec = lambda name: None
pointer = grammar.language()
print(json.dumps({"package": "tree_sitter_bash" in sys.modules,
                  "same": Language(pointer) == Language(sys.modules["tree_sitter_bash"].language())}))
"""
    assert fresh(probe) == {"package": True, "same": True}


def test_the_parser_parses_bash() -> None:
    tree = grammar.parser().parse(b"ls -la | grep x > out")
    assert tree.root_node.type == "program" and not tree.root_node.has_error
    assert tree_sitter.Language(grammar.language()) == tree_sitter.Language(tree_sitter_bash.language())


def test_tree_sitter_loaded_without_its_package_init_and_the_same_classes() -> None:
    """``tree_sitter``'s ``Parser`` and ``Language`` come from its extension module: the package's ``__init__``
    (which imports ``typing``) does not run; the package imported afterwards reuses that module."""
    probe = """
import json, sys
from tether.policy import grammar
tree = grammar.parser().parse(b"echo hi | wc -l")
before = {m: m in sys.modules for m in ("tree_sitter", "typing")}
binding = sys.modules[grammar.TREE_SITTER_BINDING]
import tree_sitter
print(json.dumps({"before": before, "parsed": tree.root_node.type, "error": tree.root_node.has_error,
                  "reused": tree_sitter.Parser is binding.Parser and tree_sitter.Language is binding.Language,
                  "made": type(grammar.parser()) is tree_sitter.Parser}))
"""
    assert fresh(probe) == {
        "before": {"tree_sitter": False, "typing": False},
        "parsed": "program",
        "error": False,
        "reused": True,
        "made": True,
    }


def test_tree_sitter_the_ordinary_way_when_its_binding_cannot_be_found() -> None:
    probe = """
import json, sys
from tether.policy import grammar
real = grammar.find_spec
grammar.find_spec = lambda name: None if name == grammar.TREE_SITTER else real(name)
tree = grammar.parser().parse(b"ls")
print(json.dumps({"package": "tree_sitter" in sys.modules, "parsed": tree.root_node.type}))
"""
    assert fresh(probe) == {"package": True, "parsed": "program"}


def test_tree_sitter_imported_already_is_used_as_it_is() -> None:
    probe = """
import json, sys
import tree_sitter
from tether.policy import grammar
print(json.dumps({"made": type(grammar.parser()) is tree_sitter.Parser}))
"""
    assert fresh(probe) == {"made": True}


def test_find_spec_finds_as_importlibs() -> None:
    """The finders asked in turn find what ``importlib.util.find_spec`` finds (``importlib.util`` itself imports
    ``contextlib``, which a cold call does without), and nothing for a name no finder knows."""
    import importlib.util

    for name in (grammar.PACKAGE, grammar.TREE_SITTER, "json", "_sqlite3"):
        mine, theirs = grammar.find_spec(name), importlib.util.find_spec(name)
        assert mine is not None and theirs is not None
        assert (mine.name, mine.origin, mine.submodule_search_locations) == (
            theirs.name,
            theirs.origin,
            theirs.submodule_search_locations,
        )
    assert grammar.find_spec("no_such_module_for_tether") is None
