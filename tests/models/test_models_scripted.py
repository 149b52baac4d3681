"""Scripted and function models: deterministic, offline, and resumable across processes."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from tether.errors import EnvelopeInvalid, FileError, ParseError
from tether.models.base import Message, ModelResponse, ToolCall, ToolSpec, Usage
from tether.models.function import FunctionModel
from tether.models.scripted import EXHAUSTED, MAX_TRAJECTORY_BYTES, ScriptedModel, ScriptInvalid

TRAJECTORY = """
turns:
  - text: "Let me look."
    tool_calls:
      - {name: bash, args: {command: "ls"}}
      - {name: read_file, args: {path: "a.py", start: 1}}
    usage: {input_tokens: 50, output_tokens: 9}
  - text: "The fix is too long to finish"
    stop: truncated
  - text: "Done."
"""


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "trajectory.yaml"
    path.write_text(TRAJECTORY)
    return path


def play(model: ScriptedModel, transcript: list[Message]) -> ModelResponse:
    r = model.complete(transcript, [], max_tokens=100)
    transcript.append(r.as_message())
    for call in r.tool_calls:
        transcript.append(Message("tool", "ok", tool_call_id=call.id, name=call.name))
    return r


def test_turns_play_in_order_with_deterministic_ids(script: Path) -> None:
    model = ScriptedModel.from_file(script, name="scripted:trajectory.yaml")
    transcript = [Message("user", "fix it")]
    first = play(model, transcript)
    assert first.termination == "tool_request"
    assert first.tool_calls == (
        ToolCall("call_0_0", "bash", {"command": "ls"}),
        ToolCall("call_0_1", "read_file", {"path": "a.py", "start": 1}),
    )
    assert first.usage == Usage(50, 9)
    assert first.model == "scripted:trajectory.yaml"

    second = play(model, transcript)
    assert (second.termination, second.raw_stop_reason) == ("truncated", "truncated")
    third = play(model, transcript)
    assert (third.text, third.termination, third.tool_calls) == ("Done.", "complete", ())


def test_a_fresh_process_resumes_at_the_right_turn(script: Path) -> None:
    transcript = [Message("user", "fix it")]
    play(ScriptedModel.from_file(script), transcript)
    play(ScriptedModel.from_file(script), transcript)
    resumed = ScriptedModel.from_file(script)  # as after a restart: only the transcript carries state
    assert resumed.complete(transcript, [], max_tokens=100).text == "Done."
    assert resumed.complete(transcript, [], max_tokens=100).text == "Done."  # asking twice does not advance


def test_an_exhausted_script_completes_and_says_so(script: Path) -> None:
    model = ScriptedModel.from_file(script)
    transcript = [Message("user", "go")]
    for _ in range(3):
        play(model, transcript)
    r = model.complete(transcript, [], max_tokens=100)
    assert (r.termination, r.raw_stop_reason, r.tool_calls) == ("complete", EXHAUSTED, ())
    assert "3 turns" in r.text


def test_returned_args_are_copies(script: Path) -> None:
    model = ScriptedModel.from_file(script)
    model.complete([], [], max_tokens=1).tool_calls[0].args["command"] = "rm -rf /"
    assert model.complete([], [], max_tokens=1).tool_calls[0].args == {"command": "ls"}


def test_invalid_script_names_file_and_every_field(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        "turns:\n"
        "  - text: hi\n"
        "    stop: finished\n"
        "  - tool_calls: [{args: {command: ls}}]\n"
        "    stpo: complete\n"
        "  - text: ok\n"
        "    stop: tool_request\n"
    )
    with pytest.raises(ScriptInvalid) as info:
        ScriptedModel.from_file(path)
    where = {(p.file, p.path) for p in info.value.problems}
    assert (str(path), "turns.0.stop") in where
    assert (str(path), "turns.1.tool_calls.0.name") in where
    assert (str(path), "turns.1.stpo") in where
    assert any(p.path.startswith("turns.2") and "tool_calls" in p.expected for p in info.value.problems)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("text", ["[]", "turns: []", "hello", ""])
def test_a_file_without_turns_is_invalid(tmp_path: Path, text: str) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(text)
    with pytest.raises(ScriptInvalid):
        ScriptedModel.from_file(path)


def test_unreadable_and_unparseable_files(tmp_path: Path) -> None:
    with pytest.raises(FileError, match=r"missing\.yaml"):
        ScriptedModel.from_file(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("turns: [\n")
    with pytest.raises(ParseError, match=r"broken\.yaml"):
        ScriptedModel.from_file(broken)


def test_hostile_trajectory_files_are_refused_before_they_are_parsed(tmp_path: Path) -> None:
    huge = tmp_path / "huge.yaml"
    huge.write_text("turns:\n" + '  - text: "x"\n' * (MAX_TRAJECTORY_BYTES // 13 + 1))
    with pytest.raises(EnvelopeInvalid, match=r"huge\.yaml") as info:
        ScriptedModel.from_file(huge)
    assert f"at most {MAX_TRAJECTORY_BYTES} bytes" in str(info.value)

    twice = tmp_path / "twice.yaml"
    twice.write_text("turns:\n  - text: a\n    text: b\n")  # which text would play? neither: refused
    with pytest.raises(EnvelopeInvalid, match=r"twice\.yaml"):
        ScriptedModel.from_file(twice)

    laughs = tmp_path / "laughs.yaml"
    rows = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    rows += [f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]" for i in range(6)]
    laughs.write_text("\n".join(rows) + "\nturns: [{text: '*g'}]\n")
    with pytest.raises(EnvelopeInvalid, match=r"laughs\.yaml"):
        ScriptedModel.from_file(laughs)

    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)  # reading it would block forever
    with pytest.raises(FileError, match=r"fifo\.yaml.*not a regular file"):
        ScriptedModel.from_file(fifo)


def test_function_model_wraps_a_callable() -> None:
    seen: list[tuple[int, list[str]]] = []

    def echo(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> str:
        seen.append((len(messages), [t.name for t in tools]))
        return f"you said {messages[-1].content}"

    model = FunctionModel(echo)
    r = model.complete([Message("user", "hi")], [ToolSpec("bash", "", {})], max_tokens=5)
    assert (r.text, r.termination, r.tool_calls, r.model) == ("you said hi", "complete", (), "function:echo")
    assert seen == [(1, ["bash"])]


def test_function_model_passes_responses_through() -> None:
    response = ModelResponse("", (ToolCall("c", "bash", {}),), "tool_request", None, Usage(1, 2), "mine")
    model = FunctionModel(lambda m, t: response, name="function:fixed")
    assert model.name == "function:fixed"
    assert model.complete([], [], max_tokens=1) is response
