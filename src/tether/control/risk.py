"""Risk rating (LOW / MEDIUM / HIGH) of an action or task from its effects, scope and the files it touches.

Rules, strictest wins (``max``):

- effects: ``read`` LOW; ``write``/``exec`` MEDIUM; ``network``, ``external``, ``irreversible``,
  ``financial``, ``credentialed``, ``published`` HIGH.
- files: a path outside the envelope's write set, or matching its deny list: HIGH; CI, packaging,
  lock or dependency manifests, the envelope/plan, ``.git``: HIGH; test files and configuration: MEDIUM.
- scope: more than ``WIDE_SCOPE`` files at once: HIGH.
"""

from __future__ import annotations

from tether import places, wildmatch
from tether.envelope.schema import Effect, Envelope
from tether.memo import cache

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from typing import Any

    import pathspec

LEVELS = ("LOW", "MEDIUM", "HIGH")
WIDE_SCOPE = 10
HIGH_EFFECTS = frozenset(
    {Effect.NETWORK, Effect.EXTERNAL, Effect.IRREVERSIBLE, Effect.FINANCIAL, Effect.CREDENTIALED, Effect.PUBLISHED}
)
SENSITIVE = (
    ".github/**",
    ".gitlab-ci.yml",
    ".git/**",
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "requirements*.txt",
    "*.lock",
    "package.json",
    "Dockerfile",
    "Makefile",
    "*envelope*.yaml",
    "*envelope*.yml",
    "plan.yaml",
    ".env",
    ".env.*",
)
CONFIG = ("*.toml", "*.ini", "*.cfg", "*.yaml", "*.yml", "*.json", "conftest.py")


def worst(levels: Iterable[str]) -> str:
    return max(levels, key=LEVELS.index, default="LOW")


def is_test_path(path: str) -> bool:
    place = places.place(path)
    name = places.name(place)
    return (
        name.startswith("test_")
        or name.endswith("_test.py")
        or name == "conftest.py"
        or any(part in ("tests", "test") for part in places.parts(place)[:-1])
    )


def _spec(globs: Sequence[str]) -> pathspec.PathSpec[Any] | wildmatch.Matcher:
    """The gitignore-style matcher of ``globs``: :mod:`tether.wildmatch`'s when every glob is simple (as the fixed
    ones below are: pathspec's answers without importing it), else pathspec's, imported here, at a rating's first
    path: importing it and building the two matchers below cost ~45 M instructions, which a hook call spent on
    every call that names a file."""
    simple = wildmatch.matcher(globs, git=False)
    if simple is not None:
        return simple
    import pathspec

    return pathspec.PathSpec.from_lines("gitignore", globs)


@cache
def _fixed(which: str) -> pathspec.PathSpec[Any] | wildmatch.Matcher:
    """The matcher of :data:`SENSITIVE` or :data:`CONFIG`, built once."""
    return _spec(SENSITIVE if which == "sensitive" else CONFIG)


def rate_path(path: str, envelope: Envelope | None) -> tuple[str, str]:
    """(risk, why) for touching one path."""
    fs = envelope.environment.filesystem if envelope else None
    if fs is not None:
        if _spec(fs.deny).match_file(path):
            return "HIGH", f"{path} is on the envelope's deny list"
        if not _spec(fs.write).match_file(path):
            return "HIGH", f"{path} is outside the write set"
    if _fixed("sensitive").match_file(path):
        return "HIGH", f"{path} is build, CI, dependency or contract configuration"
    if is_test_path(path):
        return "MEDIUM", f"{path} is a test file"
    if _fixed("config").match_file(path):
        return "MEDIUM", f"{path} is configuration"
    return "LOW", f"{path} is ordinary source"


def rate_paths(paths: Sequence[str], envelope: Envelope | None) -> str:
    if len(paths) > WIDE_SCOPE:
        return "HIGH"
    return worst(rate_path(p, envelope)[0] for p in paths)


def action_paths(args: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    for k in ("path", "file", "target", "dest", "destination"):
        v = args.get(k)
        if isinstance(v, str) and v:
            out.append(v.removeprefix("./"))
    for k in ("paths", "files"):
        v = args.get(k)
        if isinstance(v, list):
            out += [str(x).removeprefix("./") for x in v if isinstance(x, str)]
    return out


def rate_action(effects: Sequence[Effect], args: Mapping[str, Any], envelope: Envelope | None) -> tuple[str, list[str]]:
    """(risk, reasons) for one proposed action."""
    reasons: list[str] = []
    levels = []
    for eff in effects:
        lvl = "HIGH" if eff in HIGH_EFFECTS else "MEDIUM" if eff in (Effect.WRITE, Effect.EXEC) else "LOW"
        levels.append(lvl)
        if lvl != "LOW":
            reasons.append(f"effect {eff.value}: {lvl}")
    touches_world = any([e != Effect.READ for e in effects])  # a list: no generator left open to close
    paths = action_paths(args) if touches_world else []
    for p in paths:
        lvl, why = rate_path(p, envelope)
        levels.append(lvl)
        if lvl != "LOW":
            reasons.append(f"{why}: {lvl}")
    if len(paths) > WIDE_SCOPE:
        levels.append("HIGH")
        reasons.append(f"touches {len(paths)} files at once: HIGH")
    return worst(levels), reasons
