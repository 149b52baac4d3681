"""tether.verify.sensorconfig: which of the run's changed files changed what a lint or type sensor reports."""

from __future__ import annotations

import pytest

from tether.verify.sensorconfig import changed, suppressed

PYPROJECT = b'[project]\nname = "x"\nversion = "1"\n\n[tool.ruff]\nline-length = 100\n'


def judge(tool: str, before: dict[str, bytes], after: dict[str, bytes]) -> list[str]:
    return changed(tool, {*before, *after}, before.get, after.get)


def test_only_the_tools_own_table_of_pyproject_counts() -> None:
    bumped = PYPROJECT.replace(b'version = "1"', b'version = "2"')
    assert judge("ruff", {"pyproject.toml": PYPROJECT}, {"pyproject.toml": bumped}) == []
    excluded = PYPROJECT + b'exclude = ["src"]\n'
    assert judge("ruff", {"pyproject.toml": PYPROJECT}, {"pyproject.toml": excluded}) == ["pyproject.toml"]
    assert judge("mypy", {"pyproject.toml": PYPROJECT}, {"pyproject.toml": excluded}) == []
    mypy_off = PYPROJECT + b"\n[tool.mypy]\nignore_errors = true\n"
    assert judge("mypy", {"pyproject.toml": PYPROJECT}, {"pyproject.toml": mypy_off}) == ["pyproject.toml"]
    assert judge("ruff", {"pyproject.toml": PYPROJECT}, {"pyproject.toml": mypy_off}) == []


@pytest.mark.parametrize(
    ("tool", "path"),
    [
        ("ruff", "ruff.toml"),
        ("ruff", "src/pkg/ruff.toml"),  # ruff uses the nearest configuration to each file
        ("ruff", "src/pkg/.ruff.toml"),
        ("ruff", "src/pkg/pyproject.toml"),
        ("mypy", "mypy.ini"),
        ("mypy", ".mypy.ini"),
        ("pyright", "pyrightconfig.json"),
    ],
)
def test_a_new_configuration_file_is_a_change(tool: str, path: str) -> None:
    text = b'[tool.ruff]\nexclude = ["*"]\n' if path.endswith("pyproject.toml") else b"[x]\n"
    assert judge(tool, {}, {path: text}) == [path]


def test_a_deleted_or_unreadable_configuration_is_a_change() -> None:
    """``after`` gives None for a file that is gone, a symlink or unreadable (testsurface.read_bytes)."""
    assert judge("ruff", {"ruff.toml": b"line-length = 90\n"}, {}) == ["ruff.toml"]
    assert judge("ruff", {"pyproject.toml": PYPROJECT}, {}) == ["pyproject.toml"]


def test_setup_cfg_mypy_sections_count_and_others_do_not() -> None:
    base = b"[metadata]\nname = x\n\n[mypy]\nstrict = True\n"
    assert judge("mypy", {"setup.cfg": base}, {"setup.cfg": base.replace(b"name = x", b"name = y")}) == []
    per_module = base + b"\n[mypy-pkg.*]\nignore_errors = True\n"
    assert judge("mypy", {"setup.cfg": base}, {"setup.cfg": per_module}) == ["setup.cfg"]
    assert judge("ruff", {"setup.cfg": base}, {"setup.cfg": per_module}) == []  # ruff does not read setup.cfg


def test_a_configuration_that_does_not_parse_is_a_change() -> None:
    broken = b"[tool.ruff\n"
    assert judge("ruff", {"pyproject.toml": PYPROJECT}, {"pyproject.toml": broken}) == ["pyproject.toml"]
    assert judge("ruff", {"pyproject.toml": broken}, {"pyproject.toml": broken}) == ["pyproject.toml"]


def test_unrelated_files_are_not_configuration() -> None:
    assert judge("ruff", {"src/a.py": b"x = 1\n"}, {"src/a.py": b"x = 2\n", "README.md": b"ruff\n"}) == []


def test_a_file_wide_directive_added_to_a_source_file_counts_and_one_already_there_does_not() -> None:
    before = {
        "a.py": b"import os\n",
        "b.py": b"# ruff: noqa\nimport os\n",
        "c.py": b"import os  # noqa: F401\n",
        "d.py": b"x = 1\n",
    }
    after = {
        "a.py": b"  #  Ruff:noqa\nimport os\n",  # any spacing or case ruff accepts
        "b.py": b"# ruff: noqa\nimport os\nimport sys\n",  # the user's, there before
        "c.py": b"import os  # noqa: F401\nimport sys  # noqa: F401\n",  # per line: each shows in the source
        "d.py": b"# mypy: ignore-errors\nx: int = 'a'\n",
        "e.py": b"# flake8: noqa\n",  # a new file
        "f.txt": b"# ruff: noqa\n",
    }
    paths = list(after)
    assert suppressed("ruff", paths, before.get, after.get) == ["a.py", "e.py"]
    assert suppressed("mypy", paths, before.get, after.get) == ["d.py"]
    lone = {"g.py": b'"""Doc."""\n# type: ignore\n'}
    assert suppressed("mypy", ["g.py"], {}.get, lone.get) == ["g.py"]
    assert suppressed("pyright", ["g.py"], {}.get, lone.get) == ["g.py"]
    assert suppressed("pyright", ["h.py"], {}.get, {"h.py": b"# pyright: basic\n"}.get) == ["h.py"]
