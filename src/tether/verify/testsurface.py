"""The test surface: the files that decide what the tests check, and how they changed since the baseline.

The agent's code runs inside the test process (``conftest.py`` is imported by pytest), so a test run's
own report cannot be the only evidence. Any change to the test surface is therefore a finding of its own,
whichever tool made it (``edit_file``, ``write_file`` or a shell command): this module compares bytes
recorded at the baseline with the workspace's bytes now; it runs nothing and executes nothing.

The surface is: test files (``test_*.py``, ``*_test.py``), ``conftest.py``, every file under a ``tests``
or ``test`` directory (helpers and expected-output data), and pytest configuration — every file pytest reads
as its configuration whole (``pytest.ini``, ``.pytest.ini``, ``pytest.toml``, ``.pytest.toml``, ``tox.ini``:
pytest 9 takes the first it finds of these ahead of ``pyproject.toml``, so a new one replaces the project's
settings and may load a plugin with ``addopts = -p``), ``pyproject.toml``'s ``[tool.pytest*]`` tables and
``setup.cfg``'s ``[tool:pytest]`` section (other edits to those two files are not test changes). Configuration is parsed
as data (``tomllib``, ``configparser``), never executed; a file that no longer parses counts as changed.
"""

from __future__ import annotations

import configparser
import difflib
import hashlib
import os
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Literal

SKIP_DIRS = frozenset(
    {".git", ".hg", ".tether", ".venv", "venv", "env", "node_modules", "__pycache__", ".tox", ".nox", "build", "dist"}
)
TEST_DIRS = frozenset({"tests", "test"})
WHOLE_CONFIGS = frozenset({"pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml", "tox.ini", "conftest.py"})
SECTION_CONFIGS = frozenset({"pyproject.toml", "setup.cfg"})
MAX_FILE_BYTES = 4 * 1024 * 1024
MAX_DIFF_LINES = 80

ChangeKind = Literal["added", "modified", "deleted"]


def is_surface(path: str) -> bool:
    p = PurePosixPath(path)
    name = p.name
    if name in WHOLE_CONFIGS or name in SECTION_CONFIGS:
        return True
    if p.suffix == ".py" and (name.startswith("test_") or name.endswith("_test.py")):
        return True
    return any(part in TEST_DIRS for part in p.parts[:-1]) and p.suffix not in (".pyc", ".pyo")


def surface_files(workspace: Path) -> list[str]:
    """Workspace-relative paths of the test surface (hidden, cache and virtualenv directories skipped)."""
    out: list[str] = []
    for root, dirs, files in os.walk(workspace):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        rel_root = Path(root).relative_to(workspace)
        for f in files:
            rel = (rel_root / f).as_posix()
            if is_surface(rel) and (Path(root) / f).is_file() and not (Path(root) / f).is_symlink():
                out.append(rel)
    return sorted(out)


def read_bytes(workspace: Path, rel: str) -> bytes | None:
    """The file's bytes, or None when absent, not a regular file, or larger than ``MAX_FILE_BYTES``."""
    p = workspace / rel
    try:
        if p.is_symlink() or not p.is_file() or p.stat().st_size > MAX_FILE_BYTES:
            return None
        return p.read_bytes()
    except OSError:
        return None


def digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class SurfaceChange:
    path: str
    kind: ChangeKind
    before: bytes | None
    after: bytes | None

    def diff(self, limit: int = MAX_DIFF_LINES) -> str:
        """A unified diff made in Python, cut to ``limit`` lines."""
        a = _lines(self.before)
        b = _lines(self.after)
        lines = list(difflib.unified_diff(a, b, f"a/{self.path}", f"b/{self.path}", lineterm=""))
        if len(lines) > limit:
            lines = [*lines[:limit], f"… ({len(lines) - limit} more diff lines)"]
        return "\n".join(lines)


def _lines(data: bytes | None) -> list[str]:
    return data.decode("utf-8", errors="replace").splitlines() if data is not None else []


def changes(baseline: dict[str, str], workspace: Path, blob: Callable[[str], bytes | None]) -> list[SurfaceChange]:
    """Surface files added, modified or deleted since ``baseline`` (path -> hash); ``blob`` reads old bytes."""
    now = set(surface_files(workspace))
    out: list[SurfaceChange] = []
    for path in sorted(now | set(baseline)):
        after = read_bytes(workspace, path) if path in now else None
        old_hash = baseline.get(path)
        if old_hash is None:
            if after is None or _pytest_section(path, after) is None:
                continue  # a new pyproject.toml/setup.cfg without pytest settings is not a test change
            out.append(SurfaceChange(path, "added", None, after))
        elif path not in now:
            out.append(SurfaceChange(path, "deleted", blob(old_hash), None))
        elif after is None or digest(after) != old_hash:
            before = blob(old_hash)
            if _same_pytest_settings(path, before, after):
                continue  # only non-pytest parts of pyproject.toml / setup.cfg changed
            out.append(SurfaceChange(path, "modified", before, after))
    return out


_UNPARSEABLE = "<unparseable>"


def _same_pytest_settings(path: str, before: bytes | None, after: bytes | None) -> bool:
    if before is None or after is None or path.rsplit("/", 1)[-1] not in SECTION_CONFIGS:
        return False
    settings = _pytest_section(path, before)
    return bool(settings != _UNPARSEABLE and settings == _pytest_section(path, after))


def _pytest_section(path: str, data: bytes) -> Any:
    """The pytest settings a config file holds (None for none); ``_UNPARSEABLE`` when it does not parse."""
    name = path.rsplit("/", 1)[-1]
    if name not in SECTION_CONFIGS:
        return data
    try:
        text = data.decode("utf-8")
        if name == "pyproject.toml":
            return tomllib.loads(text).get("tool", {}).get("pytest")
        cp = configparser.ConfigParser(interpolation=None)
        cp.read_string(text)
        return dict(cp.items("tool:pytest")) if cp.has_section("tool:pytest") else None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, configparser.Error, AttributeError):
        return _UNPARSEABLE
