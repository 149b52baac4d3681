"""Claude Code's notes where ``CLAUDE_CONFIG_DIR`` puts them: the folder above its transcript's ``projects/``.

With ``CLAUDE_CONFIG_DIR`` set, every ``~/.claude`` path lives under that directory instead (Claude Code's ``.claude``
directory page): plans, memory and transcripts. The daemon sees no session's environment, but each call names its
transcript (``<config>/projects/<project>/<session>.jsonl``). Before, a plan or a memory note there was a write
outside the workspace, DENY: plan mode could not present a plan for such a user. Only a transcript of this project,
absolutely and normally spelled, names a root; every check of ``~/.claude`` holds for it too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hookkit import Hook

from tether.hooks import notes


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture
def project(tmp_path: Path) -> Path:
    project = tmp_path / "app"
    project.mkdir()
    return project


@pytest.fixture
def config(tmp_path: Path) -> Path:
    config = tmp_path / "work-account"  # CLAUDE_CONFIG_DIR=~/work-account, say
    (config / "plans").mkdir(parents=True)
    return config


def transcript(config: Path, project: Path, name: str = "3f1c.jsonl") -> str:
    return str(config / "projects" / notes.slug(str(project)) / name)


def decide(project: Path, tool_input: dict[str, Any], transcript_path: Any, tool: str = "Write") -> tuple[str, str]:
    """The verdict and deciding rule of one call of a session whose payloads carry ``transcript_path``."""
    fields: dict[str, Any] = {"tool_name": tool, "tool_input": tool_input, "tool_use_id": "n1"}
    reply = Hook(project)("PreToolUse", transcript_path=transcript_path, **fields)
    out = json.loads(reply.stdout)["hookSpecificOutput"]
    return out["permissionDecision"], out["permissionDecisionReason"].split("(")[1].split(")")[0]


def test_a_plan_and_memory_under_the_config_dir_are_notes(home: Path, project: Path, config: Path) -> None:
    said = transcript(config, project)
    memory = config / "projects" / notes.slug(str(project)) / "memory"
    memory.mkdir(parents=True)
    for i, path in enumerate((config / "plans" / "brave-fox.md", memory / "MEMORY.md")):
        hook = Hook(project)
        ti = {"file_path": str(path), "content": "# Plan\n"}
        out = hook("PreToolUse", tool_name="Write", tool_input=ti, tool_use_id=f"p{i}", transcript_path=said)
        spec = json.loads(out.stdout)["hookSpecificOutput"]
        assert spec["permissionDecision"] == "allow" and "hooks:agent-notes" in spec["permissionDecisionReason"]
        done = hook("PostToolUse", tool_name="Write", tool_input=ti, tool_use_id=f"p{i}", transcript_path=said)
        assert done.exit == 0
    db = project / ".tether" / "tether.db"
    from tether.events.store import EventStore

    with EventStore.open(db, readonly=True) as store:
        (run,) = store.runs()
        kinds = [e.kind for e in store.events(run.run_id)]
    assert "hook.input_changed" not in kinds, "the receipt is the call judged, placed the same way"
    assert decide(project, {"file_path": str(home / ".claude" / "plans" / "x.md"), "content": "x"}, said)[1] == (
        "hooks:agent-notes"
    ), "~/.claude stays a root"


@pytest.mark.parametrize(
    "said",
    [
        "{config}/projects/-elsewhere/3f1c.jsonl",  # another project's transcript
        "{config}/projects/{slug}/../{slug}/3f1c.jsonl",
        "{config}/projects/{slug}/3f1c.txt",
        "{config}/other/{slug}/3f1c.jsonl",
        "work-account/projects/{slug}/3f1c.jsonl",  # relative
        "/projects/{slug}/3f1c.jsonl",  # the root itself
        None,
        7,
    ],
)
def test_a_transcript_that_names_no_root_of_this_project_adds_none(project: Path, config: Path, said: Any) -> None:
    if isinstance(said, str):
        said = said.format(config=config, slug=notes.slug(str(project)))
    verdict, rule = decide(project, {"file_path": str(config / "plans" / "x.md"), "content": "x"}, said)
    assert verdict == "deny" and rule != "hooks:agent-notes", (said, rule)


def test_a_config_dir_in_the_workspace_is_no_root(project: Path) -> None:
    """A note there is a workspace file: the envelope's own rules judge it, as any other."""
    inside = project / "cfg"
    (inside / "plans").mkdir(parents=True)
    verdict, rule = decide(
        project, {"file_path": str(inside / "plans" / "x.md"), "content": "x"}, transcript(inside, project)
    )
    assert verdict == "allow" and rule != "hooks:agent-notes", rule
    holding = project.parent  # a config dir that holds the workspace
    assert notes.roots(str(project), transcript(holding, project)) == [notes.roots(str(project), None)[0]]


def test_the_config_dirs_links_are_judged_as_home_ones(home: Path, project: Path, config: Path, tmp_path: Path) -> None:
    target = tmp_path / "profile"
    target.write_text("x\n")
    (config / "plans" / "evil.md").symlink_to(target)
    verdict, rule = decide(
        project, {"file_path": str(config / "plans" / "evil.md"), "content": "x"}, transcript(config, project)
    )
    assert verdict == "deny" and rule != "hooks:agent-notes", rule
