"""Governing the tools of agents tether does not drive: a session's run, the one decider, approvals, receipts.

:mod:`.session` is the framework-neutral core; :mod:`.langgraph` and :mod:`.openai_agents` put it in
front of those frameworks' tools (each needs its optional extra).
"""

from .session import Answer, Asking, BudgetStop, Guard, GuardError, session_run_id

__all__ = ["Answer", "Asking", "BudgetStop", "Guard", "GuardError", "session_run_id"]
