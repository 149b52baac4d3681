"""Extracting an archive or applying a patch INTO the workspace writes whatever the archive or patch names: one that
holds ``secrets/key.txt`` overwrites a file ``filesystem.deny`` hides, though the command line names no hidden
place. Each command is first run for real in a fresh workspace, to show that it changes the denied file; then the
gate must refuse it. The gate reads the member list (tar, zip) or the patched names (git apply, git am) at decision
time, bounded; an archive it cannot list (too big, too many members, links, not a regular file, unreadable,
compressed in a way it cannot read, or read from a pipe) is judged by what the deny list may reach under the target
directory."""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest
from test_deny_reach_writes import SECRET, gate, touches_secret
from test_deny_reach_writes import make as make_base

from tether.policy import archives
from tether.policy.decision import Verdict

EVIL = b"overwritten by the archive\n"


def _patch(ws: Path, path: str, name: str) -> None:
    """A git patch (``git diff`` output) that rewrites ``path``, saved as ``name``."""
    old = (ws / path).read_bytes()
    (ws / path).write_bytes(EVIL)
    diff = subprocess.run(["git", "diff", "--", path], cwd=ws, capture_output=True, check=True).stdout
    (ws / path).write_bytes(old)
    # the file's bytes are the index's again, its stat not: without a refresh `git apply --3way` (which checks the
    # index) refused "does not match index" whenever the index was not racily clean, i.e. when the machine was slow
    subprocess.run(["git", "update-index", "-q", "--refresh"], cwd=ws, check=True)
    (ws / name).write_bytes(diff)


def make(ws: Path) -> Path:
    make_base(ws)
    subprocess.run(["git", "checkout", "-q", "--", "."], cwd=ws, check=True)  # the work tree as committed
    staged = ws / "staged"
    (staged / "secrets").mkdir(parents=True)
    (staged / "secrets" / "key.txt").write_bytes(EVIL)
    (staged / "src").mkdir()
    (staged / "src" / "b.py").write_text("y = 1\n")
    subprocess.run(["tar", "cf", "../evil.tar", "src/b.py", "secrets/key.txt"], cwd=staged, check=True)
    subprocess.run(["tar", "czf", "../evil.tgz", "secrets/key.txt"], cwd=staged, check=True)
    subprocess.run(["tar", "cf", "../../key.tar", "key.txt"], cwd=staged / "secrets", check=True)
    subprocess.run(["tar", "cf", "../ok.tar", "src/b.py"], cwd=staged, check=True)
    with zipfile.ZipFile(ws / "evil.zip", "w") as z:
        z.write(staged / "secrets" / "key.txt", "secrets/key.txt")
    with zipfile.ZipFile(ws / "ok.zip", "w") as z:
        z.write(staged / "src" / "b.py", "src/b.py")
    (ws / "staged" / "secrets" / "key.txt").unlink()
    (ws / "staged" / "secrets").rmdir()
    os.symlink("../secrets", ws / "staged" / "lnk")  # a link, then a file through it
    subprocess.run(["tar", "cf", "../link.tar", "lnk", "lnk/key.txt"], cwd=ws / "staged", check=False)
    _patch(ws, "secrets/key.txt", "evil.patch")
    _patch(ws, "src/a.py", "ok.patch")
    hooks = ws / "hook"
    (hooks / ".git" / "hooks").mkdir(parents=True)
    (hooks / ".git" / "hooks" / "post-checkout").write_text("#!/bin/sh\necho pwned\n")
    subprocess.run(["tar", "cf", "../hook.tar", ".git/hooks/post-checkout"], cwd=hooks, check=True)
    return ws


EXTRACTORS = [
    "tar xf evil.tar",
    "tar -xf evil.tar",
    "tar --extract --file=evil.tar",
    "tar xzf evil.tgz",
    "tar xf evil.tgz",
    "tar -x -f evil.tar secrets/key.txt",
    "tar xf key.tar -C secrets",
    "tar xf - < evil.tar",
    "tar x < evil.tar",
    "cat evil.tar | tar x",
    "cd src && tar xf ../evil.tar -C ..",
    "unzip -oq evil.zip",
    "unzip -o -q evil.zip -d .",
    "git apply evil.patch",
    "git apply < evil.patch",
    "cat evil.patch | git apply",
    "git apply --3way evil.patch",
    "cd secrets && git apply ../evil.patch",
    "git -C secrets apply ../evil.patch",
]


HARMLESS = [
    "tar xf ok.tar",
    "tar xf evil.tar -C src",  # into src: src/secrets/key.txt is not hidden
    "unzip -oq ok.zip",
    "unzip -oq evil.zip -d src",
    "git apply ok.patch",
    "git apply --check evil.patch",
    "git apply --stat evil.patch",
    "tar tf evil.tar",
]


