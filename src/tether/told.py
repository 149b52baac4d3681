"""What a hooked agent is told of the gate's verdict, where that is not the verdict itself.

The gate decides ALLOW, ASK or DENY and the log keeps that; but what the verdict does in the agent depends on its
hook protocol and on the permission mode the call came in. Codex has no ``ask`` (openai/codex#28437), so an ASK
reaches it as a refusal. Claude Code asks the user only in the modes that prompt (:data:`PROMPTING`): elsewhere a
hook's ``ask`` may run the call with nobody asked, so tether refuses it. In plan mode a hook's ``allow`` would
skip the permission flow that holds the session to reading, so tether sends no decision, as in a mode it does not
know. One pure function says
which, for the hook that answers (``hooks/session.py``) and for the timeline that shows the answer beside the
verdict (``observe/timeline.py``): a reader of ``tether show`` sees what the agent heard, from the logged verdict
and the mode its ``hook.received`` kept.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: a cold hook call imports this module and not typing
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

#: Claude Code's permission modes that show the user a permission prompt (its permission-modes page): there a hook's
#: ``ask`` is asked. In the others a call may run with nobody asked — ``bypassPermissions`` ran a hook's ask
#: unprompted on 2.1.199 (anthropics/claude-code#77212, fixed by 2.1.233), ``auto`` does still
#: (anthropics/claude-code#89561), ``dontAsk`` never prompts — and a hook cannot tell which release it answers.
PROMPTING = frozenset({"default", "plan", "acceptEdits"})


class Told:
    """The answer the agent got (``deny``, or ``no decision``: the agent's own permission flow decides) and why.
    (A plain class: a cold hook call imports neither ``typing`` nor ``dataclasses``.)"""

    __slots__ = ("answer", "why")

    def __init__(self, answer: str, why: str) -> None:
        self.answer, self.why = answer, why


def refuses_asks(agent: str, fields: Mapping[str, Any]) -> bool:
    """Whether a PreToolUse of ``agent`` with these fields (its payload, or the ``detail`` its ``hook.received``
    keeps) has an ASK answered as a refusal: always for Codex; for Claude Code when its ``permission_mode`` is not
    one of :data:`PROMPTING` (a mode tether does not know, or a value that is no string, included; a payload without
    the field is taken as ``default``, which every PreToolUse the hooks reference shows carries anyway)."""
    if agent == "codex":
        return True
    mode = fields.get("permission_mode", "default")
    return not (isinstance(mode, str) and mode in PROMPTING)


def told(agent: str, verdict: str, fields: Mapping[str, Any]) -> Told | None:
    """What ``agent`` is told of ``verdict`` for a PreToolUse with these fields; None when it is the verdict."""
    if verdict == "ASK" and refuses_asks(agent, fields):
        if agent == "codex":
            return Told("deny", "Codex has no ask: refused, with the `tether approve` command that lets it through")
        mode = fields.get("permission_mode")
        return Told(
            "deny",
            f"refused, not asked: in permission mode {mode!r} Claude Code may run a call a hook asks about without"
            " asking anyone",
        )
    if verdict == "ALLOW" and agent == "claude-code" and not allows_hold(fields):
        mode = fields.get("permission_mode")
        where = "in plan mode" if mode == "plan" else f"in permission mode {mode!r}, which tether does not know,"
        return Told("no decision", f"{where} Claude Code's own permission flow decides")
    return None


#: Claude Code's permission modes other than ``plan`` (its permission-modes page): where a hook's ``allow`` lets a
#: call through as Claude Code's own rules would have, or more readily.
ALLOWING = frozenset({"default", "acceptEdits", "auto", "dontAsk", "bypassPermissions"})


def allows_hold(fields: Mapping[str, Any]) -> bool:
    """Whether a Claude Code ALLOW is sent as ``allow``: in a mode of :data:`ALLOWING`, or a payload without the field
    (taken as ``default``, as :func:`refuses_asks` takes it). Not in ``plan`` (its flow holds the session to reading),
    nor in a mode tether does not know, or a value that is no string: one may hold the session as ``plan`` does."""
    mode = fields.get("permission_mode", "default")
    return isinstance(mode, str) and mode in ALLOWING
