"""The workspace snapshot, attacked: hiding changes from it, faking its stat cache, feeding it odd files."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from pathlib import Path

import pytest

from tether import snapshot as snap
from tether.canonical import bytes_hash
from tether.events.store import EventStore
from tether.snapshot import (
    ChangeKind,
    EntryKind,
    Manifest,
    MemoryBlobStore,
    SnapshotError,
    changes,
    diff_stat,
    read_content,
    take,
    unified_diff,
)


def write(root: Path, rel: str, text: str | bytes) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text)
    return p


def later(m: Manifest, seconds: float = 10) -> Manifest:
    """The same manifest as if it had been taken ``seconds`` later: nothing in it is racy any more."""
    return dataclasses.replace(m, started_ns=m.started_ns + int(seconds * 1e9))


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    write(root, "src/app.py", "def f():\n    return 1\n")
    write(root, "tests/test_app.py", "from app import f\n\ndef test_f():\n    assert f() == 1\n")
    write(root, "README.md", "hello\n")
    return root


def test_records_files_with_digest_mode_and_size(ws: Path) -> None:
    m = take(ws)
    assert sorted(m.entries) == ["README.md", "src/app.py", "tests/test_app.py"]
    e = m.entries["src/app.py"]
    data = (ws / "src/app.py").read_bytes()
    assert (e.kind, e.digest, e.size) == (EntryKind.FILE, bytes_hash(data), len(data))
    assert m.ok


def test_always_skips_git_tether_venvs_and_caches_at_any_depth(ws: Path) -> None:
    for rel in [".git/config", ".tether/events.db", ".venv/lib/x.py", "venv/x", "src/__pycache__/app.pyc"]:
        write(ws, rel, "x")
    for rel in ["pkg/.pytest_cache/v", "pkg/.mypy_cache/m", ".ruff_cache/r", ".tox/t", "sub/.git"]:
        write(ws, rel, "x")
    assert sorted(take(ws).entries) == ["README.md", "src/app.py", "tests/test_app.py"]


def test_gitignore_root_nested_negation_and_info_exclude(ws: Path) -> None:
    write(ws, ".gitignore", "*.log\nbuild/\n!keep.log\n")
    write(ws, "src/.gitignore", "generated.py\n!important.log\n")
    write(ws, ".git/info/exclude", "secret.txt\n")
    for rel in ["a.log", "keep.log", "build/out.js", "src/generated.py", "src/important.log", "src/x.log"]:
        write(ws, rel, "x")
    write(ws, "secret.txt", "x")
    m = take(ws, exclude=["README.md"])
    assert sorted(m.entries) == [
        ".gitignore",
        "keep.log",
        "src/.gitignore",
        "src/app.py",
        "src/important.log",
        "tests/test_app.py",
    ]


def test_a_gitignore_written_during_the_run_hides_nothing(ws: Path) -> None:
    base = take(ws)
    write(ws, ".gitignore", "*\n")
    write(ws, "src/.gitignore", "*.py\n")
    write(ws, "src/app.py", "def f():\n    return 2\n")
    write(ws, "src/new.py", "x = 1\n")
    after = take(ws, previous=base)
    got = {(c.path, c.kind) for c in changes(base, after)}
    assert got == {
        (".gitignore", ChangeKind.ADDED),
        ("src/.gitignore", ChangeKind.ADDED),
        ("src/app.py", ChangeKind.MODIFIED),
        ("src/new.py", ChangeKind.ADDED),
    }


def test_exclude_belongs_to_the_first_snapshot(ws: Path) -> None:
    base = take(ws, exclude=["README.md"])
    assert "README.md" not in take(ws, previous=base).entries
    with pytest.raises(SnapshotError, match="first snapshot"):
        take(ws, previous=base, exclude=["other"])


def test_symlinks_are_recorded_as_links_and_never_followed(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write(outside, "secret", "s3cret")
    (ws / "link_out").symlink_to(outside)
    (ws / "link_file").symlink_to(outside / "secret")
    (ws / "loop").symlink_to("loop")
    m = take(ws)
    assert {p for p in m.entries if p.startswith(("link", "loop"))} == {"link_out", "link_file", "loop"}
    e = m.entries["link_file"]
    assert e.kind is EntryKind.LINK and e.digest == bytes_hash(os.fsencode(outside / "secret"))
    assert not any(Path(p).name == "secret" for p in m.entries)
    # Retargeting a link is a change; the target's content is never read.
    (ws / "link_file").unlink()
    (ws / "link_file").symlink_to(outside)
    assert [c.path for c in changes(m, take(ws, previous=m))] == ["link_file"]


def test_a_fifo_and_a_non_utf8_name_are_errors_not_silent_skips(ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    (ws / os.fsdecode(b"bad\xffname")).write_text("x")
    m = take(ws)  # must not hang on the FIFO
    assert "FIFO" in m.errors["pipe"]
    assert m.errors["bad\\xffname"] == "file name is not valid UTF-8"
    assert not m.ok


def test_a_path_unreadable_in_either_snapshot_is_unknown_not_changed(ws: Path) -> None:
    base = take(ws)
    (ws / "README.md").unlink()
    os.mkfifo(ws / "README.md")
    after = take(ws, previous=base)
    assert "README.md" in after.errors
    assert changes(base, after) == []  # the caller must look at errors: nothing is reported as deleted


def test_stat_cache_does_not_reread_unchanged_files(ws: Path) -> None:
    base = later(take(ws))
    # Forge the cache: same stat, different digest. A snapshot that trusts the cache keeps the forgery,
    # which proves the file was not read; one that sees a changed stat reads it.
    e = base.entries["README.md"]
    forged = dataclasses.replace(e, digest=bytes_hash(b"forged"))
    prev = dataclasses.replace(base, entries={**base.entries, "README.md": forged})
    assert take(ws, previous=prev).entries["README.md"].digest == forged.digest
    os.utime(ws / "README.md", ns=(e.mtime_ns, e.mtime_ns + 1))
    assert take(ws, previous=later(prev)).entries["README.md"].digest == e.digest


def test_racy_entries_are_read_again(ws: Path) -> None:
    base = take(ws)
    e = base.entries["README.md"]
    forged = dataclasses.replace(e, digest=bytes_hash(b"forged"))
    # The previous scan started in the same tick as the file's last change: it may have been rewritten
    # after it was read, so the stat cache may not vouch for it.
    prev = dataclasses.replace(base, entries={**base.entries, "README.md": forged}, started_ns=e.ctime_ns + 1)
    assert take(ws, previous=prev).entries["README.md"].digest == e.digest


def test_touch_r_cannot_hide_an_in_place_rewrite(ws: Path) -> None:
    base = later(take(ws))
    p = ws / "src/app.py"
    st = p.stat()
    p.write_text("def f():\n    return 9\n")  # same size
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))  # what `touch -r` does
    assert (p.stat().st_size, p.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    assert [c.path for c in changes(base, take(ws, previous=base))] == ["src/app.py"]


def test_rename_over_with_the_same_size_and_mtime_is_seen(ws: Path) -> None:
    base = later(take(ws))
    p = ws / "src/app.py"
    st = p.stat()
    tmp = write(ws, "tmp.py", "def f():\n    return 7\n")
    os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(tmp, p)
    assert [c.path for c in changes(base, take(ws, previous=base))] == ["src/app.py"]


def test_changes_added_modified_deleted_and_executable_bit(ws: Path) -> None:
    base = take(ws)
    write(ws, "src/new.py", "x\n")
    write(ws, "src/app.py", "def f():\n    return 2\n")
    (ws / "README.md").unlink()
    (ws / "tests/test_app.py").chmod(0o755)
    got = {(c.path, c.kind) for c in changes(base, take(ws, previous=base))}
    assert got == {
        ("src/new.py", ChangeKind.ADDED),
        ("src/app.py", ChangeKind.MODIFIED),
        ("README.md", ChangeKind.DELETED),
        ("tests/test_app.py", ChangeKind.MODIFIED),
    }


def test_permission_bits_other_than_exec_are_not_a_change(ws: Path) -> None:
    base = take(ws)
    (ws / "README.md").chmod(0o600)
    assert changes(base, take(ws, previous=base)) == []


def test_blobs_hold_every_version_read(ws: Path) -> None:
    blobs = MemoryBlobStore()
    base = take(ws, blobs=blobs)
    write(ws, "src/app.py", "def f():\n    return 2\n")
    after = take(ws, previous=base, blobs=blobs)
    (c,) = changes(base, after)
    assert c.before is not None and c.after is not None
    assert blobs.get_blob(c.before.digest) == b"def f():\n    return 1\n"
    assert blobs.get_blob(c.after.digest) == b"def f():\n    return 2\n"


def test_unified_diff_and_stat_are_made_in_python(ws: Path) -> None:
    blobs = MemoryBlobStore()
    base = take(ws, blobs=blobs)
    write(ws, "src/app.py", "def f():\n    return 2\n\n\ndef g():\n    return 3")
    write(ws, "src/new.py", "a\nb\n")
    (ws / "README.md").unlink()
    by_path = {c.path: c for c in changes(base, take(ws, previous=base, blobs=blobs))}
    d = unified_diff(by_path["src/app.py"], blobs)
    assert "--- a/src/app.py\n+++ b/src/app.py\n" in d
    assert "-    return 1\n+    return 2\n" in d
    assert d.endswith("+    return 3\n\\ No newline at end of file\n")
    assert diff_stat(by_path["src/app.py"], blobs) == snap.DiffStat(insertions=5, deletions=1, before_lines=2)
    assert "new file mode 100644" in unified_diff(by_path["src/new.py"], blobs)
    assert diff_stat(by_path["src/new.py"], blobs) == snap.DiffStat(2, 0, 0)
    assert "--- a/README.md\n+++ /dev/null\n@@ -1 +0,0 @@\n-hello\n" in unified_diff(by_path["README.md"], blobs)
    assert diff_stat(by_path["README.md"], blobs) == snap.DiffStat(0, 1, 1)


def test_missing_final_newline_and_binary_files(ws: Path) -> None:
    blobs = MemoryBlobStore()
    write(ws, "data.bin", b"\x00\x01\x02")
    base = take(ws, blobs=blobs)
    write(ws, "README.md", "hello")
    write(ws, "data.bin", b"\x00\x01\x03")
    by_path = {c.path: c for c in changes(base, take(ws, previous=base, blobs=blobs))}
    assert diff_stat(by_path["README.md"], blobs) == snap.DiffStat(1, 1, 1)
    assert diff_stat(by_path["data.bin"], blobs).binary
    assert "Binary files a/data.bin and b/data.bin differ" in unified_diff(by_path["data.bin"], blobs)


def test_read_content_falls_back_to_the_workspace_only_if_the_bytes_still_match(ws: Path) -> None:
    m = take(ws)  # no blob store
    e = m.entries["README.md"]
    assert read_content(e, None, ws) == b"hello\n"
    write(ws, "README.md", "changed\n")
    with pytest.raises(SnapshotError, match=r"README\.md: content .* not stored"):
        read_content(e, MemoryBlobStore(), ws)


def test_large_files_are_hashed_but_not_stored(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(snap, "MAX_BLOB_BYTES", 16)
    write(ws, "big.txt", "x" * 100)
    blobs = MemoryBlobStore()
    m = take(ws, blobs=blobs)
    assert m.entries["big.txt"].digest == bytes_hash(b"x" * 100)
    assert m.entries["big.txt"].digest not in blobs.blobs
    assert m.entries["README.md"].digest in blobs.blobs


def test_manifest_round_trips_through_the_event_store(ws: Path, tmp_path: Path) -> None:
    write(ws, ".gitignore", "*.log\n")
    os.mkfifo(ws / "pipe")
    with EventStore.open(tmp_path / "events.db") as store:
        m = take(ws, blobs=store, exclude=["README.md"])
        h = store.put_blob(m.to_json())
        back = Manifest.from_json(store.get_blob(h))
    assert back == m
    assert back.errors == m.errors and back.rules.exclude == ("README.md",)
    write(ws, "x.log", "ignored by the inherited rules")
    assert "x.log" not in take(ws, previous=back).entries


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        (b"not json", "not JSON"),
        (b'{"version": 2}', "manifest.version"),
        (b'{"version":1,"started_ns":"x","entries":[],"errors":{}}', "manifest.started_ns"),
        (
            b'{"version":1,"started_ns":1,"entries":[["../x","file","sha256:' + b"0" * 64 + b'",0,0,0,0,0]],'
            b'"errors":{},"ignore":{"gitignores":{},"exclude":[]}}',
            r"manifest.entries\[0\].path",
        ),
        (
            b'{"version":1,"started_ns":1,"entries":[["x","file","md5:1",0,0,0,0,0]],'
            b'"errors":{},"ignore":{"gitignores":{},"exclude":[]}}',
            r"manifest.entries\[0\].digest",
        ),
        (
            b'{"version":1,"started_ns":1,"entries":[["x","dir","sha256:' + b"0" * 64 + b'",0,0,0,0,0]],'
            b'"errors":{},"ignore":{"gitignores":{},"exclude":[]}}',
            r"manifest.entries\[0\].kind",
        ),
        (b'{"version":1,"started_ns":1,"entries":[],"errors":{},"ignore":{"gitignores":[]}}', "manifest.ignore"),
    ],
)
def test_malformed_manifests_name_the_field(doc: bytes, field: str) -> None:
    with pytest.raises(SnapshotError, match=field):
        Manifest.from_json(doc)


def test_a_hostile_git_directory_is_never_read_or_run(ws: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    hook = f"#!/bin/sh\ntouch {marker}\n"
    write(ws, ".git/config", f"[core]\n\tfsmonitor = {ws}/.git/hook.sh\n\thooksPath = {ws}/.git\n[broken\n")
    write(ws, ".git/hook.sh", hook).chmod(0o755)
    write(ws, ".gitattributes", "* diff=evil filter=evil\n")
    m = take(ws)
    assert ".gitattributes" in m.entries and not any(p.startswith(".git/") for p in m.entries)
    assert not marker.exists()


def test_workspace_must_be_a_directory(tmp_path: Path) -> None:
    with pytest.raises(SnapshotError, match="not a directory"):
        take(tmp_path / "missing")


def test_a_bad_gitignore_line_can_only_show_more(ws: Path) -> None:
    write(ws, ".gitignore", "***/[\n*.log\n")
    write(ws, "a.log", "x")
    assert "a.log" not in take(ws).entries


def test_git_agrees_on_what_is_ignored(ws: Path) -> None:
    """Our reading of .gitignore against git's own, on a repository tether created (not agent-written)."""
    write(ws, ".gitignore", "*.log\n/build\ndocs/**/*.tmp\n!keep.log\n")
    write(ws, "src/.gitignore", "gen_*\n")
    for rel in ["a.log", "keep.log", "build/x", "src/build/y", "docs/a/b/c.tmp", "docs/c.tmp", "src/gen_1.py"]:
        write(ws, rel, "x")
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    listed = subprocess.run(
        ["git", "-C", str(ws), "ls-files", "--others", "--exclude-standard"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    assert sorted(take(ws).entries) == sorted(listed)


# ---- materialise: rebuilding a recorded tree (replay, fork, import) --------------------------------


def test_materialise_rebuilds_files_modes_and_links_byte_for_byte(ws: Path, tmp_path: Path) -> None:
    write(ws, "bin/run.sh", "#!/bin/sh\necho hi\n").chmod(0o755)
    write(ws, "data/blob.bin", bytes(range(256)) * 3)
    os.symlink("../src/app.py", ws / "bin" / "app")
    blobs = MemoryBlobStore()
    m = take(ws, blobs=blobs)
    out = tmp_path / "rebuilt"
    snap.materialise(m, blobs, out)
    again = take(out)
    assert changes(m, again) == []  # same paths, bytes, kinds and executable bits
    assert sorted(again.entries) == sorted(m.entries)
    assert os.readlink(out / "bin" / "app") == "../src/app.py"
    assert os.access(out / "bin" / "run.sh", os.X_OK) and not os.access(out / "README.md", os.X_OK)


def test_materialise_refuses_a_blob_that_does_not_match_its_digest(ws: Path, tmp_path: Path) -> None:
    blobs = MemoryBlobStore()
    m = take(ws, blobs=blobs)
    digest = m.entries["src/app.py"].digest
    blobs.blobs[digest] = b"def f():\n    return 2\n"  # the store was tampered with
    with pytest.raises(
        snap.ContentMismatch, match=r"src/app.py: the stored content \(sha256:\w+\) does not match"
    ) as e:
        snap.materialise(m, blobs, tmp_path / "out")
    assert (e.value.recorded, e.value.found) == (digest, bytes_hash(b"def f():\n    return 2\n"))


def test_materialise_refuses_missing_content_a_non_empty_target_and_an_incomplete_snapshot(
    ws: Path, tmp_path: Path
) -> None:
    blobs = MemoryBlobStore()
    m = take(ws, blobs=blobs)
    with pytest.raises(SnapshotError, match=r"README.md: content .* is not in the blob store"):
        snap.materialise(m, MemoryBlobStore(), tmp_path / "empty-store")
    busy = tmp_path / "busy"
    write(busy, "keep.txt", "mine")
    with pytest.raises(SnapshotError, match="expected an empty directory"):
        snap.materialise(m, blobs, busy)
    assert (busy / "keep.txt").read_text() == "mine"  # nothing of the caller's was touched
    partial = dataclasses.replace(m, errors={"secret.txt": "unreadable: Permission denied"})
    with pytest.raises(SnapshotError, match=r"could not read 1 path.*secret.txt"):
        snap.materialise(partial, blobs, tmp_path / "partial")


def test_materialise_never_writes_through_a_link_of_a_crafted_manifest(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    blobs = MemoryBlobStore()
    m = take(ws, blobs=blobs)
    link = snap.Entry("evil", EntryKind.LINK, blobs.put_blob(os.fsencode(str(outside))), 0o777, 1, 1, 1, 1)
    through = dataclasses.replace(m.entries["README.md"], path="evil/pwned.txt")
    crafted = dataclasses.replace(m, entries={**m.entries, "evil": link, "evil/pwned.txt": through})
    with pytest.raises(SnapshotError, match=r"evil/pwned\.txt: cannot be rebuilt"):  # refused before any write
        snap.materialise(crafted, blobs, tmp_path / "out")
    assert list(outside.iterdir()) == []


def test_materialise_never_makes_a_link_through_a_link_of_a_crafted_manifest(ws: Path, tmp_path: Path) -> None:
    """Links are made last, in path order: a crafted manifest with a link ``evil`` to a folder outside and a link
    ``evil/pwned`` under it made the second one in that folder (a package's replay planting a link anywhere the
    operator may write, e.g. a missing ``~/.bash_profile``). A file or link is never also a folder of another."""
    outside = tmp_path / "outside"
    outside.mkdir()
    blobs = MemoryBlobStore()
    m = take(ws, blobs=blobs)
    link = snap.Entry("evil", EntryKind.LINK, blobs.put_blob(os.fsencode(str(outside))), 0o777, 1, 1, 1, 1)
    inner = dataclasses.replace(link, path="evil/pwned", digest=blobs.put_blob(b"/etc/passwd"))
    crafted = dataclasses.replace(m, entries={**m.entries, "evil": link, "evil/pwned": inner})
    with pytest.raises(SnapshotError, match=r"evil/pwned: .*evil.* is recorded as a link"):
        snap.materialise(crafted, blobs, tmp_path / "out")
    assert list(outside.iterdir()) == []
    with pytest.raises(SnapshotError, match=r"manifest.entries\[\d+\].path: 'evil/pwned' lies under 'evil'"):
        snap.Manifest.from_json(crafted.to_json())


@pytest.mark.parametrize("path", ["a\x00b", "a//b", "./a", "a/.", "a/", "."])
def test_a_manifest_path_that_names_no_single_workspace_file_is_refused(ws: Path, path: str) -> None:
    """A snapshot writes each path in one spelling (no empty or ``.`` parts, no NUL); any other, from a crafted
    package, is refused with the entry named, never a ValueError from ``os`` while rebuilding."""
    m = take(ws, blobs=MemoryBlobStore())
    row = [*m.entries["README.md"].to_row()]
    row[0] = path
    doc = json.loads(m.to_json())
    doc["entries"] = [row]
    with pytest.raises(SnapshotError, match=r"manifest.entries\[0\].path: expected a relative path"):
        snap.Manifest.from_json(json.dumps(doc))