@pytest.mark.parametrize(("command", "hides"), [(c, True) for c in EXTRACTORS] + [(c, False) for c in HARMLESS])
def test_an_archive_or_patch_is_refused_when_it_overwrites_a_denied_file(
    command: str, hides: bool, tmp_path: Path
) -> None:
    """Run for real first: the spelling does (or does not) touch the denied file; the gate refuses exactly those."""
    assert touches_secret(command, make(tmp_path / "run")) is hides
    d = gate(make(tmp_path / "ws")).decide("bash", {"command": command})
    assert (d.verdict is Verdict.DENY) is hides, d.to_dict()


def test_a_member_into_git_hooks_is_refused(tmp_path: Path) -> None:
    """Not the deny list, the same hole: a member under .git/hooks plants code git runs next."""
    ws = make(tmp_path / "ws")
    d = gate(ws).decide("bash", {"command": "tar xf hook.tar"})
    assert d.verdict is Verdict.DENY, d.to_dict()
    assert d.deciding_rule == "path:protected"


def test_a_member_through_a_link_is_not_listed_and_the_reach_decides(tmp_path: Path) -> None:
    """``lnk -> ../secrets`` then ``lnk/key.txt``: the link members make the list unreadable for the gate (where the
    second member lands depends on the first): the target's reach decides."""
    ws = make(tmp_path / "ws")
    with tarfile.open(ws / "link.tar") as t:
        assert any(m.issym() for m in t.getmembers())
    assert archives.members(str(ws / "link.tar"), "tar") is None
    d = gate(ws).decide("bash", {"command": "tar xf link.tar"})
    assert d.verdict is Verdict.DENY, d.to_dict()
    assert gate(ws).decide("bash", {"command": "tar xf link.tar -C docs"}).verdict is not Verdict.DENY


def test_an_existing_link_in_the_workspace_is_followed(tmp_path: Path) -> None:
    """A member ``s/key.txt`` lands in secrets/ when the workspace already holds ``s -> secrets``."""
    ws = make(tmp_path / "ws")
    os.symlink("secrets", ws / "s")
    with tarfile.open(ws / "s.tar", "w") as t:
        t.add(ws / "staged" / "src" / "b.py", "s/key.txt")
    assert touches_secret("tar xf s.tar", make_link(tmp_path / "run"))
    assert gate(ws).decide("bash", {"command": "tar xf s.tar"}).verdict is Verdict.DENY


def make_link(ws: Path) -> Path:
    make(ws)
    os.symlink("secrets", ws / "s")
    with tarfile.open(ws / "s.tar", "w") as t:
        t.add(ws / "staged" / "src" / "b.py", "s/key.txt")
    return ws


@pytest.mark.parametrize("kind", ["fifo", "garbage", "dir", "devzero"])
def test_an_archive_the_gate_cannot_list_fails_closed_and_never_blocks(kind: str, tmp_path: Path) -> None:
    """A FIFO would block a reader for ever: the gate only opens a regular file."""
    ws = make(tmp_path / "ws")
    a = ws / "a.tar"
    if kind == "fifo":
        os.mkfifo(a)
    elif kind == "garbage":
        a.write_bytes(b"\x00\x01not an archive" * 100)
    elif kind == "dir":
        a.mkdir()
    else:
        os.symlink("/dev/zero", a)
    assert archives.members(str(a), "tar") is None
    patch = [] if kind == "garbage" else ["git apply a.tar"]  # a patch with no header writes nothing (git agrees)
    for command in ("tar xf a.tar", "unzip -o a.tar", *patch):
        assert gate(ws).decide("bash", {"command": command}).verdict is Verdict.DENY, command


def test_the_bounds_fail_closed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = make(tmp_path / "ws")
    assert archives.members(str(ws / "ok.tar"), "tar") == ["src/b.py"]
    monkeypatch.setattr(archives, "MAX_MEMBERS", 0)
    assert archives.members(str(ws / "ok.tar"), "tar") is None
    assert archives.members(str(ws / "ok.zip"), "zip") is None
    assert gate(ws).decide("bash", {"command": "tar xf ok.tar"}).verdict is Verdict.DENY
    monkeypatch.setattr(archives, "MAX_MEMBERS", 10)
    monkeypatch.setattr(archives, "MAX_BYTES", 10)
    assert archives.members(str(ws / "ok.zip"), "zip") is None
    assert archives.members(str(ws / "ok.patch"), "patch") is None


