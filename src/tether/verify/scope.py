"""Which tests exercise the changed files: import analysis with ``ast``.

A test file is selected when it is itself changed, when a ``conftest.py`` above it
changed, or when the transitive closure of its imports (resolved to modules inside
the workspace) reaches a changed module. Nothing is imported or executed.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath

SKIP_DIRS = frozenset(
    {".git", ".venv", "venv", "env", "node_modules", ".tether", "__pycache__", "build", "dist", ".tox", "site-packages"}
)
SOURCE_ROOTS = ("src", "lib")


def iter_python_files(workspace: Path) -> list[str]:
    out = []
    for p in workspace.rglob("*.py"):
        rel = p.relative_to(workspace)
        if any(part in SKIP_DIRS or (part.startswith(".") and part != ".") for part in rel.parts[:-1]):
            continue
        out.append(rel.as_posix())
    return sorted(out)


def is_test_file(path: str) -> bool:
    name = PurePosixPath(path).name
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def module_names(path: str) -> list[str]:
    """Dotted names a file can be imported as (with and without a ``src/`` root)."""
    p = PurePosixPath(path)
    if p.suffix != ".py":
        return []
    parts = list(p.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if not parts:
        return []
    names = [".".join(parts)]
    if parts[0] in SOURCE_ROOTS and len(parts) > 1:
        names.append(".".join(parts[1:]))
    # A test directory without __init__.py puts its own directory on sys.path (pytest rootdir-relative imports).
    if len(parts) > 1:
        names.append(parts[-1])
    return names


def canonical_module(path: str) -> str:
    """The dotted name a file is imported as: path parts without ``.py``, ``__init__`` and a ``src/`` root."""
    names = module_names(path)
    if not names:
        return ""
    top = PurePosixPath(path).parts[0]
    return names[1] if top in SOURCE_ROOTS and len(names) > 1 and "." in names[0] else names[0]


def imports_of(source: str, module: str, is_package: bool) -> set[str]:
    """Every dotted name the module imports, relative imports resolved against ``module``."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set()
    found: set[str] = set()
    pkg_parts = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = pkg_parts[: len(pkg_parts) - (node.level - 1)] if node.level > 1 else pkg_parts
                base = ".".join([*base_parts, node.module] if node.module else base_parts)
            else:
                base = node.module or ""
            if base:
                found.add(base)
            found.update(f"{base}.{alias.name}" if base else alias.name for alias in node.names)
    return found


def _resolve(name: str, modules: dict[str, str]) -> str | None:
    """The workspace file ``name`` refers to: the longest importable prefix (``a.b.func`` -> ``a/b.py``)."""
    parts = name.split(".")
    while parts:
        hit = modules.get(".".join(parts))
        if hit is not None:
            return hit
        parts = parts[:-1]
    return None


def import_graph(workspace: Path, files: Sequence[str]) -> dict[str, set[str]]:
    """file -> workspace files it imports (directly); package ``__init__`` files of imported modules included."""
    modules: dict[str, str] = {}
    # Prefer the most specific spelling: full path names win over the bare-basename fallback.
    for f in files:
        for i, name in enumerate(module_names(f)):
            if i == 0 or name not in modules:
                modules.setdefault(name, f)
    graph: dict[str, set[str]] = {}
    for f in files:
        try:
            source = (workspace / f).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        module = canonical_module(f)
        deps: set[str] = set()
        for imported in imports_of(source, module, f.endswith("__init__.py")):
            target = _resolve(imported, modules)
            if target is not None and target != f:
                deps.add(target)
        graph[f] = deps
    return graph


def select_tests(workspace: Path, changed_files: Iterable[str]) -> list[str]:
    """Test files (workspace-relative, sorted) whose imports reach a changed file."""
    files = iter_python_files(workspace)
    changed = {PurePosixPath(c).as_posix() for c in changed_files}
    tests = [f for f in files if is_test_file(f)]
    graph = import_graph(workspace, files)
    selected: set[str] = {t for t in tests if t in changed}
    conftest_dirs = [PurePosixPath(c).parent for c in changed if PurePosixPath(c).name == "conftest.py"]
    for t in tests:
        tp = PurePosixPath(t)
        if any(d == PurePosixPath(".") or d in tp.parents for d in conftest_dirs):
            selected.add(t)
    for t in tests:
        seen: set[str] = set()
        stack = [t]
        while stack:
            cur = stack.pop()
            if cur in seen:
                continue
            seen.add(cur)
            if cur in changed:
                selected.add(t)
                break
            stack.extend(graph.get(cur, ()))
    return sorted(selected)
