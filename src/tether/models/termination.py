"""Normalising each provider's stop reason into one :data:`Termination`.

Providers disagree on words (``length`` vs ``max_tokens``) and some servers
are loose about them (a few OpenAI-compatible local servers answer
``finish_reason: "stop"`` while returning tool calls). The tables live here, in
one place, so the kernel never branches on a provider's vocabulary. Anything a
table does not know becomes ``"unknown"``: the host decides, fail closed.

Which stop words mean a reply's tool calls are *meant* (the host may run them), from what the servers send:

* ``tool_calls`` (and the legacy ``function_call``): OpenAI, and what vLLM (auto tool choice), llama.cpp's
  server, Ollama's ``/v1``, LM Studio and OpenRouter (which normalises every upstream's word) send with calls;
* ``stop``: vLLM with a ``required`` or named tool choice, and older lenient servers, send it with calls;
* none at all (``null`` or no field): local servers that do not track it. Their calls run, or nothing would;
* Anthropic's ``tool_use``, and ``end_turn``/``stop_sequence`` with calls (lenient compatible servers).

Every other word with calls is ``"unknown"`` and the calls are not run (:data:`tether.kernel.turn.UNMEANT_CALL`):
vLLM's ``abort`` and ``error``, OpenRouter's and Mistral's ``error``, Gemini's ``MALFORMED_FUNCTION_CALL``,
Anthropic's ``pause_turn`` (a server tool paused: tether runs none) and words nobody sends yet say that the
generation ended some other way than by deciding to call, so its calls may be partial or never meant.
"""

from __future__ import annotations

from collections.abc import Mapping

from tether.models.base import Termination

OPENAI_FINISH: Mapping[str, Termination] = {
    "stop": "complete",
    "tool_calls": "tool_request",
    "function_call": "tool_request",
    "length": "truncated",
    "content_filter": "refusal",
}

ANTHROPIC_STOP: Mapping[str, Termination] = {
    "end_turn": "complete",
    "stop_sequence": "complete",
    "tool_use": "tool_request",
    "max_tokens": "truncated",
    "model_context_window_exceeded": "truncated",
    "refusal": "refusal",
    # "pause_turn" (a server-side tool paused) is deliberately absent: we do not
    # run server tools, so it is unexpected and left to the host as "unknown".
}


def openai_termination(finish_reason: str | None, *, refused: bool, has_tool_calls: bool) -> Termination:
    """Map an OpenAI chat-completions ``finish_reason``; a ``message.refusal`` always wins."""
    if refused:
        return "refusal"
    if finish_reason is None:
        return _unsaid(has_tool_calls)
    return reconcile(OPENAI_FINISH.get(finish_reason, "unknown"), has_tool_calls=has_tool_calls)


def anthropic_termination(stop_reason: str | None, *, has_tool_calls: bool) -> Termination:
    """Map an Anthropic messages ``stop_reason``."""
    if stop_reason is None:
        return _unsaid(has_tool_calls)
    return reconcile(ANTHROPIC_STOP.get(stop_reason, "unknown"), has_tool_calls=has_tool_calls)


def _unsaid(has_tool_calls: bool) -> Termination:
    """No stop word at all: the calls, if any, are what the reply is for; without any it says nothing."""
    return "tool_request" if has_tool_calls else "unknown"


def reconcile(termination: Termination, *, has_tool_calls: bool) -> Termination:
    """Make the termination agree with what was actually returned.

    * "complete" with tool calls present is a tool request (lenient servers).
    * "tool_request" with no tool calls is incoherent: ``"unknown"``, never a silent finish.
    * "truncated" with tool calls stays truncated: the arguments may be cut off.
    """
    if termination == "complete" and has_tool_calls:
        return "tool_request"
    if termination == "tool_request" and not has_tool_calls:
        return "unknown"
    return termination
