"""`tether skills list` shows what would bind and why; `tether memory` errors name the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tether.cli.main import app

runner = CliRunner()


def test_skills_list_shows_scores_the_bound_ones_and_every_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    skills = tmp_path / ".claude" / "skills"
    for name, desc in (("pdf-forms", "Fill PDF forms."), ("release-notes", "Write release notes from merged PRs.")):
        (skills / name).mkdir(parents=True)
        (skills / name / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {desc}\n---\nbody\n")
    (skills / "bad").mkdir()
    (skills / "bad" / "SKILL.md").write_text("---\n[1, 2]\n---\n")
    monkeypatch.chdir(tmp_path)
    out = runner.invoke(app, ["skills", "list", "--task", "write the release notes", "--json"])
    assert out.exit_code == 0, out.output
    listed = json.loads(out.stdout)
    assert [(s["name"], s["bound"]) for s in listed["skills"]] == [("release-notes", True), ("pdf-forms", False)]
    assert listed["skills"][0]["matched"] == ["write", "release", "note"] and listed["skills"][1]["score"] == 0
    (problem,) = listed["problems"]
    assert problem["file"] == str(skills / "bad" / "SKILL.md") and "mapping" in problem["expected"]
    text = runner.invoke(app, ["skills", "list", "--task", "write the release notes"]).stdout
    assert "BM25" in text and "problem" in text and "bad/SKILL.md" in text


def test_memory_commands_name_the_database_they_looked_in(tmp_path: Path) -> None:
    db = tmp_path / ".tether" / "tether.db"
    db.parent.mkdir()
    db.write_bytes(b"")
    out = runner.invoke(app, ["memory", "list", "--db", str(db), "--json"])
    assert out.exit_code == 0 and json.loads(out.stdout)["facts"] == []
    out = runner.invoke(app, ["memory", "forget", "f-1", "--db", str(db)])
    assert str(tmp_path / ".tether" / "memory.db") in str(out.exception) and "no memory here yet" in str(out.exception)
