"""Reading a YAML or JSON document that may be hostile: bounded in size, depth and alias expansion.

Envelopes, plans and policy cases are input files: a person may have written them carelessly and an
adversary may have written them on purpose. Plain ``yaml.safe_load`` accepts a duplicated key (the last
one silently wins, so a reviewer can read ``write: []`` while ``write: ["**"]`` applies), a recursive
alias, and a few lines of aliases that expand to a billion nodes when anything walks the result
("billion laughs"). Here the composed node graph is checked before anything is built from it:

* a document larger than :data:`MAX_DOCUMENT_BYTES` is not parsed at all;
* every mapping key appears once (compared by value, so ``yes`` and ``true`` are the same key);
* aliases may add at most :data:`MAX_ALIAS_NODES` nodes beyond the document's own, and may not refer to
  a node that contains them;
* nesting is at most :data:`MAX_DEPTH` deep.

Each finding is a :class:`~tether.errors.Problem` naming the JSON path and what to write instead; they
are raised together as :class:`~tether.errors.EnvelopeInvalid`. Text that does not parse at all raises
:class:`~tether.errors.ParseError` with line and column.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from tether.errors import EnvelopeInvalid, FileError, ParseError, Problem

from .source import MAX_DOCUMENT_BYTES, read_bytes

MAX_ALIAS_NODES = 10_000
"""Nodes that aliases may add beyond the document's own (each use of an alias counts its whole subtree)."""
MAX_DEPTH = 64
"""Nesting depth of mappings and sequences; an envelope needs about ten (tool input schemas included)."""

_MERGE_TAG = "tag:yaml.org,2002:merge"


def read_document(path: Path) -> Any:
    """Parse a YAML or JSON file (by suffix; YAML is a superset, so anything else is YAML)."""
    return parse_text(read_text(path), path)


def parse_text(text: str, path: Path) -> Any:
    """Parse the text of ``path`` as :func:`read_document` does: JSON for a ``.json`` file, else YAML."""
    if path.suffix == ".json":
        return parse_json(text, str(path))
    return parse_yaml(text, str(path))


def read_text(path: Path, limit: int = MAX_DOCUMENT_BYTES) -> str:
    """The UTF-8 text of a regular file of at most ``limit`` bytes (a FIFO or device is refused, not read)."""
    return decode(read_bytes(path, limit), path)


def decode(data: bytes, path: Path) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise FileError(f"{path}: cannot read (not UTF-8 at byte {e.start})", path=str(path)) from e


