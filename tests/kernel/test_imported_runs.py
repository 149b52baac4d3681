"""A run ``tether import`` added is its sender's: resume, fork and replay would run the sender's recorded commands
on this machine under the envelope the package brought (its sandbox, the host variables and secrets it names, the
hosts it may reach, its model). Each is refused, naming what that envelope asks of this machine, until the
operator says ``--trust-imported``; a fork under an envelope of the operator's own goes on.

Before these tests, all three ran at once: a package whose envelope listed ``env_allow: [TETHER_CANARY]`` had
this machine's value of that variable handed to the sender's command by ``tether replay``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from runkit import EXAMPLE, FINISH, FIX, tether, write_script
from test_episode import canary_envelope

from tether.cli.demo_cmds import prepare
from tether.events.store import EventStore
from tether.kernel.continuation import ImportedRun
from tether.kernel.replay import replay

SENDER_COMMAND = 'echo "host says $TETHER_CANARY" > src/leaked.txt'


@pytest.fixture
def imported(bugfix: Path, tmp_path: Path) -> tuple[str, Path, Path]:
    """A package whose envelope hands a host variable to its commands, imported into another store: run, db, pkg."""
    canary_envelope(bugfix)  # env_allow: [TETHER_CANARY]
    bash = {"name": "bash", "args": {"command": SENDER_COMMAND}}
    write_script(bugfix, [{"tool_calls": [bash]}, {"tool_calls": [FIX]}, {"tool_calls": [FINISH]}])
    args = ("run", "fix it", "-e", str(bugfix / "envelope.yaml"), "--db", str(bugfix / "t.db"), "--sandbox", "local")
    run_id = json.loads(tether(*args, "--json").stdout.splitlines()[-1])["run_id"]
    pkg = tmp_path / "from-someone.tar.gz"
    tether("export", run_id, "-o", str(pkg), "--db", str(bugfix / "t.db"), check=True)
    shutil.rmtree(bugfix)
    there = tmp_path / "there"
    there.mkdir()
    tether("import", str(pkg), "--db", str(there / "t.db"), check=True)
    return run_id, there / "t.db", pkg


def test_replay_fork_and_resume_of_an_imported_run_are_refused_naming_what_its_envelope_asks(
    imported: tuple[str, Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id, db, _ = imported
    monkeypatch.setenv("TETHER_CANARY", "this-machines-value")
    keep = tmp_path / "kept"
    for argv in (
        ("replay", run_id, "--keep", str(keep)),
        ("replay", run_id, "--model", "scripted:x.yaml", "--workspace", str(tmp_path / "cf")),
        ("fork", run_id, "--at", "3", "--workspace", str(tmp_path / "fork")),
        ("resume", run_id, "--note", "go on"),
    ):
        proc = tether(*argv, "--db", str(db))
        assert proc.returncode == 2, (argv, proc.stdout, proc.stderr)
        said = " ".join(proc.stderr.split())
        assert f"run {run_id} was imported from the package from-someone.tar.gz, unsigned" in said, said
        assert "host variables TETHER_CANARY" in said and "--trust-imported" in said, said
    assert not (keep / "replay.db").exists() and not (tmp_path / "fork").exists()
    with EventStore.open(db, readonly=True) as store:
        assert [r.run_id for r in store.runs()] == [run_id]  # no fork, no replay run, nothing appended


def test_the_operator_who_trusts_it_replays_it_and_the_python_api_refuses_the_same(
    imported: tuple[str, Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id, db, _ = imported
    monkeypatch.setenv("TETHER_CANARY", "this-machines-value")
    with EventStore.open(db, readonly=True) as store:
        with pytest.raises(ImportedRun, match="was imported from"):
            replay(store, run_id)
        report = replay(store, run_id, keep=tmp_path / "kept", trust_imported=True)
    assert report.replay_status == "COMPLETE"
    leaked = next((tmp_path / "kept").rglob("leaked.txt"))
    assert leaked.read_text() == "host says this-machines-value\n"  # what trusting it means: said, then done


def test_a_fork_of_an_imported_run_under_the_operators_own_envelope_goes_on(
    imported: tuple[str, Path, Path], tmp_path: Path
) -> None:
    run_id, db, _ = imported
    mine = prepare(EXAMPLE, tmp_path / "mine")  # the operator's own envelope, beside its own script
    write_script(mine, [{"tool_calls": [FINISH]}])
    fork = tmp_path / "fork"
    proc = tether(
        "fork", run_id, "--at", "3", "--workspace", str(fork), "-e", str(mine / "envelope.yaml"), "--db", str(db)
    )
    assert "was imported" not in proc.stderr and fork.is_dir(), proc.stdout + proc.stderr
    with EventStore.open(db, readonly=True) as store:
        assert len(store.runs()) == 2