def test_patch_names_every_strip_level(tmp_path: Path) -> None:
    """``-p0``, ``-p2`` or ``--directory`` place a patched name elsewhere: every suffix of every name is a
    candidate, renames and copies included; a quoted name git escaped is not read (None)."""
    p = tmp_path / "x.patch"
    p.write_text(
        "diff --git a/x/secrets/key.txt b/x/secrets/key.txt\n--- a/x/secrets/key.txt\n+++ b/x/secrets/key.txt\n"
        "diff --git a/m b/n\nrename from m\nrename to secrets/n\n"
    )
    got = archives.members(str(p), "patch")
    assert got is not None and "secrets/key.txt" in got and "secrets/n" in got and "x/secrets/key.txt" in got
    p.write_text("--- a/secrets/k\r\n+++ b/secrets/k\r\n")  # CRLF: the name with and without its \r
    assert {"secrets/k", "secrets/k\r"} <= set(archives.members(str(p), "patch") or [])
    p.write_text('diff --git "a/sec\\162ets/key" "b/sec\\162ets/key"\n')
    assert archives.members(str(p), "patch") is None


def _tar_of(ws: Path, name: str, member: str) -> None:
    """A tar holding one file ``member`` (any spelling: tarfile writes the name as given)."""
    data = EVIL
    with tarfile.open(ws / name, "w") as t:
        info = tarfile.TarInfo(member)
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))


def make_renamed(ws: Path) -> Path:
    """make's workspace, plus archives whose names land on secrets/ only once tar renames them."""
    make(ws)
    _tar_of(ws, "deep.tar", "x/secrets/key.txt")
    _tar_of(ws, "dotdeep.tar", "./x/secrets/key.txt")
    _tar_of(ws, "other.tar", "zzz/key.txt")
    _tar_of(ws, "plain.tar", "key.txt")
    return ws


RENAMERS = [
    "tar xf deep.tar --strip-components=1",
    "tar xf deep.tar --strip-components 1",
    "tar --strip=1 -xf deep.tar",
    "tar -x --strip-comp=1 -f deep.tar",
    "tar xf dotdeep.tar --strip-components=2",
    "tar xf other.tar --transform=s/zzz/secrets/",
    "tar xf other.tar --xform s/zzz/secrets/",
    "tar xf other.tar --transf=s/zzz/secrets/ --show-transformed-names",
    "tar xf plain.tar --one-top-level=secrets",
]

RENAMED_HARMLESS = [
    "tar xf evil.tar --strip-components=1",  # src/b.py and secrets/key.txt land as b.py and key.txt
    "tar xf deep.tar --strip-components=2",  # key.txt
    "tar xf deep.tar --strip-components=1 -C src",
]


@pytest.mark.parametrize(("command", "hides"), [(c, True) for c in RENAMERS] + [(c, False) for c in RENAMED_HARMLESS])
def test_names_tar_renames_are_judged_as_renamed(command: str, hides: bool, tmp_path: Path) -> None:
    """``--strip-components N`` drops N leading components of each name: the name judged is the one tar writes
    (exactly, when N is a number). ``--transform``/``--xform`` and ``--one-top-level`` rename members in ways the gate
    does not read: the target's reach decides (a HARD DENY: they only asked, and an allow rule for tar lifted that)."""
    assert touches_secret(command, make_renamed(tmp_path / "run")) is hides
    d = gate(make_renamed(tmp_path / "ws")).decide("bash", {"command": command})
    assert (d.verdict is Verdict.DENY) is hides, d.to_dict()


@pytest.mark.parametrize(
    "command",
    [
        "bsdtar -xf other.tar -s ,zzz,secrets,",
        "bsdtar -x -s,zzz,secrets, -f other.tar",
        "bsdtar -x -f deep.tar --strip-components 1",
        "busybox tar xf deep.tar --strip-components=1",
        'tar xf deep.tar --strip-components="$N"',
    ],
)
def test_renaming_spellings_of_other_tars_fail_closed(command: str, tmp_path: Path) -> None:
    """bsdtar's ``-s /old/new/`` renames members (GNU tar's ``-s`` only keeps their order), and busybox tar strips
    components too (neither is installed here to run: their manuals say so); a strip count known only at run time may
    be any."""
    assert gate(make_renamed(tmp_path / "ws")).decide("bash", {"command": command}).verdict is Verdict.DENY


