"""The shape of a test function, counted with ``ast`` (nothing is imported or run).

A test an agent wants out of the way can be left collected and "passing" while doing nothing: its
assertions deleted, a ``return`` put in front of them, a ``pytest.skip()`` call or a skip decorator added.
Comparing a test's shape at the baseline with its shape at completion catches each of those:

- ``asserts``  ``assert`` statements, plus calls named ``assert*`` (``self.assertEqual``,
  ``np.testing.assert_allclose``) and ``raises``/``warns`` (``pytest.raises``, ``self.assertRaises``);
- ``returns``  ``return`` statements;
- ``skips``    calls and decorators naming ``skip``/``skipIf``/``skipTest``/``xfail``.

Nested functions and classes are not counted: a ``return`` in a helper closure is not the test returning.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from tether.events.kinds_baseline import CaseShape

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
_SKIP_NAMES = frozenset({"skip", "skipif", "skipIf", "skipUnless", "skipTest", "xfail", "importorskip"})
_RAISES_NAMES = frozenset({"raises", "warns", "deprecated_call"})


def parse(source: bytes) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def find_function(tree: ast.Module, cls: str | None, function: str) -> FunctionNode | None:
    """The test function ``function`` (in class ``cls``, a dotted qualname for nested classes)."""
    body: list[ast.stmt] = tree.body
    for name in cls.split(".") if cls else ():
        found = next((n for n in body if isinstance(n, ast.ClassDef) and n.name == name), None)
        if found is None:
            return None
        body = found.body
    hits = [n for n in body if isinstance(n, FunctionNode) and n.name == function]
    return hits[-1] if hits else None  # the last definition is the one Python keeps


def _own_nodes(fn: FunctionNode) -> Iterator[ast.AST]:
    nested = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
    stack: list[ast.AST] = [n for n in fn.body if not isinstance(n, nested)]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(c for c in ast.iter_child_nodes(node) if not isinstance(c, nested))


def _callee(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def _names_skip(node: ast.AST) -> bool:
    return any(_callee(n) in _SKIP_NAMES for n in ast.walk(node) if isinstance(n, (ast.Attribute, ast.Name)))


def shape(fn: FunctionNode) -> CaseShape:
    asserts = returns = skips = 0
    for node in _own_nodes(fn):
        if isinstance(node, ast.Assert):
            asserts += 1
        elif isinstance(node, ast.Return):
            returns += 1
        elif isinstance(node, ast.Call):
            name = _callee(node)
            if name.startswith("assert") or name in _RAISES_NAMES:
                asserts += 1
            elif name in _SKIP_NAMES:
                skips += 1
    skips += sum(1 for d in fn.decorator_list if _names_skip(d))
    return CaseShape(asserts=asserts, returns=returns, skips=skips)


class ShapeReader:
    """Reads and parses each file once (a suite has many tests per file) and answers per-test questions."""

    def __init__(self, source: Callable[[str], bytes | None]) -> None:
        self.source = source
        self._trees: dict[str, tuple[bool, ast.Module | None]] = {}

    def tree(self, path: str) -> tuple[bool, ast.Module | None]:
        """(the file exists, its syntax tree or None when it does not parse)."""
        if path not in self._trees:
            data = self.source(path)
            self._trees[path] = (data is not None, parse(data) if data is not None else None)
        return self._trees[path]

    def shape(self, path: str, cls: str | None, function: str) -> CaseShape | None:
        """The shape of ``cls.function`` in ``path``; None when the file or the function is not there."""
        _, tree = self.tree(path)
        fn = find_function(tree, cls, function) if tree is not None else None
        if tree is None or fn is None:
            return None
        found = shape(fn)
        cls_node = _class(tree, cls) if cls else None
        if cls_node is not None:  # a skip decorator on the class skips every test in it
            extra = sum(1 for d in cls_node.decorator_list if _names_skip(d))
            found = found.model_copy(update={"skips": found.skips + extra})
        return found


def _class(tree: ast.Module, cls: str) -> ast.ClassDef | None:
    body: list[ast.stmt] = tree.body
    node: ast.ClassDef | None = None
    for name in cls.split("."):
        node = next((n for n in body if isinstance(n, ast.ClassDef) and n.name == name), None)
        if node is None:
            return None
        body = node.body
    return node
