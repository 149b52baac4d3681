"""Claude Code's Glob lists the names its pattern matches, and an absolute pattern or one climbing out with ``..``
matches outside its ``path``. Before, the gate judged only ``path`` (the workspace), so ``/root/.ssh/*`` and
``../../**`` were allowed as reads of the workspace; now the folder the pattern's literal head names is the read."""

from __future__ import annotations

import json

import pytest
from hookkit import Hook


def glob(hook: Hook, **tool_input: str) -> tuple[str, str]:
    out = json.loads(hook("PreToolUse", tool_name="Glob", tool_input=tool_input, tool_use_id="g").stdout)
    spec = out["hookSpecificOutput"]
    return spec["permissionDecision"], spec["permissionDecisionReason"]


@pytest.mark.parametrize(
    ("pattern", "rule"),
    [
        ("/root/.ssh/*", "path:credential"),
        ("/etc/*", "path:read-outside"),
        ("/*", "path:read-outside"),
        ("../../**", "path:read-outside"),
        ("src/../../**/*.py", "path:read-outside"),
        ("*/../../x", "hook:malformed-call"),
    ],
)
def test_a_glob_pattern_that_leaves_the_workspace_is_judged_where_it_lists(hook: Hook, pattern: str, rule: str) -> None:
    decision, reason = glob(hook, pattern=pattern)
    assert (decision, reason.split(")")[0]) == ("deny", f"tether DENY ({rule}"), reason


def test_a_glob_inside_the_workspace_is_still_allowed(hook: Hook) -> None:
    (hook.workspace / "src").mkdir()
    assert glob(hook, pattern="**/*.py")[0] == "allow"
    assert glob(hook, pattern="src/**/*.py")[0] == "allow"
    assert glob(hook, pattern="*.py", path=str(hook.workspace / "src"))[0] == "allow"


@pytest.mark.parametrize("pattern", ["{/root/.ssh,x}/*", "{,/etc/}*", "{x,../..}/**", "{" * 70 + "a,b" + "}" * 70])
def test_a_glob_whose_braces_name_a_folder_outside_is_refused(hook: Hook, pattern: str) -> None:
    """The glob expands braces before it lists: one alternative outside the workspace is a read there."""
    decision, reason = glob(hook, pattern=pattern)
    assert decision == "deny", reason


def test_a_glob_whose_braces_stay_inside_is_still_allowed(hook: Hook) -> None:
    for pattern in ("{src,tests}/**/*.py", "**/*.{py,pyi}", "src/{a,b}/x"):
        assert glob(hook, pattern=pattern)[0] == "allow", pattern
