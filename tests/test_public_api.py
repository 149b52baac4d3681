"""The public surface is pinned: what `tether` exports imports, has a docstring and is in the README."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

import tether
import tether.policy

README = Path(__file__).resolve().parents[1] / "README.md"


def test_exports_are_pinned() -> None:
    assert sorted(tether.__all__) == sorted(
        [
            *("ApprovalAnswer", "ApprovalRequest", "Approver"),
            *("Envelope", "compile_envelope", "load_envelope", "strict_problems"),
            *("Event", "EventStore", "RunState"),
            *("RunStatus", "ControlState", "ActionStatus", "ClaimStatus"),
            *("Harness", "OutputContract"),
            *("FunctionModel", "Message", "Model", "ModelResponse", "ToolCall", "ToolSpec", "call", "reply"),
            *("Tool", "ToolContext", "ToolResult", "tool"),
        ]
    )


@pytest.mark.parametrize("module", [tether, tether.policy], ids=lambda m: m.__name__)
def test_every_export_imports_and_says_what_it_is(module: object) -> None:
    names: list[str] = getattr(module, "__all__", [])
    assert names, f"{module} has an __all__"
    undocumented = []
    for name in names:
        obj = getattr(module, name)  # AttributeError: exported but not there
        if inspect.isclass(obj) or inspect.isfunction(obj):
            doc = inspect.getdoc(obj) or ""
            if not doc or re.match(rf"{name}\(", doc):  # a dataclass's generated signature says nothing
                undocumented.append(name)
    assert not undocumented, f"exported without a docstring: {undocumented}"


def python_api() -> str:
    return README.read_text().split("## Python API", 1)[1].split("\n## ", 1)[0]


def test_every_export_is_named_in_the_readme_python_api() -> None:
    section = python_api()
    missing = [name for name in tether.__all__ if not re.search(rf"\b{name}\b", section)]
    assert not missing, f"README's Python API section does not mention {missing}"


def test_readme_imports_exist() -> None:
    names = set()
    for line in re.findall(r"^from tether import (.+)$", README.read_text(), flags=re.M):
        names |= {n.strip() for n in line.split(",")}
    assert names and names <= set(tether.__all__)


def test_the_readme_function_model_example_runs(example: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's FunctionModel example, as written, on the bugfix example: a finish claim with the tests
    still failing is refused until the run stops VERIFY_FAILED, the approver never asked (nothing ASKs)."""
    blocks = re.findall(r"```python\n(.*?)```", python_api(), flags=re.S)
    (snippet,) = [b for b in blocks if "FunctionModel(" in b]
    monkeypatch.chdir(example)
    namespace: dict[str, object] = {"print": lambda *args: None}
    exec(compile(snippet, "README.md", "exec"), namespace)
    contract = namespace["contract"]
    assert isinstance(contract, tether.OutputContract)
    assert contract.status == "VERIFY_FAILED" and "test_median_even" in contract.result


def test_function_model_helpers_build_a_whole_turn() -> None:
    turn = tether.reply("looking", calls=[tether.call("read_file", path="x.py"), tether.call("call", name="n")])
    assert turn.termination == "tool_request" and turn.text == "looking" and turn.raw_stop_reason is None
    assert [(c.id, c.name, c.args) for c in turn.tool_calls] == [
        ("", "read_file", {"path": "x.py"}),
        ("", "call", {"name": "n"}),
    ]
    assert tether.reply("done").termination == "complete"
    model = tether.FunctionModel(lambda messages, tools: turn, name="function:mine")
    assert model.complete([], [], max_tokens=1).model == "function:mine"  # an unnamed reply takes the model's name
    with pytest.raises(TypeError, match="expected a ModelResponse or a str"):
        tether.FunctionModel(lambda messages, tools: {"text": "hi"}).complete([], [], max_tokens=1)  # type: ignore[arg-type, return-value]


def test_readme_has_exactly_two_setup_commands() -> None:
    text = README.read_text()
    block = text.split("## Two commands", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in block.strip().splitlines()]
    assert commands == ["make demo", "make test"]
