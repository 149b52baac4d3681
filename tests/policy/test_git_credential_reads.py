"""git reads the contents of what it is given: a credential file named to it is read.

git stood among the programs that only look at names (``ls ~/.ssh`` is not reading a key), so no argument of it was
checked for a credential: ``git diff --no-index ~/.ssh/id_rsa /dev/null`` printed the private key and was allowed.
Each refused case here failed on the code before.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tether.hooks.calls import hook_envelope
from tether.policy.gate import Gate


@pytest.mark.parametrize(
    "command",
    [
        "git diff --no-index ~/.ssh/id_rsa /dev/null",
        "git diff --no-index /root/.ssh/id_rsa /dev/null",
        "git show --no-index ~/.ssh/id_rsa",
        "git log -p -- ~/.ssh/id_rsa",
        "git diff --no-index ~/.aws/credentials /dev/null",
    ],
)
def test_git_given_a_credential_file_is_denied(tmp_path: Path, command: str) -> None:
    d = Gate(hook_envelope(), tmp_path).decide("bash", {"command": command})
    assert (d.verdict.name, d.deciding_rule) == ("DENY", "path:credential"), d.reason


@pytest.mark.parametrize(
    "command",
    ["git status", "git diff HEAD~1", "git log origin/main..HEAD", "git show HEAD:src/app.py", "git add src/app.py"],
)
def test_ordinary_git_is_allowed_as_before(tmp_path: Path, command: str) -> None:
    d = Gate(hook_envelope(), tmp_path).decide("bash", {"command": command})
    assert d.verdict.name == "ALLOW", d.reason


def test_git_diff_no_index_prints_a_files_contents(tmp_path: Path) -> None:
    """The premise, run: outside any repository, git diff --no-index shows the whole file."""
    git = shutil.which("git")
    assert git is not None
    (tmp_path / "key").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    out = subprocess.run([git, "diff", "--no-index", "key", "/dev/null"], cwd=tmp_path, capture_output=True, text=True)
    assert "BEGIN OPENSSH PRIVATE KEY" in out.stdout