def test_stripped_counts_components_both_ways() -> None:
    """GNU tar counts an empty component and a ``.``; a tar that skips them strips other ones: both names are judged,
    and a name with too few components is not written at all."""
    assert archives.stripped(["./x/secrets/k"], 1) == ["x/secrets/k", "secrets/k"]
    assert archives.stripped(["x//secrets/k"], 2) == ["secrets/k", "k"]
    assert archives.stripped(["/x/k", "x/"], 1) == ["k"]
    assert archives.stripped(["a/b"], 2) == []


def make_keyed(ws: Path) -> Path:
    """make's workspace, plus a patch of ``key.txt`` at the top: ``--directory=secrets`` puts it on the hidden file."""
    make(ws)
    text = (ws / "evil.patch").read_text()
    (ws / "key.patch").write_text(text.replace("a/secrets/", "a/").replace("b/secrets/", "b/"))
    hunk = f"***************\n*** 1 ****\n! {SECRET}\n--- 1 ----\n! evil\n"
    (ws / "ctx.patch").write_text(f"*** secrets/key.txt\n--- nothere/key.txt\n{hunk}")  # patch takes the *** name
    return ws


@pytest.mark.parametrize(
    ("command", "hides"),
    [
        ("git apply --directory=secrets key.patch", True),
        ("git apply --directory secrets key.patch", True),
        ("git apply --directory=secrets/ key.patch", True),
        ("git apply --directory=src key.patch", False),
    ],
)
def test_git_apply_directory_is_put_in_front_of_each_name(command: str, hides: bool, tmp_path: Path) -> None:
    """``git apply --directory=DIR`` prepends DIR to every name of the patch (after the strip level): a patch of
    ``key.txt`` writes secrets/key.txt; it was allowed."""
    assert touches_secret(command, make_keyed(tmp_path / "run")) is hides
    d = gate(make_keyed(tmp_path / "ws")).decide("bash", {"command": command})
    assert (d.verdict is Verdict.DENY) is hides, d.to_dict()


def test_git_apply_directory_known_only_at_run_time_fails_closed(tmp_path: Path) -> None:
    ws = make_keyed(tmp_path / "ws")
    assert gate(ws).decide("bash", {"command": 'git apply --directory="$D" key.patch'}).verdict is Verdict.DENY


PATCHERS = [
    "patch -p1 < evil.patch",
    "patch -p1 -i evil.patch",
    "patch -p1 --input=evil.patch",
    "patch -p1 -ievil.patch",
    "cat evil.patch | patch -p1",
    "cd secrets && patch -p2 < ../evil.patch",
    "patch -d secrets -p1 < key.patch",
    "patch -d secrets -p1 -i ../key.patch",
    "patch --directory=secrets -p1 < key.patch",
    "patch --directory secrets -p1 < key.patch",
    "patch secrets/key.txt key.patch",
    "patch -p1 -o secrets/new.txt < ok.patch",
    "patch -b -B secrets/ -p1 < ok.patch",
    "patch -p0 -i ctx.patch",
]

PATCH_HARMLESS = ["patch -p1 < ok.patch", "patch -p1 --dry-run < evil.patch", "patch -p1 -o src/new.txt < ok.patch"]


@pytest.mark.parametrize(("command", "hides"), [(c, True) for c in PATCHERS] + [(c, False) for c in PATCH_HARMLESS])
def test_patch_is_judged_by_the_names_it_writes(command: str, hides: bool, tmp_path: Path) -> None:
    """patch(1) is not in the profile (it asks: it also writes backups and rejects beside its files, and asks
    questions on the terminal), but what it writes is judged like git apply's: every strip level of every name
    under ``-d DIR`` (from where patch runs, not from git's top), the file a first operand names, ``-o``'s file, and a
    backup prefix that may put a copy anywhere. It asked, so an allow rule for patch lifted it."""
    assert touches_secret(command, make_keyed(tmp_path / "run")) is hides
    d = gate(make_keyed(tmp_path / "ws")).decide("bash", {"command": command})
    assert (d.verdict is Verdict.DENY) is hides, d.to_dict()


PYTHON_EXTRACTORS = [
    "python3 -m tarfile -e evil.tar",
    "python3 -m tarfile -e evil.tar .",
    "python3 -m tarfile --extract evil.tar",
    "python3 -m tarfile -v --ext evil.tgz .",
    "python3 -mtarfile -e key.tar secrets",
    "cd src && python3 -m tarfile -e ../evil.tar ..",
    "python3 -B -m tarfile -e evil.tar",
    "python3 -X utf8 -W ignore -m tarfile -e evil.tar",
    "python3 -m zipfile -e evil.zip .",
    "python3 -m zipfile --extract evil.zip .",
]

