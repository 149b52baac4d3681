"""POSIX ACLs on what a managed hook runs: ``setfacl -m u:bob:rw`` gives bob write on a file whose mode bits
still look root's alone. The ACLs are written as ``setfacl`` writes them: the ``system.posix_acl_*`` extended
attributes in the kernel's format (``include/uapi/linux/posix_acl_xattr.h``), which the kernel checks on the
way in, and with the real ``setfacl`` (what tether reads compared with ``getfacl``); the parser is attacked
with bytes the kernel would never hand back."""

from __future__ import annotations

import errno
import json
import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from hookkit import unavailable
from hypothesis import given, settings
from hypothesis import strategies as st

from tether.hooks import acl, status
from tether.hooks.install import main
from tether.hooks.trust import changeable, unreadable_for_others

pytestmark = pytest.mark.usefixtures("home")

BOB, STAFF = 4242, 4343
NONE = acl.UNDEFINED_ID


def encode(entries: list[tuple[int, int, int]]) -> bytes:
    return struct.pack("<I", acl.VERSION) + b"".join(struct.pack("<HHI", *e) for e in entries)


def grant(path: Path, *named: tuple[int, int, int], mask: int = 0o7, name: str = acl.ACCESS) -> None:
    """``setfacl -m``: the owner rwx, the group and others r-x, the named entries, the mask (in the kernel's
    order: by tag, then id)."""
    entries = [(acl.USER_OBJ, 0o7, NONE), *named, (acl.GROUP_OBJ, 0o5, NONE), (acl.MASK, mask, NONE)]
    entries = sorted([*entries, (acl.OTHER, 0o5, NONE)], key=lambda e: (e[0], e[2]))
    try:
        os.setxattr(path, name, encode(entries))
    except OSError as e:
        if e.errno in acl.ABSENT:
            unavailable(f"no POSIX ACLs on the filesystem of {path}")
        raise


def install(shared: Path) -> int:
    return main(["claude-code", "--managed", "--managed-dir", str(shared / "m")])


def test_a_named_user_granted_write_on_a_dependency_is_refused(shared: Path, site_packages: Path, capsys) -> None:
    module = site_packages / "yaml.py"
    module.write_text("")
    module.chmod(0o644)
    assert install(shared) == 0, capsys.readouterr().err
    grant(module, (acl.USER, 0o6, BOB))  # mode now -rw-rwxr--: group bits are the mask, the group is root's
    assert module.stat().st_gid == 0 and module.stat().st_mode & 0o070
    assert install(shared) == 2
    assert f"{module} (its ACL lets uid {BOB} change it)" in capsys.readouterr().err
    grant(module, (acl.USER, 0o6, BOB), mask=0o5)  # the mask takes write away from every named entry
    assert install(shared) == 0, capsys.readouterr().err


def test_a_named_group_granted_write_on_a_directory_above_is_refused(shared: Path, venv: Path, capsys) -> None:
    grant(shared, (acl.GROUP, 0o7, STAFF))  # every developer in staff could swap the venv under /opt
    assert install(shared) == 2
    err = capsys.readouterr().err
    assert f"(under {shared} (its ACL lets gid {STAFF} change it))" in err, err
    assert not (shared / "m").exists()
    grant(shared, (acl.GROUP, 0o7, 0))  # root's group, as with mode bits: fine
    assert install(shared) == 0, capsys.readouterr().err


def test_a_default_acl_that_lets_others_write_what_is_made_later_is_refused(
    shared: Path, site_packages: Path, capsys
) -> None:
    """A default ACL on site-packages hands its entries to every file pip writes there at the next upgrade,
    whatever the umask: a dependency bob can edit after the next ``pip install -U``."""
    grant(site_packages, (acl.USER, 0o7, BOB), mask=0o7, name=acl.DEFAULT)
    assert install(shared) == 2
    assert f"{site_packages} (its default ACL lets uid {BOB} change what is made in it)" in capsys.readouterr().err
    os.removexattr(site_packages, acl.DEFAULT)
    assert install(shared) == 0, capsys.readouterr().err


def test_an_acl_grant_on_the_managed_directory_is_refused(shared: Path, shared_python, capsys) -> None:
    managed = shared / "m"
    managed.mkdir()
    grant(managed, (acl.USER, 0o7, BOB))
    assert install(shared) == 2
    assert f"{managed} (its ACL lets uid {BOB} change it)" in capsys.readouterr().err
    assert os.listdir(managed) == []


