"""tether: the runtime kernel for LLM agents. The agent proposes; tether decides; evidence accepts.

The names below are imported on first use (PEP 562): ``import tether.<module>`` (every CLI command, the
hook answering another agent's tool call) must not pay for the whole kernel.
"""

from __future__ import annotations

from tether.exports import lazy

TYPE_CHECKING = False  # not `typing`'s: importing typing costs a hook call milliseconds
if TYPE_CHECKING:
    from tether.envelope import Envelope, compile_envelope, load_envelope
    from tether.events import Event, EventStore
    from tether.kernel.approvals import ApprovalAnswer, ApprovalRequest, Approver
    from tether.kernel.harness import Harness
    from tether.kernel.outcome import OutputContract
    from tether.models import FunctionModel, Message, Model, ModelResponse, ToolCall, ToolSpec, call, reply
    from tether.policy import strict_problems
    from tether.state import RunState
    from tether.status import ActionStatus, ClaimStatus, ControlState, RunStatus
    from tether.tools import Tool, ToolContext, ToolResult, tool

__version__ = "0.1.0"

#: Where each public name lives.
_HOMES = {
    **dict.fromkeys(("Envelope", "compile_envelope", "load_envelope"), "tether.envelope"),
    **dict.fromkeys(("Event", "EventStore"), "tether.events"),
    **dict.fromkeys(("ApprovalAnswer", "ApprovalRequest", "Approver"), "tether.kernel.approvals"),
    "Harness": "tether.kernel.harness",
    "OutputContract": "tether.kernel.outcome",
    **dict.fromkeys(
        ("FunctionModel", "Message", "Model", "ModelResponse", "ToolCall", "ToolSpec", "call", "reply"), "tether.models"
    ),
    "strict_problems": "tether.policy",
    "RunState": "tether.state",
    **dict.fromkeys(("ActionStatus", "ClaimStatus", "ControlState", "RunStatus"), "tether.status"),
    **dict.fromkeys(("Tool", "ToolContext", "ToolResult", "tool"), "tether.tools"),
}


__getattr__ = lazy(globals(), _HOMES)


__all__ = [
    "ActionStatus",
    "ApprovalAnswer",
    "ApprovalRequest",
    "Approver",
    "ClaimStatus",
    "ControlState",
    "Envelope",
    "Event",
    "EventStore",
    "FunctionModel",
    "Harness",
    "Message",
    "Model",
    "ModelResponse",
    "OutputContract",
    "RunState",
    "RunStatus",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolResult",
    "ToolSpec",
    "call",
    "compile_envelope",
    "load_envelope",
    "reply",
    "strict_problems",
    "tool",
]
