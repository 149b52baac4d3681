"""The code stamp (guard/cachefile.py ``code_stamp_now``) names the same code as the walk it replaced: the same
digest on trees with a directory named like a module, links to files and to directories, a ``__pycache__``
holding ``.py`` files, other files, and an edit that keeps a module's size. Attacks on what it detects: a module
written in place (no folder changes), edited and touched back to its old mtime, replaced by a rename, renamed."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from tether.guard.cachefile import code_stamp_now


def walked(root: Path) -> str:
    """The walk as it was before (row by row into the hash, ``is_dir`` asked first): the oracle."""
    here = Path(__file__)
    top = str(root)
    rows: list[str] = []
    stack = [""]
    while stack:
        rel = stack.pop()
        with os.scandir(os.path.join(top, rel) if rel else top) as entries:
            for entry in entries:
                name = f"{rel}/{entry.name}" if rel else entry.name
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__":
                        stack.append(name)
                elif entry.name.endswith(".py"):
                    st = entry.stat()
                    rows.append(f"{name}\0{st.st_size}\0{st.st_mtime_ns}\n")
    rows.sort()
    h = hashlib.sha256()
    for row in rows:
        h.update(row.encode())
    return h.hexdigest() if rows and here.suffix == ".py" else ""


def test_the_stamp_is_the_old_walks_on_a_hostile_tree(tmp_path: Path) -> None:
    (tmp_path / "pkg.py").mkdir()  # a directory named like a module: walked into, not stat'ed as one
    (tmp_path / "pkg.py" / "inner.py").write_text("a = 1\n")
    (tmp_path / "pkg.py" / "__pycache__").mkdir()
    (tmp_path / "pkg.py" / "__pycache__" / "stale.py").write_text("skipped")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "far.py").write_text("b = 2\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "linked_dir").symlink_to(tmp_path / "elsewhere")  # a link to a directory: not walked
    (tmp_path / "sub" / "linked.py").symlink_to(tmp_path / "elsewhere" / "far.py")  # a link to a module: its target
    (tmp_path / "sub" / "notes.txt").write_text("no")
    (tmp_path / "top.py").write_text("c = 3\n")
    assert code_stamp_now(tmp_path) == walked(tmp_path) != ""
    before = code_stamp_now(tmp_path)
    (tmp_path / "pkg.py" / "inner.py").write_text("a = 2\n")  # the same size
    os.utime(tmp_path / "pkg.py" / "inner.py", ns=(1, 1))
    assert code_stamp_now(tmp_path) == walked(tmp_path) != before


def test_the_stamp_of_tethers_own_tree_is_the_old_walks() -> None:
    import tether

    assert code_stamp_now() == walked(Path(tether.__file__).resolve().parent)
    assert code_stamp_now(Path(tether.__file__).parent) == walked(Path(tether.__file__).parent)


def test_a_tree_without_modules_has_no_stamp(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.pyc").write_text("")
    assert code_stamp_now(tmp_path) == walked(tmp_path) == ""


def tree(root: Path) -> Path:
    """Three modules, all with one old mtime (what a tree checked out long ago has)."""
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("A = 1\n")
    (root / "pkg" / "b.py").write_text("B = 2\n")
    (root / "top.py").write_text("T = 3\n")
    for p in root.rglob("*.py"):
        os.utime(p, ns=(1_000_000_000, 1_000_000_000))
    return root


def test_a_module_written_in_place_changes_the_stamp_though_no_folder_changes(tmp_path: Path) -> None:
    """Why the stamp stats every module: an edit written in place (the same size) changes no directory's mtime,
    so no one ``stat`` of a folder (or of an installer's RECORD) would see it."""
    root = tree(tmp_path)
    before, folder = code_stamp_now(root), os.stat(root / "pkg").st_mtime_ns
    with open(root / "pkg" / "a.py", "r+") as f:
        f.write("A = 9\n")
    assert os.stat(root / "pkg").st_mtime_ns == folder
    assert code_stamp_now(root) != before


def test_a_module_edited_and_touched_back_to_its_mtime_changes_the_stamp(tmp_path: Path) -> None:
    root = tree(tmp_path)
    before = code_stamp_now(root)
    (root / "pkg" / "a.py").write_text("A = 1  # and more\n")
    os.utime(root / "pkg" / "a.py", ns=(1_000_000_000, 1_000_000_000))
    assert code_stamp_now(root) != before


def test_a_module_replaced_by_a_rename_or_renamed_changes_the_stamp(tmp_path: Path) -> None:
    root = tree(tmp_path)
    before = code_stamp_now(root)
    new = root / "pkg" / ".a.py.tmp"
    new.write_text("A = 7\n")  # the same size, its own mtime
    os.replace(new, root / "pkg" / "a.py")
    assert code_stamp_now(root) != before
    again = code_stamp_now(root)
    os.replace(root / "pkg" / "b.py", root / "pkg" / "c.py")  # a module renamed: its path is stamped
    assert code_stamp_now(root) != again
