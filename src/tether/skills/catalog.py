"""Finding and parsing skills: folders holding a ``SKILL.md`` (YAML front matter, then a Markdown body).

The format is the one coding agents share (Claude Code, Codex and others)::

    .claude/skills/release-notes/
      SKILL.md          ---\\nname: release-notes\\ndescription: Write release notes from ...\\n---\\n<body>
      scripts/build.sh  (optional files beside it, referred to from the body)

Everything read here is untrusted text: a skill folder may sit in the workspace the agent writes to.
So every read is bounded, symlinks may not lead out of the skills directory they were found in, a
name is a plain slug (never a path), and a malformed skill becomes a :class:`~tether.errors.Problem`
naming the file and the field — reported, never silently dropped, never an exception that stops a run.
Nothing here runs code: a skill's scripts run only when the model asks for them, through the gate.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tether.canonical import bytes_hash
from tether.errors import Problem

SKILL_FILE = "SKILL.md"
MAX_SKILL_BYTES = 256 * 1024
MAX_DESCRIPTION = 1024
MAX_FILES = 200
MAX_DEPTH = 4
NAME = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$")
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when installed: 5-10x faster, same safety
_FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)


@dataclass(frozen=True)
class SkillRoot:
    """A directory holding skill folders, and where it came from (``envelope``, ``user`` or ``workspace``)."""

    path: Path
    source: str


@dataclass(frozen=True)
class Skill:
    """A parsed skill: what the model is shown before loading it (name, description) and how to find the rest."""

    name: str
    description: str
    path: Path
    root: Path
    source: str
    digest: str
    """sha256 of SKILL.md's bytes when it was parsed; a load checks it."""
    files: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "path": str(self.path),
            "root": str(self.root),
            "source": self.source,
            "digest": self.digest,
            "files": list(self.files),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Skill:
        """The skill as ``to_dict`` recorded it (a resumed run loads what it bound, not what is on disk today)."""
        return cls(
            d["name"], d["description"], Path(d["path"]), Path(d["root"]), d["source"], d["digest"], tuple(d["files"])
        )


@dataclass(frozen=True)
class Catalog:
    """Every skill found, and every problem met on the way (in the order the roots were searched)."""

    skills: tuple[Skill, ...] = ()
    problems: tuple[Problem, ...] = ()

    def named(self, name: str) -> Skill | None:
        return next((s for s in self.skills if s.name == name), None)


class SkillError(Exception):
    """A skill file that cannot be used; carries the :class:`Problem` saying where and what was expected."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(str(problem))
        self.problem = problem


def user_skills_dir(environ: dict[str, str] | os._Environ[str] | None = None) -> Path:
    """The user's own skills: ``$XDG_CONFIG_HOME/tether/skills`` (default ``~/.config/tether/skills``)."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or Path.home()) / ".config")
    return Path(base) / "tether" / "skills"


def default_roots(
    workspace: Path, extra: Iterable[Path] = (), *, user: bool = True, own: bool = True
) -> list[SkillRoot]:
    """Where skills are looked for, first match of a name wins: the envelope's directories, the user's, the workspace's.

    The workspace comes last because the agent can write there: a skill it planted cannot shadow one
    the envelope or the user provides. ``own=False`` leaves the workspace's out (an untrusted workspace).
    """
    roots = [SkillRoot(p, "envelope") for p in extra]
    if user:
        roots.append(SkillRoot(user_skills_dir(), "user"))
    if own:
        roots += [SkillRoot(workspace / sub / "skills", "workspace") for sub in (".tether", ".claude")]
    return roots


def discover(roots: Sequence[SkillRoot]) -> Catalog:
    """Parse every ``<root>/<folder>/SKILL.md``; a later skill with a taken name is a problem, not a replacement."""
    skills: list[Skill] = []
    problems: list[Problem] = []
    seen: dict[str, Skill] = {}
    for root in roots:
        for folder in _folders(root, problems):
            try:
                skill = parse_skill(folder, root)
            except SkillError as e:
                problems.append(e.problem)
                continue
            first = seen.get(skill.name)
            if first is not None:
                problems.append(
                    Problem("$.name", repr(skill.name), f"a name not already taken (by {first.path})", _file(folder))
                )
                continue
            seen[skill.name] = skill
            skills.append(skill)
    return Catalog(tuple(skills), tuple(problems))


def _folders(root: SkillRoot, problems: list[Problem]) -> list[Path]:
    try:
        entries = sorted(root.path.iterdir())
    except FileNotFoundError:
        return []
    except OSError as e:
        problems.append(Problem("$", f"unreadable ({e.strerror})", "a readable skills directory", str(root.path)))
        return []
    return [p for p in entries if (p / SKILL_FILE).exists() or (p / SKILL_FILE).is_symlink()]


