"""Brace expansion through ``tether hook claude-code``: bash turns ``{/,}`` into ``/`` before ``rm`` starts, so a
word with braces is judged as the words bash makes of it. Before, ``rm -rf {/,}`` was read as one literal name in
the workspace and allowed, and ``cat /etc/{shadow,x}`` read a credential file unasked."""

from __future__ import annotations

import pytest
from hookkit import Hook

DENIED = [
    ("rm -rf {/,}", "coding:deny-rm-root"),
    ("rm -rf {/tmp/x,/}", "coding:deny-rm-root"),
    ("rm -rf /{,}", "coding:deny-rm-root"),
    ("rm -rf {~,x}", "coding:deny-rm-home"),
    ("rm -rf ~{,}", "coding:deny-rm-home"),
    ("for d in {/,}; do rm -rf $d; done", "coding:deny-rm-root"),
    ("cat {/etc/shadow,x}", "path:credential"),
    ("cat /etc/{shadow,x}", "path:credential"),
    ("cp x .git/{x,hooks}/pre-commit", "path:protected"),
]


@pytest.mark.parametrize(("command", "rule"), DENIED)
def test_a_brace_expansion_is_judged_as_the_words_bash_makes(hook: Hook, command: str, rule: str) -> None:
    decision, reason = hook.bash(command)
    assert (decision, reason.split(")")[0]) == ("deny", f"tether DENY ({rule}"), reason


def test_braces_bash_leaves_alone_are_still_allowed_and_a_huge_expansion_asks(hook: Hook) -> None:
    assert hook.bash("mkdir day{01..03}")[0] == "allow"
    assert hook.bash("echo \\{/,\\} {x}")[0] == "allow", "escaped or comma-less braces are literal text"
    assert hook.bash("find . -name '*.py' -exec wc -l {} +")[0] == "allow"
    decision = hook.bash("rm -rf /tmp{1..1000}/..")[0]
    assert decision in ("ask", "deny"), "more words than the gate looks at: never allowed unseen"
