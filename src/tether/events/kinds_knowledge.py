"""Event kinds of what a run knows beyond its task: bound skills, remembered facts, a carried plan.

- ``skills.bound``       at the start: the skills found, the few bound to the task (and why), and every
  malformed one (reported, never dropped in silence). A resumed run loads what this event bound, not
  what the skill directories hold today.
- ``memory.recalled``    at the start: the project's remembered facts offered to the model, each with the
  run and event it came from.
- ``memory.remembered``  facts this run's user stated (in the task or a human note), as stored in the
  project's memory, each citing the event it was taken from.
- ``plan.carried``       at the start of ``tether run --continue-plan``: the task list (with states) of an
  earlier run of the project, which the plan fold starts from.
"""

from typing import Literal

from pydantic import Field

from .payload import Payload, new_list, register


class SkillData(Payload):
    name: str
    description: str
    path: str = Field(description="the skill's folder")
    root: str = Field(description="the skills directory it was found in (a load may not leave it)")
    source: str = Field(description="envelope | user | workspace")
    digest: str = Field(description="sha256 of SKILL.md when bound; a load of changed content is refused")
    files: list[str] = Field(default_factory=new_list, description="files beside SKILL.md, relative to its folder")


class BoundSkill(Payload):
    skill: SkillData
    score: float
    why: str


class SkillScore(Payload):
    name: str
    score: float
    matched: list[str] = Field(default_factory=new_list, description="task words found in its name or description")


class SkillProblem(Payload):
    file: str
    path: str = Field(description="the field, as a JSON path into the front matter ($ for the file itself)")
    found: str
    expected: str


@register("skills.bound")
class SkillsBound(Payload):
    roots: list[str] = Field(description="the directories searched, in order (first name wins)")
    bound: list[BoundSkill] = Field(default_factory=new_list)
    ranked: list[SkillScore] = Field(default_factory=new_list, description="every skill found, best first")
    problems: list[SkillProblem] = Field(default_factory=new_list)


class FactData(Payload):
    id: str
    text: str
    run_id: str = Field(description="the run whose user stated it")
    seq: int = Field(ge=0, description="the event it was taken from")
    source: str = Field(description="task | note: the kind of user text it came from")
    stated_at: str


@register("memory.recalled")
class MemoryRecalled(Payload):
    facts: list[FactData] = Field(default_factory=new_list)
    store: str = Field(description="the memory database the facts were read from")


@register("memory.remembered")
class MemoryRemembered(Payload):
    facts: list[FactData] = Field(default_factory=new_list)
    store: str


class CarriedTask(Payload):
    """A task as the earlier run left it (the fields of ``plan.updated``'s tasks that the plan fold reads)."""

    id: str
    title: str = ""
    status: Literal["PENDING", "ACTIVE", "VERIFYING", "COMPLETE", "FAILED", "BLOCKED"] = "PENDING"
    depends_on: list[str] = Field(default_factory=new_list)
    files: list[str] = Field(default_factory=new_list)


@register("plan.carried")
class PlanCarried(Payload):
    from_run: str
    from_seq: int = Field(ge=0, description="the plan.updated event of that run the tasks are taken from")
    tasks: list[CarriedTask]