def _file(folder: Path) -> str:
    return str(folder / SKILL_FILE)


def parse_skill(folder: Path, root: SkillRoot) -> Skill:
    """Parse one skill folder; raises :class:`SkillError` naming the file and field that is wrong."""
    data, _, digest = read_skill(folder, root.path)
    name, description = data.get("name"), data.get("description")
    file = _file(folder)
    if not isinstance(name, str) or not NAME.match(name):
        expected = "a name of 1-64 lowercase letters, digits and inner hyphens (no path separators)"
        raise SkillError(Problem("$.name", _shown(name), expected, file))
    if not isinstance(description, str) or not description.strip():
        raise SkillError(Problem("$.description", _shown(description), "a non-empty string", file))
    if len(description) > MAX_DESCRIPTION:
        found = f"{len(description)} characters"
        raise SkillError(Problem("$.description", found, f"at most {MAX_DESCRIPTION} characters", file))
    return Skill(name, " ".join(description.split()), folder, root.path, root.source, digest, beside(folder))


def read_skill(folder: Path, root: Path) -> tuple[dict[str, Any], str, str]:
    """The front matter (a mapping), the body and the sha256 of ``folder/SKILL.md``, read within ``root``."""
    file = folder / SKILL_FILE
    where = str(file)
    _inside(folder, root, where)
    _inside(file, folder, where)
    try:
        with open(file, "rb") as fh:
            raw = fh.read(MAX_SKILL_BYTES + 1)
    except OSError as e:
        raise SkillError(Problem("$", f"unreadable ({e.strerror})", "a readable file", where)) from e
    if len(raw) > MAX_SKILL_BYTES:
        raise SkillError(Problem("$", "a larger file", f"at most {MAX_SKILL_BYTES} bytes", where))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SkillError(Problem("$", f"bytes that are not UTF-8 (at {e.start})", "UTF-8 text", where)) from e
    front = _FRONT.match(text.lstrip("\ufeff"))
    if front is None:
        raise SkillError(Problem("$", "no front matter", "a file starting with '---', YAML, then '---'", where))
    try:
        data = yaml.load(front.group(1), Loader=_LOADER)
    except yaml.YAMLError as e:
        found = f"YAML that does not parse ({_first_line(e)})"
        raise SkillError(Problem("$", found, "YAML front matter", where)) from e
    if not isinstance(data, dict):
        raise SkillError(Problem("$", f"a {type(data).__name__}", "front matter that is a mapping", where))
    return data, text.lstrip("\ufeff")[front.end() :], bytes_hash(raw)


def _inside(path: Path, root: Path, where: str) -> None:
    """Refuse a path that resolves (through symlinks) outside ``root``, or does not resolve to anything."""
    real, base = os.path.realpath(path), os.path.realpath(root)
    if not os.path.exists(real):
        raise SkillError(Problem("$", f"a path that does not resolve ({real})", "an existing file", where))
    if not _within(real, base):
        raise SkillError(Problem("$", f"a symlink to {real}", f"a path inside {base}", where))


def _within(real: str, base: str) -> bool:
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)


def beside(folder: Path) -> tuple[str, ...]:
    """The files next to SKILL.md (relative, sorted, bounded), never following a symlink out of the folder."""
    found: list[str] = []
    base = os.path.realpath(folder)
    for dirpath, dirnames, filenames in os.walk(folder):
        rel = os.path.relpath(dirpath, folder)
        depth = 0 if rel == "." else rel.count(os.sep) + 1
        dirnames[:] = sorted(d for d in dirnames if depth < MAX_DEPTH and not d.startswith("."))
        for name in sorted(filenames):
            if name == SKILL_FILE and depth == 0:
                continue
            path = os.path.join(dirpath, name)
            real = os.path.realpath(path)
            if _within(real, base) and real != base and os.path.isfile(real):
                found.append(Path(os.path.relpath(path, folder)).as_posix())
            if len(found) >= MAX_FILES:
                return tuple(found)
    return tuple(found)


def load_body(skill: Skill) -> str:
    """The skill's body as it was when parsed; a SKILL.md changed since (digest differs) is refused."""
    _, body, digest = read_skill(skill.path, skill.root)
    if digest != skill.digest:
        expected = f"the content bound at the run's start ({skill.digest[:19]})"
        raise SkillError(Problem("$", f"content {digest[:19]}", expected, _file(skill.path)))
    return body.strip()


def _shown(value: object) -> str:
    """A found value, bounded: a string's start, else its type (a YAML alias bomb's repr would never end)."""
    if value is None:
        return "missing"
    return repr(value[:80]) if isinstance(value, str) else f"a {type(value).__name__}"


def _first_line(error: Exception) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
