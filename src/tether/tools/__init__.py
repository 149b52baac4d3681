"""Host-owned tools: contracts, the ``@tool`` decorator, the registry and the built-ins.

The kernel's view::

    tools = resolve_tools(envelope, extra=user_tools)   # envelope = allowlist
    tool = tools[proposal.name]
    args = tool.validate(proposal.args)                 # ToolArgsError -> err.to_result() to the model
    text = tool.preview(args, ctx)                      # for an ASK: diff / command + cwd / args
    result = tool.invoke(args, ctx)                     # ToolResult; ok=False is data
"""

from .context import ToolContext
from .contract import Tool, ToolArgsError, tool
from .registry import builtin_tools, default_contracts, resolve_tools
from .result import FAILURE_CLASSES, ToolFailure, ToolResult

__all__ = [
    "FAILURE_CLASSES",
    "Tool",
    "ToolArgsError",
    "ToolContext",
    "ToolFailure",
    "ToolResult",
    "builtin_tools",
    "default_contracts",
    "resolve_tools",
    "tool",
]
