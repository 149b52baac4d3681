"""tether: the runtime kernel for LLM agents. The agent proposes; tether decides; evidence accepts."""

__version__ = "0.1.0"
