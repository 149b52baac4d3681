"""Episode packages end to end through the CLI: export on one machine-like directory, import in another,
and every way a package can be tampered with or made hostile is refused before anything is imported."""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import subprocess
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from privatekit import private_config
from runkit import EXAMPLE, FINISH, FIX, recompile, tether, write_script

from tether.canonical import sha256_hex
from tether.cli.demo_cmds import prepare
from tether.events.store import EventStore
from tether.kernel.snapshots import materialise_start

CANARY = "tether-canary-6f1d2c9a0b"


def run_bugfix(bugfix: Path, turns: list[dict[str, Any]], env: dict[str, str] | None = None) -> dict[str, Any]:
    write_script(bugfix, turns)
    args = ("run", "fix it", "--envelope", str(bugfix / "envelope.yaml"), "--db", str(bugfix / "t.db"))
    proc = run_tether(*args, "--sandbox", "local", "--json", env=env)
    contract: dict[str, Any] = json.loads(proc.stdout.splitlines()[-1])
    return contract


def run_tether(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    if env is None:
        return tether(*args)
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        return tether(*args)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def export(bugfix: Path, pkg: Path) -> str:
    """The bugfix run, completed and exported to ``pkg``: its run id."""
    contract = run_bugfix(bugfix, [{"tool_calls": [FIX]}, {"tool_calls": [FINISH]}])
    assert contract["status"] == "COMPLETE", contract
    tether("export", contract["run_id"], "-o", str(pkg), "--db", str(bugfix / "t.db"), check=True)
    return str(contract["run_id"])


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """One run exported per test process (a run and an export: ~2.5 s), for the tests that tamper with a copy of its
    package; its own configuration and state folders (``privatekit.private_config``), as each test has."""
    root = tmp_path_factory.mktemp("episode")
    with private_config(root):
        pkg = root / "episode.tar.gz"
        return export(prepare(EXAMPLE, root / "work"), pkg), pkg


@pytest.fixture
def exported(package: tuple[str, Path], tmp_path: Path) -> tuple[str, Path]:
    """The module's package, copied for a test to tamper with."""
    run_id, pkg = package
    return run_id, Path(shutil.copy(pkg, tmp_path / pkg.name))


def members(pkg: Path) -> dict[str, bytes]:
    with tarfile.open(pkg, "r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]


def write_members(pkg: Path, items: list[tuple[tarfile.TarInfo, bytes]]) -> None:
    with tarfile.open(pkg, "w:gz") as tar:
        for info, data in items:
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)


def regular(name: str, data: bytes) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def rewrite(pkg: Path, change: Callable[[dict[str, bytes]], None], *, fix_manifest: bool = False) -> None:
    """Edit a package's members; with ``fix_manifest`` also recompute the manifest's hashes (a careful forger)."""
    found = members(pkg)
    change(found)
    if fix_manifest:
        manifest = json.loads(found["manifest.json"])
        manifest["files"] = {
            n: {"sha256": sha256_hex(d), "size": len(d)} for n, d in found.items() if n != "manifest.json"
        }
        found["manifest.json"] = json.dumps(manifest).encode()
    write_members(pkg, [regular(n, d) for n, d in found.items()])


def import_into(pkg: Path, db: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return tether("import", str(pkg), "--db", str(db), *extra)


def runs_in(db: Path) -> list[str]:
    if not db.exists():
        return []
    with EventStore.open(db) as store:
        return [r.run_id for r in store.runs()]


def test_export_then_import_elsewhere_verifies_and_rebuilds_the_start(bugfix: Path, tmp_path: Path) -> None:
    pkg = tmp_path / "episode.tar.gz"
    run_id = export(bugfix, pkg)
    names = set(members(pkg))
    assert {"manifest.json", "events.jsonl", "runs.json", "envelope.json", "plan.json"} <= names
    manifest = json.loads(members(pkg)["manifest.json"])
    assert manifest["run_id"] == run_id and manifest["format"] == "tether-episode/1"
    assert manifest["tether_version"] and manifest["start_snapshot"].startswith("sha256:")

    core = "src/stats/core.py"
    original = subprocess.run(
        ["git", "show", f"HEAD:{core}"], cwd=bugfix / "project", capture_output=True, text=True, check=True
    ).stdout
    shutil.move(bugfix, tmp_path / "gone")  # the exporting machine is gone: only the package travels

    other = tmp_path / "elsewhere"
    other.mkdir()
    proc = import_into(pkg, other / "t.db")
    assert proc.returncode == 0, proc.stderr
    assert "chain intact" in proc.stdout and "ask for --trust-imported" in proc.stdout
    verify = tether("log", "verify", run_id, "--db", str(other / "t.db"))
    assert verify.returncode == 0 and "chain intact" in verify.stdout, verify.stdout + verify.stderr
    with EventStore.open(tmp_path / "gone" / "t.db") as a, EventStore.open(other / "t.db") as b:
        assert [e.hash for e in a.events(run_id)] == [e.hash for e in b.events(run_id)]
        materialise_start(b, run_id, other / "start")
    assert (other / "start" / core).read_text() == original

    again = import_into(pkg, other / "t.db")  # the same package twice: refused, the store unchanged
    assert again.returncode != 0 and "already in this store" in again.stderr


def test_the_package_grows_with_what_the_run_changed_not_with_the_workspace(bugfix: Path, tmp_path: Path) -> None:
    (bugfix / "project" / "data").mkdir()
    for i in range(50):
        (bugfix / "project" / "data" / f"f{i}.txt").write_text(f"{i}\n" * 2000)
    contract = run_bugfix(bugfix, [{"tool_calls": [FIX]}, {"tool_calls": [FINISH]}])
    pkg = tmp_path / "p.tar.gz"
    tether("export", contract["run_id"], "-o", str(pkg), "--db", str(bugfix / "t.db"), check=True)
    blobs = [n for n in members(pkg) if n.startswith("blobs/")]
    start = json.loads(members(pkg)["blobs/" + json.loads(members(pkg)["manifest.json"])["start_snapshot"][7:]])
    digests = {row[2] for row in start["entries"]}
    # beyond the start files (each once): snapshot manifests, the changed file's images, the test surface —
    # a handful, however many files the workspace holds; no unchanged data file is stored twice
    extra = [n for n in blobs if "sha256:" + n[6:] not in digests]
    assert len(extra) <= 12, extra
    assert not any(b"0\n0\n0\n" in members(pkg)[n] for n in extra)


@pytest.mark.parametrize(
    ("tamper", "message"),
    [
        (lambda m: m.update({"events.jsonl": m["events.jsonl"].replace(b"fixed median", b"fixed medians")}), "sha256"),
        (lambda m: m.update({"plan.json": b"{}"}), "sha256"),
        (lambda m: m.pop("plan.json"), "lacks plan.json"),
        (lambda m: m.update({"manifest.json": m["manifest.json"].replace(b'"events":', b'"events": 1, "x":')}), ""),
    ],
)
def test_an_edited_member_is_refused(
    tmp_path: Path, exported: tuple[str, Path], tamper: Callable[[dict[str, bytes]], None], message: str
) -> None:
    _, pkg = exported
    rewrite(pkg, tamper)
    proc = import_into(pkg, tmp_path / "other.db")
    assert proc.returncode == 2 and "package refused" in proc.stderr and message in proc.stderr, proc.stderr
    assert runs_in(tmp_path / "other.db") == []


def test_an_edited_event_with_recomputed_manifest_hashes_is_caught_by_the_chain(
    tmp_path: Path, exported: tuple[str, Path]
) -> None:
    _, pkg = exported
    rewrite(
        pkg,
        lambda m: m.update({"events.jsonl": m["events.jsonl"].replace(b"fixed median", b"fixed it")}),
        fix_manifest=True,
    )
    proc = import_into(pkg, tmp_path / "other.db")
    assert proc.returncode == 2 and "chain does not verify" in proc.stderr and "edited" in proc.stderr, proc.stderr
    assert runs_in(tmp_path / "other.db") == []


def test_an_edited_blob_is_refused(tmp_path: Path, exported: tuple[str, Path]) -> None:
    _, pkg = exported

    def edit(m: dict[str, bytes]) -> None:
        name = next(n for n in m if n.startswith("blobs/") and b"def median" in m[n])
        m[name] = m[name].replace(b"def median", b"def evil")

    rewrite(pkg, edit, fix_manifest=True)
    proc = import_into(pkg, tmp_path / "other.db")
    assert proc.returncode == 2 and "does not hash to its name" in proc.stderr, proc.stderr
    assert runs_in(tmp_path / "other.db") == []


def test_a_rewritten_head_in_the_manifest_is_refused(tmp_path: Path, exported: tuple[str, Path]) -> None:
    _, pkg = exported

    def edit(m: dict[str, bytes]) -> None:
        manifest = json.loads(m["manifest.json"])
        manifest["head"]["hash"] = "0" * 64
        m["manifest.json"] = json.dumps(manifest).encode()

    rewrite(pkg, edit)
    proc = import_into(pkg, tmp_path / "other.db")
    assert proc.returncode == 2 and "head" in proc.stderr, proc.stderr


@pytest.mark.parametrize(
    ("member", "message"),
    [
        (regular("../evil.txt", b"x"), "unexpected member '../evil.txt'"),
        (regular("/etc/evil", b"x"), "unexpected member"),
        (regular("blobs/../../evil", b"x"), "unexpected member"),
        (regular("manifest.json", b"{}"), "appears twice"),
    ],
)
def test_hostile_member_names_are_refused(
    tmp_path: Path, exported: tuple[str, Path], member: tuple[tarfile.TarInfo, bytes], message: str
) -> None:
    _, pkg = exported
    items = [regular(n, d) for n, d in members(pkg).items()] + [member]
    write_members(pkg, items)
    proc = import_into(pkg, tmp_path / "other.db")
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert not (tmp_path / "evil.txt").exists() and runs_in(tmp_path / "other.db") == []


@pytest.mark.parametrize("kind", [tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.DIRTYPE])
def test_link_and_directory_members_are_refused(tmp_path: Path, exported: tuple[str, Path], kind: bytes) -> None:
    _, pkg = exported
    found = members(pkg)
    blob = next(n for n in found if n.startswith("blobs/"))
    link = tarfile.TarInfo(blob)
    link.type, link.linkname = kind, "/etc/passwd"
    write_members(pkg, [(link, b"")] + [regular(n, d) for n, d in found.items() if n != blob])
    proc = import_into(pkg, tmp_path / "other.db")
    assert proc.returncode == 2 and "not a regular file" in proc.stderr, proc.stderr
    assert runs_in(tmp_path / "other.db") == []


def test_a_truncated_package_is_refused(tmp_path: Path, exported: tuple[str, Path]) -> None:
    _, pkg = exported
    data = pkg.read_bytes()
    for cut in (len(data) // 2, len(data) - 9):
        pkg.write_bytes(data[:cut])
        proc = import_into(pkg, tmp_path / "other.db")
        assert proc.returncode == 2 and "truncated" in proc.stderr, proc.stderr
        assert runs_in(tmp_path / "other.db") == []


def test_a_decompression_bomb_stops_at_the_limit(tmp_path: Path, exported: tuple[str, Path]) -> None:
    _, pkg = exported
    zeros = b"\0" * (4 * 1024 * 1024)
    items = [regular(n, d) for n, d in members(pkg).items()] + [regular("blobs/" + sha256_hex(zeros), zeros)]
    write_members(pkg, items)
    assert pkg.stat().st_size < 1024 * 1024  # small on disk
    proc = import_into(pkg, tmp_path / "other.db", "--max-bytes", str(2 * 1024 * 1024))
    assert proc.returncode == 2 and "limit" in proc.stderr, proc.stderr


def test_a_signed_package_is_checked_against_the_key(tmp_path: Path, bugfix: Path) -> None:
    key = tmp_path / "keys" / "anchor.key"
    env = {"TETHER_KEY": str(key), "TETHER_ANCHOR_FILE": str(tmp_path / "keys" / "anchors.jsonl")}
    run_tether("key", "init", "--key", str(key), env=env)
    contract = run_bugfix(bugfix, [{"tool_calls": [FIX]}, {"tool_calls": [FINISH]}], env=env)
    pkg = tmp_path / "p.tar.gz"
    proc = run_tether("export", contract["run_id"], "-o", str(pkg), "--db", str(bugfix / "t.db"), env=env)
    assert proc.returncode == 0 and "signed by ed25519:" in proc.stdout, proc.stderr
    pub = key.with_suffix(".pub")
    assert import_into(pkg, tmp_path / "a.db", "--key", str(pub)).returncode == 0

    def edit(m: dict[str, bytes]) -> None:
        manifest = json.loads(m["manifest.json"])
        manifest["tether_version"] = "9.9.9"
        m["manifest.json"] = json.dumps(manifest).encode()

    rewrite(pkg, edit)
    proc = import_into(pkg, tmp_path / "b.db")
    assert proc.returncode == 2 and "signature" in proc.stderr and "does not verify" in proc.stderr, proc.stderr
    assert runs_in(tmp_path / "b.db") == []

    # a required key refuses an unsigned package
    rewrite(pkg, lambda m: m.update({"manifest.json": _unsigned(m["manifest.json"])}))
    proc = import_into(pkg, tmp_path / "c.db", "--key", str(pub))
    assert proc.returncode == 2 and "unsigned" in proc.stderr, proc.stderr


def _unsigned(manifest: bytes) -> bytes:
    doc = json.loads(manifest)
    doc.pop("signature", None)
    return json.dumps(doc).encode()


def decompressed(pkg: Path) -> bytes:
    return gzip.decompress(pkg.read_bytes())


def canary_envelope(bugfix: Path) -> None:
    env = bugfix / "envelope.yaml"
    env.write_text(env.read_text().replace("  secrets: []", "  secrets: []\n  env_allow: [TETHER_CANARY]"))
    recompile(env)


def canary_run(bugfix: Path, command: str) -> str:
    canary_envelope(bugfix)
    leak = {"name": "bash", "args": {"command": command}}
    turns = [{"tool_calls": [leak]}, {"tool_calls": [FIX]}, {"tool_calls": [FINISH]}]
    contract = run_bugfix(bugfix, turns, env={"TETHER_CANARY": CANARY})
    assert contract["status"] == "COMPLETE", contract
    run_id: str = contract["run_id"]
    return run_id


def export_with_canary(bugfix: Path, run_id: str, pkg: Path) -> subprocess.CompletedProcess[str]:
    args = ("export", run_id, "-o", str(pkg), "--db", str(bugfix / "t.db"))
    return run_tether(*args, env={"TETHER_CANARY": CANARY})


def test_a_secret_written_into_the_workspace_is_withheld_from_the_package(bugfix: Path, tmp_path: Path) -> None:
    run_id = canary_run(bugfix, "printenv TETHER_CANARY > src/leak.txt")
    assert (bugfix / "project" / "src" / "leak.txt").read_text().strip() == CANARY  # the command saw it
    with EventStore.open(bugfix / "t.db") as store:  # the canary is in the store (the file's blob), not the log
        assert store._conn.execute("SELECT count(*) FROM blobs WHERE instr(data, ?)", (CANARY.encode(),)).fetchone()[0]
    pkg = tmp_path / "p.tar.gz"
    proc = export_with_canary(bugfix, run_id, pkg)
    assert proc.returncode == 0, proc.stderr
    assert "withheld" in proc.stdout and CANARY not in proc.stdout
    assert CANARY.encode() not in decompressed(pkg)
    assert import_into(pkg, tmp_path / "o.db").returncode == 0


def test_a_secret_a_command_prints_is_masked_before_it_is_logged(bugfix: Path, tmp_path: Path) -> None:
    run_id = canary_run(bugfix, "printenv TETHER_CANARY")
    with EventStore.open(bugfix / "t.db") as store:
        events = store.events(run_id)
        raw = b"".join(bytes(r[0], "utf-8") for r in store._conn.execute("SELECT payload FROM events"))
    assert CANARY.encode() not in raw
    printed = next(e for e in events if e.kind == "action.completed" and e.payload["tool"] == "bash")
    assert "[$TETHER_CANARY]" in printed.payload["result"]["content"]
    pkg = tmp_path / "p.tar.gz"
    assert export_with_canary(bugfix, run_id, pkg).returncode == 0
    assert CANARY.encode() not in decompressed(pkg)


def test_an_old_log_holding_a_secret_is_not_exported(bugfix: Path, tmp_path: Path) -> None:
    """A log written before masking: the export refuses, naming the variable and the seq, never the value."""
    run_id = canary_run(bugfix, "printenv TETHER_CANARY")
    with EventStore.open(bugfix / "t.db") as store:
        store.append(run_id, "run.resumed", {"reason": f"operator pasted {CANARY}"})
    pkg = tmp_path / "p.tar.gz"
    proc = export_with_canary(bugfix, run_id, pkg)
    assert proc.returncode == 2 and "$TETHER_CANARY in event seq" in proc.stderr, proc.stderr
    assert CANARY not in proc.stderr and not pkg.exists()