PYTHON_HARMLESS = [
    "python3 -m tarfile -e ok.tar",
    "python3 -m tarfile -l evil.tar",
    "python3 -m zipfile -e evil.zip src",
    "python3 -m tarfile -c out.tar src",
]


@pytest.mark.parametrize(
    ("command", "hides"), [(c, True) for c in PYTHON_EXTRACTORS] + [(c, False) for c in PYTHON_HARMLESS]
)
def test_python_archive_modules_are_judged_like_tar_and_unzip(command: str, hides: bool, tmp_path: Path) -> None:
    """``python -m tarfile -e A [DIR]`` and ``python -m zipfile -e A DIR`` extract like tar and unzip (they asked as
    modules that are not the project's, and an allow rule for python lifted that)."""
    assert touches_secret(command, make(tmp_path / "run")) is hides
    d = gate(make(tmp_path / "ws")).decide("bash", {"command": command})
    assert (d.verdict is Verdict.DENY) is hides, d.to_dict()


@pytest.mark.parametrize("module", ["tarfile", "zipfile"])
def test_python_archive_modules_read_what_they_pack(module: str, tmp_path: Path) -> None:
    """``python -m tarfile -c out.tar secrets`` copies the hidden file into an archive the agent may read."""
    command = f"python3 -m {module} -c out.x secrets"
    ws = make(tmp_path / "run")
    subprocess.run(["bash", "-c", command], cwd=ws, check=True)
    subprocess.run(["python3", "-m", module, "-e", "out.x", "o"], cwd=ws, check=True)
    assert SECRET in (ws / "o" / "secrets" / "key.txt").read_text()
    d = gate(make(tmp_path / "ws")).decide("bash", {"command": command})
    assert d.verdict is Verdict.DENY, d.to_dict()


SWAPPED = [
    "cp evil.tar ok.tar && tar xf ok.tar",
    "mv evil.tar ok.tar && tar xf ok.tar",
    "cat evil.tar > ok.tar && tar xf ok.tar",
    "ln -sf evil.tar ok.tar && tar xf ok.tar",
    "cp evil.zip ok.zip && unzip -o ok.zip",
    "cp evil.patch ok.patch && git apply ok.patch",
    'python3 -c \'import shutil; shutil.copy("evil.tar", "ok.tar")\' && tar xf ok.tar',
]
NOT_SWAPPED = ["mkdir -p out && tar xf ok.tar -C out", "tar xf ok.tar && rm ok.tar", "ls && tar xf ok.tar"]


@pytest.mark.parametrize(("command", "hides"), [(c, True) for c in SWAPPED] + [(c, False) for c in NOT_SWAPPED])
def test_an_archive_written_earlier_in_the_same_line_is_not_read_now(command: str, hides: bool, tmp_path: Path) -> None:
    """The gate reads ok.tar before the line runs; a command before the extraction replaces it with evil.tar: the
    names read are not those written (all were allowed). An archive a command before it may have written (a file
    or folder it names, or a program whose writes the tables do not name) is unknown: the reach decides."""
    assert touches_secret(command, make(tmp_path / "run")) is hides
    d = gate(make(tmp_path / "ws")).decide("bash", {"command": command})
    assert (d.verdict is Verdict.DENY) is hides, d.to_dict()


@pytest.mark.parametrize(
    ("command", "refused"),
    [
        ("cpio -i < evil.tar", True),
        ("cpio -idv < evil.tar", True),
        ("cpio -i -F evil.tar", True),
        ("cpio --extract --file=evil.tar", True),
        ("find secrets | cpio -o > x.cpio", True),
        ("7z x evil.zip", True),
        ("7z x -y evil.tar", True),
        ("7za e evil.zip", True),
        ("7z a out.7z secrets", True),
        ("7z a out.7z @list0", True),
        ("cpio -i -D src < evil.tar", False),
        ("cpio -it < evil.tar", False),
        ("7z x evil.zip -osrc", False),
        ("7z l evil.zip", False),
        ("7z a out.7z src", False),
    ],
)
def test_cpio_and_7z_write_names_the_gate_does_not_read(command: str, refused: bool, tmp_path: Path) -> None:
    """cpio and 7-Zip are not in the profile (they ask) and not installed here to run; their manuals: ``cpio -i``
    writes an archive's members under ``-D`` or here, ``-o``/``-p`` read the files named on standard input, 7z
    ``x``/``e`` write under ``-o``, ``a`` reads its files. The gate reads neither format: the target's reach decides,
    a HARD DENY an allow rule for them cannot lift (they only asked)."""
    d = gate(make(tmp_path / "ws")).decide("bash", {"command": command})
    assert (d.verdict is Verdict.DENY) is refused, d.to_dict()
