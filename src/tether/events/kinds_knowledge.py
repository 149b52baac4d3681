"""Event kinds of what a run knows beyond its task: a carried plan (bound skills and remembered facts, which no
fold of a governed session reads, are in ``kinds_kernel``).

- ``plan.carried``       at the start of ``tether run --continue-plan``: the task list (with states) of an
  earlier run of the project, which the plan fold starts from.
"""

from typing import Literal

from tether.plain import Field

from .payload import Payload, new_list, register


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
