"""``load_skill``: the model reads a bound skill's instructions, or one of the files beside them.

The model is shown only the bound skills' names and descriptions (a ``context.section``); this tool returns
a body when the model decides it needs one. It only reads (effects: read), and only what the run bound at
its start: an unbound name, a file not listed beside the skill, or a SKILL.md whose bytes changed since it
was bound is refused. A skill's scripts are not run here: the model runs them with ``bash`` like any
command, so they pass the same gate and sandbox (a script outside the workspace is not reachable there).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tether.skills import Skill, SkillError, load_body
from tether.skills.catalog import MAX_SKILL_BYTES

from ._paths import clip
from .context import ToolContext
from .contract import Tool, tool
from .result import ToolFailure, ToolResult

LOAD_SKILL = "load_skill"


def _runnable(skill: Skill, workspace: Path, name: str) -> str:
    """How the model refers to a file beside the skill from the workspace, or why it cannot."""
    path = skill.path / name
    try:
        return path.resolve().relative_to(workspace.resolve()).as_posix()
    except ValueError:
        return f"{name} (outside the workspace: read it with load_skill(file=...); it cannot run in the sandbox)"


def load_skill_tool(bound: Sequence[Skill]) -> Tool:
    """The ``load_skill`` tool of a run that bound ``bound``."""
    skills = {s.name: s for s in bound}

    @tool(
        name=LOAD_SKILL,
        effects=["read"],
        idempotent=True,
        timeout_s=5,
        evidence=["the skill's SKILL.md as bound at the run's start (skills.bound: its sha256)"],
        rollback="not needed (reads only)",
    )
    def load_skill(ctx: ToolContext, name: str, file: str | None = None) -> ToolResult:
        """Load a bound skill's instructions (its SKILL.md body and the files beside it), or read one of those files.

        Args:
            name: The skill's name, as listed under "Skills" in your instructions.
            file: A file listed beside the skill (relative to its folder); omit it for the instructions.
        """
        skill = skills.get(name)
        if skill is None:
            known = ", ".join(sorted(skills)) or "none"
            raise ToolFailure("not_found", f"no bound skill is named {name!r} (bound: {known})")
        if file is None:
            try:
                body = load_body(skill)
            except SkillError as e:
                raise ToolFailure("tool_error", f"skill {name!r} cannot be loaded: {e}") from e
            files = "\n".join(f"- {_runnable(skill, ctx.workspace, f)}" for f in skill.files) or "(none)"
            content = f"# Skill: {name}\n\n{body}\n\nFiles beside it (run scripts with bash by these paths):\n{files}"
            return ToolResult(ok=True, content=content, data={"skill": name, "digest": skill.digest})
        return _beside(skill, file, ctx.workspace)

    return load_skill


def _beside(skill: Skill, file: str, workspace: Path) -> ToolResult:
    """A file beside a skill outside the workspace (one inside is read with read_file, under the path rules)."""
    if file not in skill.files:
        raise ToolFailure("not_found", f"{file!r} is not a file listed beside skill {skill.name!r}")
    real, ws = (skill.path / file).resolve(), workspace.resolve()
    if skill.path.resolve().is_relative_to(ws):
        shown = real.relative_to(ws).as_posix() if real.is_relative_to(ws) else file
        raise ToolFailure("invalid_args", f"this skill is in the workspace: read {shown} with read_file")
    if not real.is_relative_to(skill.path.resolve()):  # replaced by a symlink since the run began
        raise ToolFailure("outside_workspace", f"{file!r} now leads out of skill {skill.name!r}'s folder")
    data = real.read_bytes()[:MAX_SKILL_BYTES]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ToolFailure("not_text", f"{file!r} of skill {skill.name!r} is not UTF-8 text") from e
    return ToolResult(ok=True, content=clip(text, 20_000), data={"skill": skill.name, "file": file})
