"""Event kinds of a run driven by another agent's hooks (Claude Code, Codex; see tether.hooks).

- ``hook.received``  one hook call as the agent sent it: which agent, which event, its session and directory,
  and the fields of the event tether keeps (the prompt, the session's source, the stop flag). Tool calls
  themselves become the usual ``action.proposed`` / ``action.decided`` / ``action.completed`` events.
- ``hook.stop``      the answer to a stop: the sensors' verdict, and whether the stop was blocked.
- ``hook.bypassed``  the agent reported running a call tether had refused it (DENY; for Codex also ASK, which
  Codex is told as a refusal): the user overrode the hook, or the hook was not in the way. Recorded with the
  call's receipt and flagged by ``tether show``: the log says what ran, and that it ran against the verdict.
- ``hook.input_changed``  the agent reported running a call with an input other than the one tether judged under
  its id (another PreToolUse hook's ``updatedInput``): what ran is proposed and judged under an id of its own, and
  its receipt recorded there; this names both and the verdict on what ran. A stop is refused while one was refused.

``hook.received`` is defined in :mod:`.kinds_calls` (every hook call writes it) and named here as ever; this
module is one of the registry's later ones (``payload.LATER``): a tool call builds neither of the other two.
"""

from tether.plain import Field

from .kinds_calls import Agent, HookReceived
from .payload import Payload, new_list, register

__all__ = ["Agent", "HookBypassed", "HookInputChanged", "HookReceived", "HookStop"]


@register("hook.stop")
class HookStop(Payload):
    blocked: bool = Field(description="True: the agent was told to go on (the evidence does not accept the stop).")
    accepted: bool = Field(description="The verdict of the required sensors and the test-integrity checks.")
    reasons: list[str] = Field(default_factory=new_list)
    blocks_in_row: int = Field(0, ge=0, description="Stops blocked in a row, this one included.")
    changed: list[str] | None = Field(
        None,
        description="A stop let through unverified: the files its checks found changed (file tools' writes, Python"
        " files touched, test files), none of which the next session's start takes as the user's. None: not listed"
        " (another stop, or too many: then every file that differs is taken as the agent's).",
    )


@register("hook.bypassed")
class HookBypassed(Payload):
    call_id: str
    tool: str
    verdict: str = Field(description="What tether had answered the agent: DENY, or ASK (a refusal for Codex).")
    rule: str = Field("", description="The rule that decided.")
    reason: str = ""
    event: str = Field(
        description="The hook event that reported the run (PostToolUse or PostToolUseFailure), or PreToolUse: the"
        " call's receipt came first, and its proposal, judged after it ran, was refused."
    )


@register("hook.input_changed")
class HookInputChanged(Payload):
    call_id: str = Field(description="The call as tether judged it before it ran.")
    ran_as: str = Field(description="The id what ran was proposed, judged and recorded under (``<call_id>~...``).")
    tool: str
    verdict: str = Field(description="The gate's verdict on what ran, judged after it ran: ALLOW, ASK or DENY.")
    rule: str = Field("", description="The rule that decided it.")
    reason: str = ""
    event: str = Field(description="The hook event that reported the run: PostToolUse or PostToolUseFailure.")
