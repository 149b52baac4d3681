"""A shell script written and then run in one command line: the gate reads a script's text before the line runs,
so one an earlier command in the line may write cannot be judged by what is in it now. Before, a script that did
not exist yet was judged only by what ran it (a workspace script: allowed), so ``echo 'rm -rf /' > x.sh; sh x.sh``
ran ``rm -rf /`` through the hook unasked."""

from __future__ import annotations

import pytest
from hookkit import Hook

WRITTEN_THEN_RUN = [
    "echo 'rm -rf /' > x.sh; bash x.sh",
    "echo 'rm -rf /' > x.sh && chmod +x x.sh && ./x.sh",
    "printf 'rm -rf /' > x.sh; . ./x.sh",
    "cat > x.sh <<'E'\nrm -rf /\nE\nsh x.sh",
    "echo 'rm -rf /' | tee x.sh; source x.sh",
    "cp /tmp/evil.sh x.sh && sh x.sh",
    "sh -c \"echo 'rm -rf /' > x.sh\"; sh x.sh",
]


@pytest.mark.parametrize("command", WRITTEN_THEN_RUN)
def test_a_script_the_same_line_writes_is_not_run_unasked(hook: Hook, command: str) -> None:
    decision, reason = hook.bash(command)
    assert (decision, reason.split(")")[0]) == ("ask", "tether ASK (shell:script-unchecked"), reason


def test_a_script_already_there_is_judged_by_its_text_and_a_compiled_program_still_runs(hook: Hook) -> None:
    (hook.workspace / "ok.sh").write_text("ls\n")
    (hook.workspace / "bad.sh").write_text("rm -rf /\n")
    assert hook.bash("echo hi > out.txt; bash ok.sh")[0] == "allow", "a write elsewhere leaves the script as read"
    assert hook.bash("bash bad.sh")[0] == "deny"
    assert hook.bash("cc -o app app.c && ./app")[0] == "allow", "a compiler writes a program, not shell code"
