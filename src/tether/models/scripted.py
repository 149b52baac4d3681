"""``scripted:FILE`` — a model that plays back a YAML trajectory of assistant turns.

Used for the demo, for tests and for replays: no key, no network, same answer
every time. The file::

    turns:
      - text: "Let me look around."
        tool_calls:
          - {name: bash, args: {command: "ls"}}
      - text: "Done."
        stop: complete            # optional; default tool_request if tool_calls else complete
        usage: {input_tokens: 120, output_tokens: 8}   # optional

The model is *stateless*: it picks the turn by counting the assistant messages
already in the conversation, so a run resumed in a fresh process continues at
the right turn. This relies on the host appending exactly one assistant
message per model response (see :meth:`ModelResponse.as_message`). When the
script runs out it answers ``complete`` with a text saying so and
``raw_stop_reason="script_exhausted"``; the host decides what that means.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from tether.envelope.document import parse_yaml, read_text
from tether.errors import InputError, Problem
from tether.models.base import COMPACTED_HEAD, Message, ModelResponse, Termination, ToolCall, ToolSpec, Usage

EXHAUSTED = "script_exhausted"
_CALL_ID = re.compile(r"^call_(\d+)_(\d+)$")
_COMPACTED = re.compile("^" + re.escape(COMPACTED_HEAD).replace(r"\{turns\}", r"(\d+)"))


def compacted_turns(messages: Sequence[Message]) -> int:
    """Turns a compaction replaced (its message says how many), so that the script's place survives it."""
    for m in messages:
        found = _COMPACTED.match(m.content) if m.role == "user" else None
        if found:
            return int(found.group(1))
    return 0


MAX_TRAJECTORY_BYTES = 8 * 1024 * 1024  # a recorded run of thousands of turns fits; a runaway file is refused unread


class ScriptInvalid(InputError):
    """A trajectory file that does not match the schema; carries every problem found."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ScriptedToolCall(_Strict):
    name: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict)
    child: Script | None = Field(None, description="A delegate call's child run: its own script (docs/delegation.md).")


class ScriptedUsage(_Strict):
    input_tokens: int = Field(0, ge=0)
    output_tokens: int = Field(0, ge=0)


class ScriptedTurn(_Strict):
    text: str = ""
    tool_calls: list[ScriptedToolCall] = Field(default_factory=list)
    stop: Termination | None = None
    usage: ScriptedUsage = Field(default_factory=ScriptedUsage)

    @model_validator(mode="after")
    def _coherent(self) -> ScriptedTurn:
        if self.stop == "tool_request" and not self.tool_calls:
            raise ValueError("stop: tool_request needs at least one entry in tool_calls")
        return self

    @property
    def termination(self) -> Termination:
        if self.stop is not None:
            return self.stop
        return "tool_request" if self.tool_calls else "complete"


class Script(_Strict):
    turns: list[ScriptedTurn] = Field(min_length=1)


def load_script(path: Path) -> Script:
    """Read and validate a trajectory file; errors name the file and the field path.

    It is read like an envelope (bounded size, regular files only, no duplicate keys or expanding
    aliases), because a trajectory is input a user hands to the CLI just the same.
    """
    data = parse_yaml(read_text(path, MAX_TRAJECTORY_BYTES), str(path))
    try:
        return Script.model_validate(data)
    except ValidationError as exc:
        raise ScriptInvalid([_problem(path, err) for err in exc.errors()]) from exc


def _problem(path: Path, err: Any) -> Problem:
    where = ".".join(str(part) for part in err["loc"]) or "(top level)"
    found = repr(err.get("input"))
    if len(found) > 80:
        found = found[:77] + "..."
    return Problem(path=where, found=found, expected=str(err["msg"]), file=str(path))


class ScriptedModel:
    """Plays ``script`` turn by turn; see the module docstring for the contract."""

    def __init__(self, script: Script, *, name: str = "scripted") -> None:
        self.name = name
        self.script = script

    @classmethod
    def from_file(cls, path: Path, *, name: str | None = None) -> ScriptedModel:
        return cls(load_script(path), name=name or f"scripted:{path}")

    def for_child(self, call_id: str) -> ScriptedModel:
        """The model of the child run a ``delegate`` call ``call_id`` of this script starts: the call's ``child``.

        A child's conversation starts afresh, so it cannot share the parent's script; a delegate call scripted
        without a ``child`` gets a script that says so and ends (the child then stops NEEDS_INPUT).
        """
        found = _CALL_ID.match(call_id)
        script = None
        if found:
            index, i = int(found.group(1)), int(found.group(2))
            calls = self.script.turns[index].tool_calls if index < len(self.script.turns) else []
            script = calls[i].child if i < len(calls) else None
        if script is None:
            script = Script(
                turns=[ScriptedTurn(text=f"[{self.name}] no child script for call {call_id}", stop="error")]
            )
        return ScriptedModel(script, name=self.name)

    def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, max_tokens: int) -> ModelResponse:
        index = sum(1 for m in messages if m.role == "assistant") + compacted_turns(messages)
        if index >= len(self.script.turns):
            return ModelResponse(
                text=f"[{self.name}] the script has {len(self.script.turns)} turns and all have been played.",
                tool_calls=(),
                termination="complete",
                raw_stop_reason=EXHAUSTED,
                usage=Usage(),
                model=self.name,
            )
        turn = self.script.turns[index]
        calls = tuple(
            ToolCall(id=f"call_{index}_{i}", name=c.name, args=copy.deepcopy(c.args))
            for i, c in enumerate(turn.tool_calls)
        )
        return ModelResponse(
            text=turn.text,
            tool_calls=calls,
            termination=turn.termination,
            raw_stop_reason=turn.termination,
            usage=Usage(turn.usage.input_tokens, turn.usage.output_tokens),
            model=self.name,
        )
