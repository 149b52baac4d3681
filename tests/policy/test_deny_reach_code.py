"""A file ``filesystem.deny`` hides is read when a program runs it or reads it through an option: a script given to an
interpreter (``bash secrets/x.sh``, ``python secrets/x.py``, ``python -m secrets.x``, ``./secrets/x.sh``), a file of
code (``make -f``, ``awk -f``, ``sed -f``, ``source``), a makefile where make works (``make -C secrets``), a
response file (``gcc @secrets/key.txt``) or an option with two values (``jq --rawfile NAME FILE``). Each is first
run for real in a workspace, to show that its output (or its error) carries the hidden text; then the gate must
refuse it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tether.envelope.schema import Effect, Envelope, Environment, Filesystem, PlanRef, ToolContract
from tether.policy.decision import Verdict
from tether.policy.gate import Gate

SECRET = "SECRET-5d0e"


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("code") / "ws"
    hidden = ws / "secrets"
    hidden.mkdir(parents=True)
    (ws / "src").mkdir()
    (ws / "src" / "a.py").write_text("x = 1\n")
    (ws / "src" / "Makefile").write_text("all:\n\t@echo fine\n")
    files = {
        "key.txt": f"{SECRET}\n",
        "k.json": f'"{SECRET}"\n',
        "x.sh": f"echo {SECRET}\n",
        "x.py": f"#!{sys.executable}\nprint('{SECRET}')\n",
        "__init__.py": "",
        "Makefile": f"all:\n\t@echo {SECRET}\n",
        "x.awk": f'BEGIN {{ print "{SECRET}" }}\n',
        "x.sed": f"1i {SECRET}\n",
    }
    for name, text in files.items():
        (hidden / name).write_text(text)
    (hidden / "x.sh").chmod(0o755)
    (hidden / "x.py").chmod(0o755)
    return ws


def gate(ws: Path) -> Gate:
    fs = Filesystem(read=["**"], write=["**"], deny=["secrets/**"])
    plan = PlanRef(path="plan.yaml", hash="sha256:" + "2" * 64)
    shell = ToolContract(name="bash", purpose="shell", effects=[Effect.EXEC])
    return Gate(Envelope(plan=plan, environment=Environment(filesystem=fs), tools=[shell]), ws)


def shows_secret(command: str, ws: Path) -> bool:
    """Whether running ``command`` in ``ws`` prints the hidden text, on standard output or in an error."""
    path = f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"  # python is the test's interpreter
    env = {**os.environ, "PATH": path}
    done = subprocess.run(["bash", "-c", command], cwd=ws, env=env, capture_output=True, check=False, timeout=60)
    return SECRET.encode() in done.stdout + done.stderr


RUNS = [
    "bash secrets/x.sh",
    "sh secrets/x.sh",
    "bash -x secrets/key.txt",
    "./secrets/x.sh",
    "cd secrets && ./x.sh",
    "source secrets/x.sh",
    ". secrets/x.sh",
    "python secrets/x.py",
    "./secrets/x.py",
    "python -m secrets.x",
    "make -f secrets/Makefile",
    "make --file=secrets/Makefile",
    "make -C secrets",
    "cd secrets && make",
    "make -C src -f ../secrets/Makefile",
    "awk -f secrets/x.awk",
    "awk -fsecrets/x.awk",
    "sed -f secrets/x.sed src/a.py",
    "gcc @secrets/key.txt",
    "cd src && gcc @../secrets/key.txt",
    "jq -n --rawfile k secrets/key.txt '$k'",
    "jq -n --slurpfile k secrets/k.json '$k'",
    "jq -n '$k' --rawfile k secrets/key.txt",
    "xargs -a secrets/key.txt echo",
    "diff secrets/key.txt src/a.py",
    "python - < secrets/x.py",
]


#: The same programs on files the deny list does not hide (or a hidden name that is only text): not refused.
VISIBLE = ["python src/a.py", "make -C src", "cd src && make", "gcc @src/a.py -fsyntax-only"]
VISIBLE += ["jq -n --rawfile k src/a.py '$k'", "jq -n --arg k secrets/key.txt '$k'"]


@pytest.mark.parametrize(("command", "hides"), [(c, True) for c in RUNS] + [(c, False) for c in VISIBLE])
def test_running_or_reading_a_file_through_an_option_is_refused_when_it_is_hidden(
    command: str, hides: bool, ws: Path
) -> None:
    """Run for real first: the spelling does (or does not) print the hidden text; the gate refuses exactly those."""
    assert shows_secret(command, ws) is hides
    verdict = gate(ws).decide("bash", {"command": command}).verdict
    assert (verdict is Verdict.DENY) is hides, (command, verdict)


def test_the_gate_does_not_read_a_hidden_script_to_judge_it(ws: Path) -> None:
    """The script judge would quote a hidden script's commands in its reason: a hidden one is refused unread."""
    d = gate(ws).decide("bash", {"command": "bash secrets/x.sh"})
    assert SECRET not in d.reason and all(SECRET not in m.reason for m in d.matches), d.to_dict()
