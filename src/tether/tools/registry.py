"""The built-in tools, and resolving an envelope's tool list to implementations.

The envelope is the allowlist: ``resolve_tools`` returns exactly the tools the envelope
names, and refuses an envelope that names a tool with no implementation, or declares
fewer effects for a tool than its implementation has (the gate decides on declared
effects, so an under-declared tool would be gated too leniently — fail closed). A tool of a
declared MCP server (``mcp__<server>__<tool>``) has no implementation here: it is bound when its
server starts and lists it (:mod:`tether.tools.mcp`).
"""

from __future__ import annotations

from collections.abc import Sequence

from tether.envelope.schema import Envelope, ToolContract, Trust, split_mcp_tool
from tether.envelope.trust import trust_of
from tether.errors import EnvelopeInvalid, Problem

from .contract import Tool
from .delegate import delegate
from .files import edit_file, list_dir, read_file, write_file
from .finish import finish
from .git import git_diff
from .intent import hypothesis, plan
from .results import read_result
from .search import search
from .shell import bash, run_tests

BUILTINS: tuple[Tool, ...] = (
    read_file,
    list_dir,
    search,
    write_file,
    edit_file,
    bash,
    git_diff,
    run_tests,
    finish,
    plan,
    hypothesis,
    read_result,
    delegate,
)


def builtin_tools() -> dict[str, Tool]:
    """The built-ins by name (a fresh dict; the Tool objects are shared and immutable in use)."""
    return {t.name: t for t in BUILTINS}


def default_contracts() -> list[ToolContract]:
    """The built-ins' contracts, complete enough for strict validation (for ``tether init`` templates)."""
    return [t.contract for t in BUILTINS]


def resolve_tools(envelope: Envelope, extra: Sequence[Tool] = ()) -> dict[str, Tool]:
    """Map every tool the envelope declares to its implementation (``extra`` overrides built-ins).

    Raises ``EnvelopeInvalid`` (an ``InputError``) listing every problem, each at
    ``$.tools[i].name`` or ``$.tools[i].effects``.
    """
    available = _available(extra)
    problems: list[Problem] = []
    resolved: dict[str, Tool] = {}
    servers = {s.name for s in envelope.mcp_servers}
    for i, declared in enumerate(envelope.tools):
        mcp = split_mcp_tool(declared.name)
        if mcp is not None and mcp[0] in servers and declared.name not in available:
            continue  # an MCP server's tool: resolved when its server starts (tether.tools.mcp)
        impl = available.get(declared.name)
        if impl is None:
            problems.append(_unknown(i, declared.name))
        elif (problem := _mismatch(i, declared, impl, envelope)) is not None:
            problems.append(problem)
        else:
            resolved[declared.name] = impl
    if problems:
        raise EnvelopeInvalid(problems)
    return resolved


def _available(extra: Sequence[Tool]) -> dict[str, Tool]:
    """The built-ins, with ``extra`` in place of any of the same name (two extras of one name: a ValueError)."""
    available = builtin_tools()
    seen_extra: set[str] = set()
    for t in extra:
        if t.name in seen_extra:
            raise ValueError(f"two extra tools are named {t.name!r}")
        seen_extra.add(t.name)
        available[t.name] = t
    return available


def _unknown(i: int, name: str) -> Problem:
    return Problem(
        f"$.tools[{i}].name",
        repr(name),
        f"the name of an implemented tool (built-ins: {', '.join(sorted(builtin_tools()))}; "
        "or pass the implementation as an extra tool)",
    )


def _mismatch(i: int, declared: ToolContract, impl: Tool, envelope: Envelope) -> Problem | None:
    """Where the envelope's declaration promises less than the implementation does: an effect it lacks
    (first), or trust for a tool that returns third-party content."""
    missing = [e.value for e in impl.contract.effects if e not in declared.effects]
    if missing:
        return Problem(
            f"$.tools[{i}].effects",
            "[" + ", ".join(e.value for e in declared.effects) + "]",
            f"every effect the {declared.name!r} implementation has; add: {', '.join(missing)}",
        )
    if impl.contract.trust is Trust.UNTRUSTED and trust_of(declared, envelope) is Trust.TRUSTED:
        return Problem(
            f"$.tools[{i}].trust",
            "trusted" if declared.trust else "unset (trusted by default)",
            f"untrusted: the {declared.name!r} implementation returns third-party content",
        )
    return None
