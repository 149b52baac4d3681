"""Commands that change, move or print a file ``filesystem.deny`` hides by naming the directory that holds it, not
the file: a recursive or deleting target (``rm -r``, ``chmod -R``, ``gzip -r``, ``mv DIR``), git's own ``mv`` and
``rm``, and a list of names read from a file (``sort --files0-from``). Each is first run for real in a fresh
workspace, to show that it touches the denied file; then the gate must refuse it."""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

import pytest

from tether.envelope.schema import Effect, Envelope, Environment, Filesystem, PlanRef, ToolContract
from tether.policy.decision import Verdict
from tether.policy.gate import Gate

SECRET = "SECRET-91c2"


def make(ws: Path) -> Path:
    for d in ("src", "secrets", "docs"):
        (ws / d).mkdir(parents=True)
    (ws / "src" / "a.py").write_text("x = 1\n")
    (ws / "secrets" / "key.txt").write_text(SECRET + "\n")
    (ws / "secrets" / "key.txt").chmod(0o600)
    (ws / "list0").write_bytes(b"secrets/key.txt\0")
    subprocess.run(["tar", "cf", "x.tar", "-C", "src", "a.py"], cwd=ws, check=True)
    with zipfile.ZipFile(ws / "x.zip", "w") as archive:
        archive.write(ws / "src" / "a.py", "src/a.py")
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], cwd=ws, check=True)
    subprocess.run([*git, "add", "."], cwd=ws, check=True)
    subprocess.run([*git, "commit", "-qm", "init"], cwd=ws, check=True)
    (ws / "secrets" / "key.txt").write_text(SECRET + "\nchanged since\n")  # what git restore would put back
    (ws / "src" / "a.py").write_text("x = 2\n")
    return ws


def gate(ws: Path, deny: tuple[str, ...] = ("secrets/**",)) -> Gate:
    fs = Filesystem(read=["**"], write=["**"], deny=list(deny))
    plan = PlanRef(path="plan.yaml", hash="sha256:" + "1" * 64)
    bash = ToolContract(name="bash", purpose="shell", effects=[Effect.EXEC])
    return Gate(Envelope(plan=plan, environment=Environment(filesystem=fs), tools=[bash]), ws)


def hidden(ws: Path) -> dict[str, tuple[bytes, int]]:
    """What the deny list hides: every file under secrets/, its bytes and mode."""
    under = ws / "secrets"
    return {str(p.relative_to(ws)): (p.read_bytes(), p.stat().st_mode) for p in under.rglob("*") if p.is_file()}


def touches_secret(command: str, ws: Path) -> bool:
    """Whether running ``command`` in ``ws`` printed the denied file or changed what lies under secrets/ (a file
    gone, added, other bytes, other mode)."""
    before = hidden(ws)
    done = subprocess.run(["bash", "-c", command], cwd=ws, capture_output=True, check=False)
    printed = done.stdout
    if printed[:2] == b"\x1f\x8b":
        printed = subprocess.run(["gzip", "-dc"], input=printed, capture_output=True, check=False).stdout
    return SECRET.encode() in printed or hidden(ws) != before


CHANGERS = [
    "rm -rf secrets",
    "rm -r secrets/",
    "chmod -R 777 secrets",
    "gzip -r secrets",
    "gzip -rc secrets",
    "mv secrets src/s",
    "mv secrets/ src/s",
    "cd src && mv ../secrets s",
    "git mv secrets/key.txt src/k",
    "git mv secrets src/s",
    "git rm -rqf secrets",
    "git rm -qf secrets/key.txt",
    "sort --files0-from=list0",
    "find . -name key.txt -delete",
    "find . -delete",
    "cp src/a.py secrets",
    "cp src/a.py secrets/",
    "cd src && cp a.py ../secrets",
    "tar xf x.tar -C secrets",
    "unzip -q x.zip -d secrets",
    "git restore secrets",
    "git restore secrets/key.txt",
    "cd src && git restore ../secrets",
]


@pytest.mark.parametrize("command", CHANGERS)
def test_a_command_that_changes_a_denied_file_through_its_directory_is_refused(command: str, tmp_path: Path) -> None:
    assert touches_secret(command, make(tmp_path / "run")), "the spelling does not touch the denied file"
    d = gate(make(tmp_path / "ws")).decide("bash", {"command": command})
    assert d.verdict is Verdict.DENY, d.to_dict()


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf src",
        "chmod -R 755 src",
        "gzip -r src",
        "mv src src2",
        "git mv src/a.py src/b.py",
        "git rm -qf src/a.py",
        "find src -name a.py -delete",
        "cp src/a.py src/b.py",
        "cp src/a.py docs",
        "tar xf x.tar -C src",
        "git restore src",
    ],
)
def test_the_same_commands_on_places_the_deny_list_cannot_reach_are_not_refused(command: str, tmp_path: Path) -> None:
    assert not touches_secret(command, make(tmp_path / "run"))
    d = gate(make(tmp_path / "ws")).decide("bash", {"command": command})
    assert d.verdict is not Verdict.DENY, d.to_dict()


def test_a_file_deleted_is_judged_as_itself_not_as_a_tree(tmp_path: Path) -> None:
    """A pattern without a slash reaches every directory, not every file: ``rm src/a.py`` is judged by the deny list
    as src/a.py (a kernel run's ``rm`` of a scratch file was refused under ``*.pem`` by the first cut of the reach)."""
    ws = make(tmp_path / "ws")
    (ws / "docs" / "sub").mkdir()
    (ws / "docs" / "sub" / "k.pem").write_text("key\n")
    pem = gate(ws, ("*.pem",))
    assert pem.decide("bash", {"command": "rm src/a.py"}).verdict is not Verdict.DENY
    assert pem.decide("bash", {"command": "mv src/a.py src/b.py"}).verdict is not Verdict.DENY
    assert pem.decide("bash", {"command": "rm src/k.pem"}).verdict is Verdict.DENY
    # a tree is judged by the files it holds now: src holds no .pem, docs does (two levels down)
    assert pem.decide("bash", {"command": "rm -r src"}).verdict is not Verdict.DENY
    assert pem.decide("bash", {"command": "rm -r docs"}).verdict is Verdict.DENY
    assert pem.decide("bash", {"command": "mv docs elsewhere"}).verdict is Verdict.DENY
