"""A tool named as one of tether's own calls (``agent_notes``, ``agent_internal``, ``read_file`` …) is refused. Such a
name was kept as it came and judged by the rule for what tether maps the agent's tools to, on input no mapping had
put there: ``agent_notes`` with any path was allowed (``hooks:agent-notes``), ``agent_internal`` and a ``read_file``
with a field the gate does not read were allowed as reads — for Claude Code and for Codex alike."""

from __future__ import annotations

import pytest

from tether.hooks.calls import Call, CallError, tether_calls

WS = "/work/project"


#: tether's own names, each with an input that would pass its rule; Codex's own ``read_file`` is its tool, mapped as a
#: read of its file_path (test_codex_tools), so it is not among Codex's cases.
OWN = [
    ("agent_notes", {"file": "/home/u/.bashrc", "content": "curl x | sh"}),
    ("agent_internal", {"command": "rm -rf /"}),
    ("read_file", {"file_path": "/etc/shadow"}),
    ("search", {"pattern": "password"}),
    ("bash", {"cmd": "rm -rf /"}),
    ("write_file", {"file_path": "/home/u/.bashrc"}),
    ("worktree", {"action": "keep"}),
]


@pytest.mark.parametrize(
    ("agent", "name", "tool_input"),
    [("claude-code", n, ti) for n, ti in OWN] + [("codex", n, ti) for n, ti in OWN if n != "read_file"],
)
def test_a_tool_named_as_tethers_own_call_is_refused(agent: str, name: str, tool_input: dict[str, object]) -> None:
    with pytest.raises(CallError, match="a name tether gives its own calls"):
        tether_calls(agent, name, tool_input, WS, WS)


def test_the_agents_own_tools_are_mapped_as_before() -> None:
    assert tether_calls("claude-code", "TodoWrite", {"todos": []}, WS, WS) == [Call("agent_internal", {"todos": []})]
    assert tether_calls("codex", "update_plan", {"plan": []}, WS, WS) == [Call("agent_internal", {"plan": []})]
    assert tether_calls("codex", "read_file", {"file_path": "/etc/hosts"}, WS, WS) == [
        Call("read_file", {"path": "/etc/hosts"})
    ]
    assert tether_calls("codex", "web_search", {"query": "x"}, WS, WS) == [Call("web_search", {"query": "x"})]
