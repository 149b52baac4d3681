from __future__ import annotations

import os
from pathlib import Path

import pytest

from tether.sandbox import acl


def test_roundtrip_and_mask_is_union_of_group_class() -> None:
    base = acl.from_mode(0o640)
    granted = acl.with_user(base, 4242, 6)
    assert acl.decode(acl.encode(granted)) == granted
    assert granted[(acl.USER, 4242)] == 6
    assert granted[(acl.MASK, acl.UNDEFINED_ID)] == 6  # r (group) | rw (user 4242)
    assert granted[(acl.USER_OBJ, acl.UNDEFINED_ID)] == 6 and granted[(acl.OTHER, acl.UNDEFINED_ID)] == 0


@pytest.mark.root
def test_grant_tree_gives_uid_write_without_changing_owner(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    f = tmp_path / "d" / "f.txt"
    f.write_text("x")
    f.chmod(0o644)
    before = f.stat()
    assert acl.grant_tree(tmp_path, 65534) >= 3
    after = f.stat()
    assert (after.st_uid, after.st_gid) == (before.st_uid, before.st_gid)
    assert (acl.USER, 65534) in acl.decode(os.getxattr(f, acl.ACCESS))
    # A file created later inherits the grant through the directory's default ACL.
    new = tmp_path / "d" / "later.txt"
    new.write_text("y")
    assert (acl.USER, 65534) in acl.decode(os.getxattr(new, acl.ACCESS))
    assert acl.grant_tree(tmp_path, 65534) == 0  # idempotent
