"""The names an archive or a patch would write, read at decision time: so that extracting one INTO the workspace is
judged by what it holds (``tar xf x.tar`` with a member ``secrets/key.txt`` overwrites a file the deny list hides,
though the command line names no hidden place).

Bounded and fail closed: only a regular file (a FIFO would block the reader for ever, a device never ends), at most
:data:`MAX_BYTES` on disk and :data:`MAX_MEMBERS` names. Anything the reader cannot vouch for is None, and the gate
then judges the extraction by what the deny list may reach under its target: a file it cannot open or parse, a
compression it does not know, a link member (where the members after it land depends on it: ``lnk -> secrets``
then ``lnk/key.txt``), a name git quoted with escapes. The modules that read archives (tarfile, zipfile and their
compressors) are imported only here, only when a command extracts one: never on a hook call that does not.
"""

from __future__ import annotations

import os
import stat

MAX_BYTES = 64 * 1024 * 1024
MAX_MEMBERS = 4000
#: The lines of a patch (git's, unified and context diffs', Index: lines) that name a file it writes.
_PATCH_HEADS = (
    "diff --git ",
    "--- ",
    "+++ ",
    "*** ",
    "Index: ",
    "rename from ",
    "rename to ",
    "copy from ",
    "copy to ",
)


def members(path: str, kind: str) -> list[str] | None:
    """The names ``path`` (an archive of ``kind``: tar, zip, patch or diff) would write, as it names them; None when
    they cannot be known within the bounds."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_BYTES:
            return None
        if kind == "tar":
            return _tar(path)
        if kind == "zip":
            return _zip(path)
        return _patch(path) if kind in ("patch", "diff") else None
    except Exception:  # a broken archive raises whatever its reader raises: unknown, the caller fails closed
        return None


def stripped(names: list[str], strip: int) -> list[str]:
    """What ``--strip-components strip`` leaves of each name, in both ways of counting: GNU tar counts every
    component, an empty one of ``x//y`` and a ``.`` included, where other tars may skip them. A name with no more
    components than that is not written."""
    out: list[str] = []
    for name in names:
        raw = name.lstrip("/").split("/")
        clean = [p for p in raw if p not in ("", ".")]
        out += ["/".join(parts[strip:]) for parts in (raw, clean) if len(parts) > strip]
    return list(dict.fromkeys(n for n in out if n.strip("/")))


def _tar(path: str) -> list[str] | None:
    import tarfile

    out: list[str] = []
    with tarfile.open(path, "r:*") as t:
        for m in t:
            if len(out) >= MAX_MEMBERS or not (m.isfile() or m.isdir()):
                return None
            out.append(m.name)
    return out


def _zip(path: str) -> list[str] | None:
    import zipfile

    with zipfile.ZipFile(path) as z:
        infos = z.infolist()
        if len(infos) > MAX_MEMBERS:
            return None
        out = []
        for i in infos:
            mode = i.external_attr >> 16
            if mode and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                return None  # a link (unzip makes one) or a device
            out.append(i.filename)
    return out


def _patch(path: str) -> list[str] | None:
    """Every suffix of every name a header line gives (``-p0``, ``-p2`` and git's ``a/``/``b/`` place it at any of
    them), ``/dev/null`` left out."""
    with open(path, "rb") as f:
        text = f.read(MAX_BYTES + 1).decode("utf-8", "surrogateescape")
    names: list[str] = []
    for line in text.split("\n"):
        head = next((h for h in _PATCH_HEADS if line.startswith(h)), None)
        if head is None:
            continue
        rest = line[len(head) :]
        if '"' in rest:
            return None  # a name git quoted (escapes, spaces): not read here
        words = rest.split(" ") if head == "diff --git " else [rest.split("\t", 1)[0]]
        names += [n for w in words for n in (w, w.rstrip()) if n and n != "/dev/null"]  # CRLF: either name
    out: list[str] = []
    for name in dict.fromkeys(names):
        parts = [p for p in name.split("/") if p]
        out += ["/".join(parts[i:]) for i in range(len(parts))]
    if len(out) > MAX_MEMBERS:
        return None
    return list(dict.fromkeys(out))
