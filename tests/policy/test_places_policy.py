"""The path policy's resolution on strings (tether.places) gives what it gave on ``PurePosixPath``: the former
resolution written out here with pathlib, held to the policy's by hypothesis over hostile texts and directories
(``..``, ``//``, trailing ``/``, ``~`` forms, NUL, lone surrogates, unicode, very long parts, links)."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tether.envelope.schema import Filesystem
from tether.policy.paths import PathPolicy, _process_view

PARTS = st.sampled_from(
    ["", ".", "..", "a", "link", "sub", "~", "~root", "~-", ".ssh", "é", "\x00", "x" * 300, "\ud800", ".git", "hooks"]
)
TEXTS = st.one_of(st.text(max_size=40), st.lists(PARTS, max_size=6).map("/".join))


def old_resolve(policy: PathPolicy, text: str, cwd: PurePosixPath | None) -> PurePosixPath | None:
    """PathPolicy.resolve as it was, on PurePosixPath."""
    expanded = policy.expand_user(text)
    if not expanded or (cwd is None and not expanded.startswith("/")):
        return None
    joined = expanded if expanded.startswith("/") else f"{cwd}/{expanded}"
    if _process_view(os.path.normpath(joined)):
        return None
    try:
        return PurePosixPath(os.path.realpath(joined))
    except (OSError, ValueError):  # unreadable, too long, NUL
        return None


def old_relative(workspace: PurePosixPath, path: PurePosixPath) -> PurePosixPath | None:
    try:
        return path.relative_to(workspace)
    except ValueError:
        return None


@settings(max_examples=600, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=TEXTS, cwd=st.one_of(st.none(), TEXTS.map(lambda t: "/" + t)))
@example(text="link/../..", cwd="/")
@example(text="//a/", cwd=None)
@example(text="~/x", cwd=None)
def test_resolution_and_the_verdicts_on_places_are_as_before(tmp_path: Path, text: str, cwd: str | None) -> None:
    (tmp_path / "sub").mkdir(exist_ok=True)
    if not (tmp_path / "link").is_symlink():
        (tmp_path / "link").symlink_to("/etc")
    policy = PathPolicy(tmp_path, Filesystem(read=["**"], write=["sub/**"], deny=["*.key", "sub/secret/"]))
    workspace = PurePosixPath(os.path.realpath(tmp_path))
    assert policy.workspace == str(workspace)
    for start in (cwd, str(tmp_path), f"{tmp_path}/sub", f"{tmp_path}/link"):
        old_cwd = None if start is None else PurePosixPath(os.path.normpath(start))
        new_cwd = None if old_cwd is None else str(old_cwd)
        old = old_resolve(policy, text, old_cwd)
        new = policy.resolve(text, new_cwd)
        assert new == (None if old is None else str(old))
        if old is None or new is None:
            continue
        rel = old_relative(workspace, old)
        assert policy.relative(new) == (None if rel is None else str(rel))
        assert policy.write(new) == policy.write(str(old)), (text, start)
        assert policy.read(new, shell=False) == policy.read(str(old), shell=False)
        dotted = rel is not None and any(p.startswith(".") and p not in (".", "..") for p in rel.parts)
        assert (policy.dotfile(new) is not None) is dotted
        above = workspace == old or old in workspace.parents
        assert (policy.deny_reach(new) is not None) is (rel is not None or above)
