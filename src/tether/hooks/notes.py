"""Claude Code's own notes: the plan it writes in plan mode and the memory it keeps for a project.

Claude Code writes both with its ordinary Write and Edit tools, outside the project: a plan in ``~/.claude/plans/``
(plan mode's one way to present a plan for approval), its auto memory (on by default since v2.1.59) in
``~/.claude/projects/<project>/memory/``, where ``<project>`` is the project's path with every character but
``[A-Za-z0-9]`` turned into ``-``. As writes outside the workspace, in a home dotfile folder, the gate denies them, and
plan mode and memory failed under tether. A file is one of these notes only if it is a markdown file directly in one
of those two folders, the memory folder this project's, and nothing on the way from ``~/.claude`` to it is a link or
anyone else's: a folder or file swapped for a link would carry the write somewhere else.

With ``CLAUDE_CONFIG_DIR`` set, "every ``~/.claude`` path lives under that directory instead" (Claude Code's
``.claude`` directory page): its plans, its memory and its transcripts. The daemon that answers many sessions sees
none of their environments, but every call names its session's transcript (``transcript_path``:
``<config>/projects/<project>/<session>.jsonl``), so the folder above ``projects/`` is taken as that session's
second root, when the transcript's project folder is this workspace's (:func:`roots`). The ``plansDirectory`` and
``autoMemoryDirectory`` settings are not read: notes kept there stay ordinary paths, judged as before.
"""

from __future__ import annotations

import os
import re
import stat

from tether.memo import cache

PLAN = "plan"
MEMORY = "memory"


@cache
def _name() -> re.Pattern[str]:
    """A note's file name: markdown, no folder, not hidden (compiled at the first ``.md`` path, not at import: every
    cold hook call imports this module)."""
    return re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*\.md")


def slug(path: str) -> str:
    """The folder name Claude Code gives a project under ``~/.claude/projects/``."""
    return re.sub(r"[^A-Za-z0-9]", "-", path)


def projects(workspace: str) -> set[str]:
    """The names Claude Code may give this workspace's folder under ``projects/``: its path's :func:`slug`, as given
    and resolved."""
    return {slug(workspace), slug(os.path.realpath(workspace))}


def roots(workspace: str, transcript: object, home: str | None = None) -> list[str]:
    """The folders Claude Code keeps this session's notes under: ``~/.claude``, and the one its transcript says
    (``<root>/projects/<project>/<name>.jsonl``, absolute and normal, ``<project>`` the workspace's folder name:
    :func:`slug`), when that is another, not ``/`` and neither inside the workspace nor holding it (a note there
    would be a workspace file, which the envelope's own rules judge)."""
    found = [os.path.join(home or os.path.expanduser("~"), ".claude")]
    if not isinstance(transcript, str) or not transcript.endswith(".jsonl") or not os.path.isabs(transcript):
        return found
    folder = os.path.dirname(transcript)  # <root>/projects/<project>
    under = os.path.dirname(folder)  # <root>/projects
    root = os.path.dirname(under)
    if os.path.normpath(transcript) != transcript or os.path.basename(under) != "projects" or root in found:
        return found
    if os.path.basename(folder) not in projects(workspace) or root == "/":
        return found
    ws = os.path.realpath(workspace)
    if any(os.path.commonpath([x, ws]) in (x, ws) for x in (root, os.path.realpath(root))):
        return found
    return [*found, root]


def kind(path: str, workspace: str, home: str | None = None, transcript: object = None) -> str | None:
    """:data:`PLAN` or :data:`MEMORY` when ``path`` (absolute, or under ``~``) is one of Claude Code's notes for the
    session of ``workspace`` (under ``~/.claude``, or the folder its ``transcript`` lies under: :func:`roots`);
    None for any other path."""
    if not path.endswith(".md"):
        return None  # most calls: nothing more to look at
    home = home or os.path.expanduser("~")
    path = os.path.expanduser(path)
    folder, name = os.path.split(path)
    if not _name().fullmatch(name) or not os.path.isabs(path) or os.path.normpath(path) != path:
        return None  # a ``..`` is resolved by the kernel through whatever link precedes it, not by its spelling
    mine = projects(workspace)
    for root in roots(workspace, transcript, home):
        rel = os.path.relpath(folder, root).split(os.sep)
        if rel == ["plans"]:
            found = PLAN
        elif len(rel) == 3 and rel[0] == "projects" and rel[1] in mine and rel[2] == "memory":
            found = MEMORY
        else:
            continue
        return found if _own_way(root, rel, name) else None
    return None


def _own_way(root: str, rel: list[str], name: str) -> bool:
    """Whether ``root`` (resolved: ``~/.claude`` may be a link the user made) is a folder of this user's, and each
    step below it, as far as it exists, a folder (the last, the file: a regular one, one name for it) of this user's
    and no link."""
    uid = os.geteuid()
    try:
        top = os.stat(root)
    except FileNotFoundError:
        return True  # nothing there yet: Claude Code makes the folders
    except OSError:
        return False
    if not stat.S_ISDIR(top.st_mode) or top.st_uid != uid:
        return False
    here = os.path.realpath(root)
    for i, part in enumerate([*rel, name]):
        here = os.path.join(here, part)
        try:
            st = os.lstat(here)
        except FileNotFoundError:
            return True
        except OSError:
            return False
        last = i == len(rel)
        fits = stat.S_ISREG(st.st_mode) and st.st_nlink == 1 if last else stat.S_ISDIR(st.st_mode)
        if not fits or st.st_uid != uid:
            return False
    return True
