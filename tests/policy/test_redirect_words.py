"""The words after a redirection are the command's arguments, as bash reads them.

The Bash grammar reads ``rm 2>/dev/null -rf /`` as ``rm`` with one redirection whose targets are ``/dev/null``, ``-rf``
and ``/``; the analysis took the first as the target and dropped the rest, so the gate judged a bare ``rm``:
``rm -rf 2>/dev/null /`` and ``rm 2>/dev/null .tether/tether.db`` were allowed, as was ``tee <in .tether/x``. A
redirection takes one word; bash gives the others to the command (or, after a compound command, refuses them). Each
case here failed on the code before.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tether.hooks.calls import hook_envelope
from tether.policy.gate import Gate
from tether.policy.shell import analyse


@pytest.mark.parametrize(
    ("command", "argv"),
    [
        ("rm -rf 2>/dev/null /", ["rm", "-rf", "/"]),
        ("rm 2>/dev/null -rf /", ["rm", "-rf", "/"]),
        ("rm </dev/null .tether/tether.db", ["rm", ".tether/tether.db"]),
        ("rm 2>&1 a b", ["rm", "a", "b"]),
        ("echo >&2 hello world", ["echo", "hello", "world"]),
        ("rm x > f < g y z", ["rm", "x", "y", "z"]),
        ("rm 2>/dev/null {a,b}.db", ["rm", "a.db", "b.db"]),
        ("X=/ ; rm -rf 2>/dev/null $X", ["rm", "-rf", "/"]),
    ],
)
def test_words_after_a_redirection_are_arguments(command: str, argv: list[str]) -> None:
    found = [[w.text for w in cmd.argv] for cmd in analyse(command, "/tmp").commands if cmd.argv]
    assert found[-1] == argv


def test_the_redirection_keeps_its_own_target_only() -> None:
    (cmd,) = analyse("rm x > f < g y", "/tmp").commands
    assert [(r.op, r.target.text if r.target else None, r.args) for r in cmd.redirects] == [
        (">", "f", ()),
        ("<", "g", ()),
    ]


def test_bash_reads_them_so(tmp_path: Path) -> None:
    """The premise, run: bash gives the words after a redirection to the command."""
    bash = shutil.which("bash")
    assert bash is not None
    (tmp_path / "victim").write_text("x")
    subprocess.run([bash, "-c", "rm 2>/dev/null victim"], cwd=tmp_path, check=True)
    assert not (tmp_path / "victim").exists()


REFUSED = [
    ("rm -rf 2>/dev/null /", "DENY"),
    ("rm 2>/dev/null -rf ~", "DENY"),
    ("rm 2>/dev/null .tether/tether.db", "DENY"),
    ("rm 2>&1 .tether/tether.db", "DENY"),
    ("rm </dev/null -rf .tether", "DENY"),
    ("rm >/dev/null .git/config", "DENY"),
    ("tee < src/app.py .tether/envelope.yaml", "DENY"),
    ("echo x | tee 2>/dev/null .tether/envelope.yaml", "DENY"),
    ("ls && rm 2>/dev/null -rf .tether", "DENY"),
    ("cp </dev/null src/app.py .tether/envelope.yaml", "DENY"),
    ("truncate </dev/null -s0 .tether/tether.db", "DENY"),
    ("cat 2>/dev/null ~/.ssh/id_rsa", "DENY"),
    ("{ ls; } > out.txt rm -rf /", "ASK"),  # bash: a syntax error; never allowed
    ("f() { ls; } > out.txt .tether/x", "ASK"),
]


@pytest.mark.parametrize(("command", "verdict"), REFUSED)
def test_a_redirection_no_longer_hides_what_a_command_is_given(tmp_path: Path, command: str, verdict: str) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("")
    (tmp_path / ".tether").mkdir()
    d = Gate(hook_envelope(), tmp_path).decide("bash", {"command": command})
    assert d.verdict.name == verdict, d.reason


@pytest.mark.parametrize(
    "command", ["echo >&2 hello", "ls 2>/dev/null src", "grep -r x 2>/dev/null src", "cat </dev/null src/app.py"]
)
def test_ordinary_redirections_are_allowed_as_before(tmp_path: Path, command: str) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("")
    d = Gate(hook_envelope(), tmp_path).decide("bash", {"command": command})
    assert d.verdict.name == "ALLOW", d.reason
