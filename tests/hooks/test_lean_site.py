"""A call that may take the plain path puts site-packages on its path without ``site`` (hooks/leansite.py), but only
when that is all ``site`` would do. Each case runs an interpreter as the launcher does (``-I -S``, tether's
directory appended) in a venv made here, and compares the lean path with what ``site.main()`` gives: ``.pth``
files of directory lines (relative, missing, repeated, commented), setuptools' ``distutils`` line; and the cases
where ``site`` would do more, which must leave everything to ``site``: another line of code, a ``sitecustomize``,
a venv that includes the system's site-packages, no venv at all, a ``.pth`` file that is not text."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hookkit import payload

import tether
from tether.hooks.leansite import DISTUTILS_LINE

SRC = str(Path(tether.__file__).parent.parent)
PROBE = """
import json, sys
sys.path.append({src!r})
if {lean!r}:
    from tether.hooks.leansite import lean
    before = list(sys.path)
    took = lean()
    assert took or sys.path == before, "nothing changed when site is left to do it"
    if not took and {fallback!r}:
        import site; site.main()
else:
    import site; site.main()
    took = None
print(json.dumps({{"took": took, "path": sys.path, "prefix": sys.prefix, "exec_prefix": sys.exec_prefix}}))
"""
VERSION = f"python{sys.version_info[0]}.{sys.version_info[1]}"


def venv(root: Path, system: str = "false") -> tuple[Path, Path]:
    """A venv (its interpreter a link to this one's base) and its site-packages."""
    (root / "bin").mkdir(parents=True)
    base = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    (root / "bin" / "python").symlink_to(base)
    home = os.path.dirname(base)
    (root / "pyvenv.cfg").write_text(f"home = {home}\ninclude-system-site-packages = {system}\nversion = 3\n")
    site_packages = root / "lib" / VERSION / "site-packages"
    site_packages.mkdir(parents=True)
    return root / "bin" / "python", site_packages


def probe(python: Path | str, lean: bool, fallback: bool = True) -> dict[str, object]:
    code = PROBE.format(src=SRC, lean=lean, fallback=fallback)
    out = subprocess.run([str(python), "-I", "-S", "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return dict(json.loads(out.stdout.splitlines()[-1]))


def same(python: Path | str) -> bool:
    """Whether the lean start was taken, after checking it leaves what ``site`` leaves (path, prefixes)."""
    lean, full = probe(python, True), probe(python, False)
    assert {k: v for k, v in lean.items() if k != "took"} == {k: v for k, v in full.items() if k != "took"}
    return bool(lean["took"])


def test_directory_lines_and_the_distutils_line_are_taken_lean(tmp_path: Path) -> None:
    python, site_packages = venv(tmp_path / "v")
    for name in ("a", "b", "c"):
        (tmp_path / name).mkdir()
    (site_packages / "one.pth").write_text(f"# a comment\n\n../../../../a\n{tmp_path / 'b'}\n../../../../a\nmissing\n")
    (site_packages / "two.pth").write_text(f"{tmp_path / 'c'}   \n{site_packages}\n")
    (site_packages / "distutils-precedence.pth").write_text(DISTUTILS_LINE)
    (site_packages / "_distutils_hack").mkdir()
    (site_packages / "_distutils_hack" / "__init__.py").write_text("def add_shim(): pass\n")
    (site_packages / "not-a-pth.txt").write_text("import os; os._exit(9)\n")
    assert same(python)
    path = probe(python, True)["path"]
    assert isinstance(path, list)
    assert path[-4:] == [str(site_packages), str(tmp_path / "a"), str(tmp_path / "b"), str(tmp_path / "c")]


@pytest.mark.parametrize(
    "case", ["code-line", "sitecustomize", "system-site", "no-venv", "not-text", "distutils-line-changed"]
)
def test_whatever_site_would_do_more_is_left_to_site(tmp_path: Path, case: str) -> None:
    python, site_packages = venv(tmp_path / "v", system="true" if case == "system-site" else "false")
    marker = tmp_path / "ran"
    if case == "code-line":
        (site_packages / "x.pth").write_text(f"import pathlib; pathlib.Path({str(marker)!r}).touch()\n")
    elif case == "sitecustomize":
        (site_packages / "sitecustomize.py").write_text(f"import pathlib; pathlib.Path({str(marker)!r}).touch()\n")
    elif case == "not-text":
        (site_packages / "x.pth").write_bytes(b"\xff\xfe\x00bad\n")
    elif case == "distutils-line-changed":
        (site_packages / "d.pth").write_text(DISTUTILS_LINE + "import os\n")
    if case == "no-venv":
        python = Path(os.path.realpath(getattr(sys, "_base_executable", sys.executable)))
    assert probe(python, True, fallback=case != "not-text")["took"] is False  # site itself fails on that one
    if case in ("code-line", "sitecustomize"):
        assert marker.exists(), "site ran it"
    if case != "not-text":
        assert not same(python)


def test_a_plain_call_through_the_launcher_loads_no_site(tmp_path: Path) -> None:
    """This very venv (its .pth files are the editable install's and setuptools'): the launcher's cold plain call
    neither imports ``site`` nor runs ``_distutils_hack``, and decides as the full path (which loads ``site``)."""
    from tether.hooks.command import launcher_command

    command = launcher_command("claude-code", None).replace(" -I -S ", " -I -S -X importtime ", 1)
    env = {**os.environ, "TETHER_HOOK_DAEMON": "0", "CLAUDE_PROJECT_DIR": str(tmp_path)}
    env["TETHER_HOOK_SOCKET"] = str(tmp_path / "none" / "hookd.sock")

    def call(command_text: str, i: int, **extra: str) -> tuple[str, set[str]]:
        data = json.dumps(payload("claude-code.PreToolUse", tmp_path, tool_input={"command": f"ls {i}"}))
        out = subprocess.run(
            ["sh", "-c", command_text], input=data, capture_output=True, text=True, env={**env, **extra}, timeout=120
        )
        assert out.returncode == 0, out.stderr
        imported = {line.split("|")[-1].strip() for line in out.stderr.splitlines() if line.startswith("import time:")}
        return json.loads(out.stdout)["hookSpecificOutput"]["permissionDecision"], imported

    for i in range(2):  # the session's first call takes the full path, and leaves the kept envelope
        call(command, i)
    decision, imported = call(command, 2)
    assert decision == "allow" and "pydantic" not in imported, "the plain path"
    assert not imported & {"site", "_distutils_hack", "sitecustomize"}, sorted(imported & {"site", "_distutils_hack"})
    decision, imported = call(command, 3, TETHER_HOOK_PLAIN="0")
    assert decision == "allow" and {"site", "pydantic"} <= imported, "the full path loads site"
