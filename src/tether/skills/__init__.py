"""Skills: packaged know-how (a folder with a ``SKILL.md``) found, parsed, and bound to a task by relevance."""

from .binding import Binding, Bound, bind, rank
from .catalog import Catalog, Skill, SkillError, SkillRoot, default_roots, discover, load_body, user_skills_dir

__all__ = [
    "Binding",
    "Bound",
    "Catalog",
    "Skill",
    "SkillError",
    "SkillRoot",
    "bind",
    "default_roots",
    "discover",
    "load_body",
    "rank",
    "user_skills_dir",
]
