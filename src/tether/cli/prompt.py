"""The inline approval prompt: y = once, a = for this run, n = deny (a reason is asked next), Enter = leave pending.

Written on stderr, so that stdout stays the run's output (and stays JSON with ``--json --interactive``); read
line by line from stdin, so that a script (or a test) can answer it through a pipe. An unreadable answer is
asked again with the choices spelled out; a closed stdin leaves the approval pending, never approves.
"""

from __future__ import annotations

import sys
from typing import Literal, TextIO

from rich.markup import escape

from tether.kernel.approvals import ApprovalAnswer, ApprovalRequest, whoami

from .common import err_console

Choice = Literal["once", "run", "deny", "defer"]

CHOICES: dict[str, Choice] = {
    "y": "once",
    "yes": "once",
    "a": "run",
    "all": "run",
    "n": "deny",
    "no": "deny",
    "": "defer",
}
QUESTION = "approve? y = yes, once · a = yes, for the rest of this run · n = no (a reason next) · Enter = leave pending"
NO_REASON = "denied at the prompt (no reason given)"


def parse_choice(line: str) -> Choice | None:
    """The choice a typed line means, or None for anything else (case and surrounding spaces do not matter)."""
    return CHOICES.get(line.strip().lower())


def _ask(question: str, stdin: TextIO) -> str | None:
    err_console.print(escape(question), end="")
    line = stdin.readline()
    if not line:  # end of input: nobody is there to answer
        err_console.print()
        return None
    return line.rstrip("\n")


def ask_approval(request: ApprovalRequest, stdin: TextIO | None = None) -> ApprovalAnswer:
    """Show the pending call and its preview, and read the human's answer."""
    stdin = stdin or sys.stdin
    err_console.print(f"\n[bold yellow]approval needed[/] {request.approval_id}: {escape(request.tool)}")
    err_console.print(f"  why: {escape(request.reason)}")
    err_console.print("  " + escape(request.preview).replace("\n", "\n  "))
    while True:
        line = _ask(f"{QUESTION}\n> ", stdin)
        choice = "defer" if line is None else parse_choice(line)
        if choice is not None:
            break
        err_console.print(f"not an answer: {escape(repr(line))}; type y, a or n, or press Enter")
    if choice == "deny":
        reason = _ask("reason (the model is told): ", stdin)
        return ApprovalAnswer("deny", whoami(), (reason or "").strip() or NO_REASON)
    if choice == "defer":
        err_console.print(f"left pending; answer later with `tether approve {request.approval_id}` or `tether deny`")
    return ApprovalAnswer(choice, whoami())
