"""What follows a heredoc's start on its line is judged: more redirections, arguments, and the commands after it.

The Bash grammar nests the rest of the line in the heredoc (``cat <<'EOF' > f`` is a heredoc holding a redirection to
``f``), and the analysis read only the heredoc's body: the way agents write a file with the shell,
``cat <<'EOF' > .tether/envelope.yaml``, was a bare ``cat``, allowed; so were ``cat <<EOF && rm -rf /`` and
``cat <<EOF | tee .tether/x``. Each case here failed on the code before.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tether.hooks.calls import hook_envelope
from tether.policy.gate import Gate
from tether.policy.shell import analyse


def doc(line: str, body: str = "x") -> str:
    return f"{line}\n{body}\nEOF"


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (doc("cat <<'EOF' > out"), [(["cat"], [("<<", None), (">", "out")])]),
        (doc("cat <<EOF > a 2>&1 b"), [(["cat", "b"], [("<<", None), (">", "a"), (">&", None)])]),
        (doc("rm <<EOF -rf /"), [(["rm", "-rf", "/"], [("<<", None)])]),
        (doc("cat <<EOF && rm -rf /"), [(["cat"], [("<<", None)]), (["rm", "-rf", "/"], [])]),
        (doc("cat <<EOF | tee a | wc -l"), [(["cat"], [("<<", None)]), (["tee", "a"], []), (["wc", "-l"], [])]),
        (doc("cat <<EOF || rm a && rm b"), [(["cat"], [("<<", None)]), (["rm", "a"], []), (["rm", "b"], [])]),
    ],
)
def test_the_rest_of_a_heredocs_line_is_read(command: str, expected: list[tuple[list[str], list[tuple]]]) -> None:
    found = [
        ([w.text for w in c.argv], [(r.op, r.target.text if r.target else None) for r in c.redirects])
        for c in analyse(command, "/tmp").commands
    ]
    assert found == expected


def test_the_commands_after_a_pipe_are_fed_by_it() -> None:
    cat, tee = analyse(doc("cat <<EOF | tee a"), "/tmp").commands
    assert not cat.piped and tee.piped


def test_bash_reads_it_so(tmp_path: Path) -> None:
    bash = shutil.which("bash")
    assert bash is not None
    subprocess.run([bash, "-c", doc("cat <<'EOF' > out && touch after", "hello")], cwd=tmp_path, check=True)
    assert (tmp_path / "out").read_text() == "hello\n" and (tmp_path / "after").exists()


REFUSED = [
    (doc("cat <<'EOF' > .tether/envelope.yaml"), "DENY"),
    (doc("cat <<EOF >.tether/envelope.yaml"), "DENY"),
    (doc("cat <<-EOF > .tether/x", "\tx"), "DENY"),
    (doc("cat <<EOF | tee .tether/x"), "DENY"),
    (doc("cat <<EOF && rm -rf /"), "DENY"),
    (doc("cat <<EOF && rm -rf .tether"), "DENY"),
    (doc("cat <<EOF || rm x && rm -rf .tether"), "DENY"),
    (doc("cat <<EOF | tee a | rm -rf .tether"), "DENY"),
    (doc("rm <<EOF -rf .tether"), "DENY"),
    (doc("cat <<EOF > src/a 2>&1 ~/.ssh/id_rsa"), "DENY"),
    (doc("cat <<EOF && cd /tmp && rm -rf x"), "DENY"),
    (doc("cat <<'EOF' | python3", "print(1)"), "DENY"),  # as cat x | python3: shell:pipe-to-interpreter
]


@pytest.mark.parametrize(("command", "verdict"), REFUSED)
def test_a_heredoc_no_longer_hides_its_line(tmp_path: Path, command: str, verdict: str) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / ".tether").mkdir()
    d = Gate(hook_envelope(), tmp_path).decide("bash", {"command": command})
    assert d.verdict.name == verdict, d.reason


@pytest.mark.parametrize(
    "command",
    [
        doc("cat <<'EOF' > src/new.py", "print(1)"),
        doc("cat <<EOF > src/a.txt && cat src/a.txt"),
        doc("cat <<EOF | grep x"),
        doc("git commit -m \"$(cat <<'EOF'", "fix: a thing") + '\n)"',
    ],
)
def test_heredocs_that_write_the_workspace_are_allowed_as_before(tmp_path: Path, command: str) -> None:
    (tmp_path / "src").mkdir()
    d = Gate(hook_envelope(), tmp_path).decide("bash", {"command": command})
    assert d.verdict.name == "ALLOW", d.reason