def test_an_acl_that_keeps_a_user_out_is_what_other_users_cannot_use(shared: Path, shared_python) -> None:
    envelope = shared / "envelope.yaml"
    envelope.write_text("x: 1\n")
    envelope.chmod(0o644)
    command = f"{shared_python} -I -S /x/tether/hooks/launch.py claude-code --envelope {envelope} || exit 2"
    assert not any(str(envelope) in p for p in unreadable_for_others(command))
    grant(envelope, (acl.USER, 0o0, BOB), mask=0o5)  # others may read it; bob, named, may not
    assert f"{envelope} (its ACL keeps uid {BOB} from being able to read it)" in unreadable_for_others(command)


def test_an_acl_that_cannot_be_read_or_parsed_fails_closed(shared: Path, monkeypatch) -> None:
    target = shared / "f"
    target.write_text("")
    target.chmod(0o664)  # group write: the ACL must be read to know who else may write
    real = os.getxattr

    def failing(path, name, *args, **kwargs):
        if name == acl.ACCESS and str(path) == str(target):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real(path, name, *args, **kwargs)

    monkeypatch.setattr(os, "getxattr", failing)
    assert changeable(target) == f"{target} (its ACL cannot be read (Input/output error): who can change it is unknown)"
    monkeypatch.setattr(os, "getxattr", lambda path, name, *a, **k: b"\x02\x00\x00\x00\x01\x00")
    problem = changeable(target)
    assert problem is not None and "is no whole ACL" in problem


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"", "is no whole ACL"),
        (encode([(acl.USER_OBJ, 7, NONE)])[:-1], "is no whole ACL"),
        (struct.pack("<I", 1) + encode([])[4:], "ACL version 1"),
        (encode([(acl.USER_OBJ, 7, NONE), (0x40, 7, NONE), (acl.GROUP_OBJ, 5, NONE), (acl.OTHER, 5, NONE)]), "tag"),
        (encode([(acl.USER_OBJ, 0o17, NONE), (acl.GROUP_OBJ, 5, NONE), (acl.OTHER, 5, NONE)]), "permission"),
        (encode([(acl.USER_OBJ, 7, NONE), (acl.USER, 7, NONE), (acl.GROUP_OBJ, 5, NONE), (acl.OTHER, 5, NONE)]), "id"),
        (encode([(acl.USER_OBJ, 7, 0), (acl.GROUP_OBJ, 5, NONE), (acl.OTHER, 5, NONE)]), "id"),
        (encode([(acl.USER_OBJ, 7, NONE), (acl.GROUP_OBJ, 5, NONE)]), "exactly one"),
        (
            encode([(acl.USER_OBJ, 7, NONE), (acl.USER_OBJ, 7, NONE), (acl.GROUP_OBJ, 5, NONE), (acl.OTHER, 5, NONE)]),
            "one",
        ),
        (encode([(acl.USER_OBJ, 7, NONE), (acl.USER, 7, BOB), (acl.GROUP_OBJ, 5, NONE), (acl.OTHER, 5, NONE)]), "mask"),
    ],
)
def test_malformed_acl_bytes_are_an_error_never_taken_for_none(data: bytes, why: str) -> None:
    with pytest.raises(acl.AclError, match=why):
        acl.parse(data)


def test_what_the_kernel_keeps_round_trips(shared: Path) -> None:
    target = shared / "f"
    target.write_text("")
    grant(target, (acl.USER, 0o6, BOB), (acl.GROUP, 0o4, STAFF), mask=0o6)
    entries = acl.read(target)
    assert acl.writers(entries, (0,), (0,)) == [f"uid {BOB}"]
    assert acl.refused(entries, 0o4) == []
    plain = shared / "plain"
    plain.touch()
    assert acl.read(plain) == [], "no ACL: the mode bits are the whole story"


def test_status_reports_an_acl_grant_on_the_managed_file(shared: Path, shared_python, capsys) -> None:
    assert install(shared) == 0
    drop_in = shared / "m" / "managed-settings.d" / "tether.json"
    grant(drop_in, (acl.USER, 0o6, BOB))
    capsys.readouterr()
    assert status.main(["claude-code", "--managed-dir", str(shared / "m"), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert any(f"its ACL lets uid {BOB} change it" in p["problem"] for p in out["problems"]), out["problems"]


def test_where_python_has_no_extended_attributes_the_mode_bits_decide(shared: Path, monkeypatch) -> None:
    """macOS: ``os.getxattr`` does not exist; its ACLs are not POSIX ACLs. Not a crash, and not a refusal of
    every path."""
    target = shared / "f"
    target.write_text("")
    target.chmod(0o664)
    monkeypatch.delattr(os, "getxattr")
    assert acl.read(target) == []
    assert changeable(target) is None


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=120),
        st.lists(
            st.tuples(st.sampled_from([*acl.TAGS, 0, 0x40, 0xFFFF]), st.integers(0, 0xFFFF), st.integers(0, NONE)),
            max_size=8,
        ).map(encode),
    )
)
def test_any_bytes_parse_to_entries_or_an_acl_error(data: bytes) -> None:
    """Whatever the xattr holds: entries the checks can read, or AclError (which fails closed), nothing else."""
    try:
        entries = acl.parse(data)
    except acl.AclError:
        return
    assert all(e.tag in acl.TAGS and 0 <= e.perm <= 0o7 for e in entries)
    assert isinstance(acl.writers(entries, (0,), (0,)), list) and isinstance(acl.refused(entries, 0o4), list)


