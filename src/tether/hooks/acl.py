"""POSIX ACLs: who besides a file's owner its access control list lets in, which mode bits do not show.

``setfacl -m u:bob:rw FILE`` gives bob write on a file whose mode still reads ``-rw-r--r--`` to someone who
looks at the "other" bits alone. Linux keeps an ACL in the extended attributes ``system.posix_acl_access``
(every file) and ``system.posix_acl_default`` (a directory's, copied to what is made in it), in the format of
the kernel's ``include/uapi/linux/posix_acl_xattr.h``: a little-endian ``u32`` version (2), then entries of
``u16`` tag, ``u16`` permission, ``u32`` id. A named user or group entry's permission is bounded by the mask
entry, and when an ACL has named entries the mode's group bits *are* that mask: so a file whose group bits
do not grant write has no entry that grants it, and its ACL need not be read to know (:func:`needs_reading`).

Fail closed: an ACL that cannot be read (other than "none", or a filesystem without ACLs) or does not parse is
an error, never taken for none.
"""

from __future__ import annotations

import errno
import os
import stat
import struct
from dataclasses import dataclass

ACCESS = "system.posix_acl_access"
DEFAULT = "system.posix_acl_default"
VERSION = 2
USER_OBJ, USER, GROUP_OBJ, GROUP, MASK, OTHER = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20
TAGS = (USER_OBJ, USER, GROUP_OBJ, GROUP, MASK, OTHER)
READ, WRITE, EXECUTE = 0o4, 0o2, 0o1
UNDEFINED_ID = 0xFFFFFFFF
HEADER, ENTRY = struct.Struct("<I"), struct.Struct("<HHI")
#: "No such ACL", and "no ACLs on this filesystem": the mode bits are the whole story.
ABSENT = (errno.ENODATA, errno.ENOTSUP, errno.EOPNOTSUPP)


class AclError(ValueError):
    """An ACL that could not be read or parsed."""


@dataclass(frozen=True)
class Entry:
    tag: int
    perm: int
    id: int


def parse(data: bytes) -> list[Entry]:
    """The entries of an ACL xattr's bytes; AclError for anything the kernel would not have written: another
    version, a cut entry, an unknown tag or permission bit, named entries without a mask, an entry kind the ACL
    must hold once missing or repeated, an id where none belongs."""
    if len(data) < HEADER.size or (len(data) - HEADER.size) % ENTRY.size:
        raise AclError(f"{len(data)} bytes is no whole ACL")
    (version,) = HEADER.unpack_from(data)
    if version != VERSION:
        raise AclError(f"ACL version {version}, not {VERSION}")
    entries = [Entry(*ENTRY.unpack_from(data, at)) for at in range(HEADER.size, len(data), ENTRY.size)]
    for e in entries:
        if e.tag not in TAGS or e.perm & ~0o7:
            raise AclError(f"an ACL entry with tag {e.tag:#x} and permission {e.perm:#o}")
        if (e.tag in (USER, GROUP)) == (e.id == UNDEFINED_ID):
            raise AclError(f"an ACL entry with tag {e.tag:#x} and id {e.id}")
    tags = [e.tag for e in entries]
    if any(tags.count(t) != 1 for t in (USER_OBJ, GROUP_OBJ, OTHER)) or tags.count(MASK) > 1:
        raise AclError("an ACL without exactly one owner, owning group and other entry")
    if (USER in tags or GROUP in tags) and MASK not in tags:
        raise AclError("an ACL with named entries and no mask")
    return entries


def read(path: str | os.PathLike[str], name: str = ACCESS) -> list[Entry]:
    """The ACL ``name`` of ``path`` (a link followed); [] when it has none, or where Python has no extended
    attributes (macOS, whose own ACLs, ``chmod +a``, are not POSIX ACLs and are not read). AclError when it
    cannot be read or parsed."""
    if not hasattr(os, "getxattr"):
        return []
    try:
        data = os.getxattr(path, name)
    except OSError as e:
        if e.errno in ABSENT:
            return []
        raise AclError(f"its ACL cannot be read ({e.strerror})") from e
    return parse(data)


def needs_reading(mode: int) -> bool:
    """Whether an ACL could grant write beyond what ``mode`` shows: only when its group bits (the mask of an
    ACL with named entries) include write."""
    return bool(mode & stat.S_IWGRP)


def writers(entries: list[Entry], trusted_users: tuple[int, ...], trusted_groups: tuple[int, ...]) -> list[str]:
    """The named users and groups (not among the trusted ones) ``entries`` let write, the mask applied."""
    mask = next((e.perm for e in entries if e.tag == MASK), 0o7)
    return [
        f"{'uid' if e.tag == USER else 'gid'} {e.id}"
        for e in entries
        if e.perm & mask & WRITE
        and ((e.tag == USER and e.id not in trusted_users) or (e.tag == GROUP and e.id not in trusted_groups))
    ]


def default_writers(entries: list[Entry], trusted_users: tuple[int, ...], trusted_groups: tuple[int, ...]) -> list[str]:
    """Who a directory's default ACL ``entries`` let write what is made in it (the default ACL, not the umask,
    then sets its permissions): :func:`writers`, and every user when its other entry grants write."""
    everyone = ["every user"] if any(e.tag == OTHER and e.perm & WRITE for e in entries) else []
    return writers(entries, trusted_users, trusted_groups) + everyone


def refused(entries: list[Entry], need: int) -> list[str]:
    """The named users and groups ``entries`` deny part of ``need`` (``0o4`` read, ``0o5`` read and run), the
    mask applied: the ACL decides for them, whatever the "other" bits say."""
    mask = next((e.perm for e in entries if e.tag == MASK), 0o7)
    return [
        f"{'uid' if e.tag == USER else 'gid'} {e.id}"
        for e in entries
        if e.tag in (USER, GROUP) and e.perm & mask & need != need
    ]
