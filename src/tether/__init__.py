"""tether: the runtime kernel for LLM agents. The agent proposes; tether decides; evidence accepts."""

from tether.envelope import Envelope, compile_envelope, load_envelope
from tether.events import Event, EventStore
from tether.kernel.harness import Harness
from tether.kernel.outcome import OutputContract
from tether.policy.strict import strict_problems
from tether.state import RunState
from tether.tools import Tool, ToolContext, ToolResult, tool

__version__ = "0.1.0"

__all__ = [
    "Envelope",
    "Event",
    "EventStore",
    "Harness",
    "OutputContract",
    "RunState",
    "Tool",
    "ToolContext",
    "ToolResult",
    "compile_envelope",
    "load_envelope",
    "strict_problems",
    "tool",
]