@pytest.fixture
def setfacl() -> str:
    """The real ``setfacl`` (package ``acl``): skipped where there is none, never in CI (``.ci/run`` installs it)."""
    found = shutil.which("setfacl")
    if not found or not shutil.which("getfacl"):
        unavailable("no setfacl/getfacl (package acl)")
    return found


def getfacl(path: Path, default: bool = False) -> list[str]:
    """``getfacl -n``'s entries (numeric ids), without comments and the effective-rights notes."""
    out = subprocess.run(
        ["getfacl", "-n", "-p", *(["-d"] if default else []), str(path)], capture_output=True, text=True, check=True
    ).stdout
    return [line.split("#")[0].strip() for line in out.splitlines() if line.strip() and not line.startswith("#")]


def as_getfacl(entries: list[acl.Entry]) -> list[str]:
    kinds = {acl.USER_OBJ: "user:", acl.USER: "user:", acl.GROUP_OBJ: "group:", acl.GROUP: "group:"}
    kinds |= {acl.MASK: "mask:", acl.OTHER: "other:"}
    return [f"{kinds[e.tag]}{'' if e.id == NONE else e.id}:{rwx(e.perm)}" for e in entries]


def rwx(perm: int) -> str:
    return "".join(c if perm & bit else "-" for c, bit in (("r", 4), ("w", 2), ("x", 1)))


def test_what_setfacl_writes_is_read_as_getfacl_reads_it_and_refused(
    setfacl: str, shared: Path, site_packages: Path, capsys
) -> None:
    module = site_packages / "yaml.py"
    module.write_text("")
    module.chmod(0o644)
    subprocess.run([setfacl, "-m", f"u:{BOB}:rw,g:{STAFF}:r", str(module)], check=True)
    assert as_getfacl(acl.read(module)) == getfacl(module)
    assert install(shared) == 2
    assert f"{module} (its ACL lets uid {BOB} change it)" in capsys.readouterr().err
    subprocess.run([setfacl, "-m", "m::r", str(module)], check=True)  # the mask takes bob's write away
    assert install(shared) == 0, capsys.readouterr().err
    subprocess.run([setfacl, "-b", str(module)], check=True)
    subprocess.run([setfacl, "-d", "-m", f"g:{STAFF}:rwx", str(site_packages)], check=True)
    assert as_getfacl(acl.read(site_packages, acl.DEFAULT)) == getfacl(site_packages, default=True)
    assert install(shared) == 2
    assert f"{site_packages} (its default ACL lets gid {STAFF} change what is made in it)" in capsys.readouterr().err


def test_a_named_user_denied_read_on_a_dependency_by_setfacl_is_refused(
    setfacl: str, shared: Path, site_packages: Path, capsys
) -> None:
    """Others may read the file by its mode bits, but a named entry keeps bob out: his hook would fail to import
    it, so every call he makes would be refused. Found in the same walk that judges who could change it."""
    module = site_packages / "yaml.py"
    module.write_text("")
    module.chmod(0o644)
    assert install(shared) == 0, capsys.readouterr().err
    subprocess.run([setfacl, "-m", f"u:{BOB}:---", str(module)], check=True)
    assert as_getfacl(acl.read(module)) == getfacl(module) and module.stat().st_mode & 0o004
    assert install(shared) == 2
    assert f"{module} (its ACL keeps uid {BOB} from being able to read it)" in capsys.readouterr().err


def test_a_named_group_that_cannot_enter_a_dependency_directory_is_refused(
    setfacl: str, shared: Path, site_packages: Path, capsys
) -> None:
    package = site_packages / "pkg"
    package.mkdir()
    package.chmod(0o755)
    subprocess.run([setfacl, "-m", f"g:{STAFF}:r--", str(package)], check=True)  # may list it, not enter it
    assert install(shared) == 2
    assert f"{package} (its ACL keeps gid {STAFF} from being able to read it)" in capsys.readouterr().err
