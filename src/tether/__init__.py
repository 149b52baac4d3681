"""tether: the runtime kernel for LLM agents. The agent proposes; tether decides; evidence accepts."""

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
