"""Grant one uid read/write access to a directory tree with POSIX ACLs, without changing ownership.

Used when tether runs as root and the bubblewrap sandbox drops the command to an unprivileged user:
that user must be able to write the workspace, but chown-ing the workspace would change who owns the
user's files (and make root's git refuse the repository as "dubious ownership"). An ACL entry
``user:<uid>:rwX`` on every file and directory, plus a *default* ACL on directories so that files
created later (by anyone) inherit it, gives exactly that access and nothing else.

The xattr wire format (``system.posix_acl_access`` / ``system.posix_acl_default``) is little-endian:
a u32 version (2), then entries of (u16 tag, u16 perm, u32 id) sorted by tag then id.
"""

from __future__ import annotations

import errno
import os
import stat
import struct
from pathlib import Path

ACCESS = "system.posix_acl_access"
DEFAULT = "system.posix_acl_default"
VERSION = 2
USER_OBJ, USER, GROUP_OBJ, GROUP, MASK, OTHER = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20
UNDEFINED_ID = 0xFFFFFFFF
HEADER = struct.Struct("<I")
ENTRY = struct.Struct("<HHI")

Entries = dict[tuple[int, int], int]
"""(tag, id) -> permission bits (r=4, w=2, x=1)."""


class AclUnsupported(OSError):
    """The filesystem does not support POSIX ACLs."""


def decode(blob: bytes) -> Entries:
    (version,) = HEADER.unpack_from(blob)
    if version != VERSION:
        raise ValueError(f"unknown POSIX ACL xattr version {version}")
    out: Entries = {}
    for offset in range(HEADER.size, len(blob), ENTRY.size):
        tag, perm, ident = ENTRY.unpack_from(blob, offset)
        out[(tag, ident)] = perm
    return out


def encode(entries: Entries) -> bytes:
    return HEADER.pack(VERSION) + b"".join(
        ENTRY.pack(tag, perm, ident) for (tag, ident), perm in sorted(entries.items())
    )


def from_mode(mode: int) -> Entries:
    return {
        (USER_OBJ, UNDEFINED_ID): (mode >> 6) & 7,
        (GROUP_OBJ, UNDEFINED_ID): (mode >> 3) & 7,
        (OTHER, UNDEFINED_ID): mode & 7,
    }


def with_user(entries: Entries, uid: int, perm: int) -> Entries:
    """``entries`` plus ``user:uid:perm``, with the mask recomputed as the union of the group class."""
    out = {k: v for k, v in entries.items() if k[0] != MASK}
    out[(USER, uid)] = out.get((USER, uid), 0) | perm
    mask = 0
    for (tag, _ident), p in out.items():
        if tag in (GROUP_OBJ, USER, GROUP):
            mask |= p
    out[(MASK, UNDEFINED_ID)] = mask
    return out


def read(path: str, name: str, mode: int) -> Entries:
    try:
        return decode(os.getxattr(path, name, follow_symlinks=False))
    except OSError as e:
        if e.errno == errno.ENODATA:
            return from_mode(mode) if name == ACCESS else {}
        raise


def grant_one(path: str, st: os.stat_result, uid: int) -> None:
    is_dir = stat.S_ISDIR(st.st_mode)
    perm = 7 if is_dir else (6 | (1 if st.st_mode & stat.S_IXUSR else 0))
    try:
        os.setxattr(path, ACCESS, encode(with_user(read(path, ACCESS, st.st_mode), uid, perm)), follow_symlinks=False)
        if is_dir:
            default = read(path, DEFAULT, st.st_mode) or {**from_mode(st.st_mode), (USER_OBJ, UNDEFINED_ID): 7}
            os.setxattr(path, DEFAULT, encode(with_user(default, uid, 7)), follow_symlinks=False)
    except OSError as e:
        if e.errno in (errno.ENOTSUP, errno.EOPNOTSUPP):
            raise AclUnsupported(e.errno, f"{path}: the filesystem does not support POSIX ACLs") from e
        raise


def needs_grant(path: str, st: os.stat_result, uid: int) -> bool:
    if (USER, uid) not in read(path, ACCESS, st.st_mode):
        return True
    return stat.S_ISDIR(st.st_mode) and (USER, uid) not in read(path, DEFAULT, st.st_mode)


def grant_tree(root: Path, uid: int) -> int:
    """Give ``uid`` rwX on ``root`` and everything below it (symlinks are not followed). Returns entries set."""
    count = 0
    stack = [str(root)]
    st = os.stat(root)
    if needs_grant(str(root), st, uid):
        grant_one(str(root), st, uid)
        count += 1
    while stack:
        current = stack.pop()
        with os.scandir(current) as it:
            for entry in it:
                if entry.is_symlink():
                    continue
                st = entry.stat(follow_symlinks=False)
                if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
                    continue
                if needs_grant(entry.path, st, uid):
                    grant_one(entry.path, st, uid)
                    count += 1
                if stat.S_ISDIR(st.st_mode):
                    stack.append(entry.path)
    return count