def parse_yaml(text: str, file: str) -> Any:
    """Compose, check (keys, aliases, depth), then construct. An empty document is ``None``."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        problems = check_node(node, loader, file)
        if problems:
            raise EnvelopeInvalid(problems)
        return loader.construct_document(node)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(e, "problem", None) or str(e)
        raise ParseError(f"{file}: invalid YAML{where}: {problem}", path=file) from e
    except RecursionError as e:
        raise EnvelopeInvalid([Problem("$", "nesting too deep to parse", f"at most {MAX_DEPTH} levels", file)]) from e
    finally:
        loader.dispose()


def check_node(root: Node, loader: yaml.SafeLoader, file: str) -> list[Problem]:
    """Duplicate keys, recursive or expanding aliases and excessive depth in a composed document.

    Walks the graph depth first; a node met again on another path is an alias use and counts as an
    expansion. The walk stops at the first expansion past the limit, so its cost is bounded by the
    document's own size plus :data:`MAX_ALIAS_NODES`.
    """
    walk = _Walk(loader, file)
    stack: list[tuple[Node, str, int, bool]] = [(root, "$", 0, False)]
    while stack and not walk.stopped:
        node, path, depth, leaving = stack.pop()
        if leaving:
            walk.on_path.discard(id(node))
            continue
        first_visit = id(node) not in walk.seen
        if walk.enter(node, path, depth):
            stack.append((node, path, depth, True))
            children = walk.children(node, path, first_visit)
            stack.extend((child, p, depth + 1, False) for child, p in reversed(children))
    return walk.problems


class _Walk:
    """What :func:`check_node` keeps while it walks: the problems found, the nodes seen and on the path."""

    def __init__(self, loader: yaml.SafeLoader, file: str) -> None:
        self.loader = loader
        self.file = file
        self.problems: list[Problem] = []
        self.seen: set[int] = set()
        self.on_path: set[int] = set()
        self.expanded = 0
        self.stopped = False
        """Set at the first expansion past :data:`MAX_ALIAS_NODES`: the walk ends there."""

    def enter(self, node: Node, path: str, depth: int) -> bool:
        """Record ``node`` as seen; whether to walk its children (not for a cycle, a scalar, or too deep)."""
        if id(node) in self.on_path:
            self._problem(path, "an alias to a node that contains it", "a document without cycles")
            return False
        if id(node) in self.seen:
            self.expanded += 1
            if self.expanded > MAX_ALIAS_NODES:
                self._problem(
                    path,
                    f"aliases expanding to more than {MAX_ALIAS_NODES} extra nodes",
                    "the repeated parts written out, or fewer aliases",
                )
                self.stopped = True
                return False
        self.seen.add(id(node))
        if isinstance(node, ScalarNode):
            return False
        if depth >= MAX_DEPTH:
            self._problem(path, f"nesting deeper than {MAX_DEPTH} levels", "a flatter document")
            return False
        self.on_path.add(id(node))
        return True

    def children(self, node: Node, path: str, first_visit: bool) -> list[tuple[Node, str]]:
        """The children of a sequence or mapping, each with its path (a mapping's keys checked once)."""
        if isinstance(node, SequenceNode):
            return [(child, f"{path}[{i}]") for i, child in enumerate(node.value)]
        if isinstance(node, MappingNode):
            return self._entries(node, path, first_visit)
        return []

    def _entries(self, node: MappingNode, path: str, first_visit: bool) -> list[tuple[Node, str]]:
        """A mapping's keys and values (a merge key's value at the mapping's own path); on the first
        visit, a key met twice is a problem."""
        keys: dict[Any, int] = {}
        children: list[tuple[Node, str]] = []
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                children.append((value_node, path))
                continue
            key = _key(key_node, self.loader)
            where = f"{path}.{key}" if isinstance(key, str) else f"{path}[{key!r}]"
            if first_visit and key is not None:
                self._once(keys, key, where, key_node.start_mark.line + 1)
            children.append((key_node, where))
            children.append((value_node, where))
        return children

    def _once(self, keys: dict[Any, int], key: Any, where: str, line: int) -> None:
        """Note ``key`` at ``line``; a problem when ``keys`` already holds it."""
        try:
            first = keys.get(key)
            keys.setdefault(key, line)
        except TypeError:
            return  # unhashable: the constructor reports it
        if first is not None:
            self._problem(
                where,
                f"key {key!r} again at line {line} (first at line {first})",
                "each key once (YAML keeps only the last; merge the two entries)",
            )

    def _problem(self, path: str, what: str, instead: str) -> None:
        self.problems.append(Problem(path, what, instead, self.file))


def _key(node: Node, loader: yaml.SafeLoader) -> Any:
    """The value a scalar key constructs to (``yes`` and ``true`` are one key); None for complex keys."""
    if not isinstance(node, ScalarNode):
        return None
    return loader.construct_object(node)


def parse_json(text: str, file: str) -> Any:
    """JSON with duplicate keys and excessive depth refused (the standard parser keeps the last key)."""
    duplicates: list[tuple[dict[str, Any], str]] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in items:
            if k in out:
                duplicates.append((out, k))
            out[k] = v
        return out

    try:
        data = json.loads(text, object_pairs_hook=pairs)
    except json.JSONDecodeError as e:
        raise ParseError(f"{file}: invalid JSON at line {e.lineno}, column {e.colno}: {e.msg}", path=file) from e
    except RecursionError as e:
        raise EnvelopeInvalid([Problem("$", "nesting too deep to parse", f"at most {MAX_DEPTH} levels", file)]) from e
    problems = [
        Problem(f"{where}.{key}", f"key {key!r} more than once", "each key once (JSON keeps only the last)", file)
        for obj, key in duplicates
        for where in [_json_path_of(data, obj)]
    ]
    deep = _too_deep(data)
    if deep is not None:
        problems.append(Problem(deep, f"nesting deeper than {MAX_DEPTH} levels", "a flatter document", file))
    if problems:
        raise EnvelopeInvalid(problems)
    return data


def _walk(data: Any) -> list[tuple[Any, str, int]]:
    out: list[tuple[Any, str, int]] = []
    stack: list[tuple[Any, str, int]] = [(data, "$", 0)]
    while stack:
        value, path, depth = stack.pop()
        out.append((value, path, depth))
        if isinstance(value, dict):
            stack.extend((v, f"{path}.{k}", depth + 1) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, f"{path}[{i}]", depth + 1) for i, v in enumerate(value))
    return out


def _json_path_of(data: Any, target: object) -> str:
    return next((path for value, path, _ in _walk(data) if value is target), "$")


def _too_deep(data: Any) -> str | None:
    return next((path for _, path, depth in _walk(data) if depth > MAX_DEPTH), None)
