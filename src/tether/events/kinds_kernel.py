"""Event kinds only tether's own runs (the kernel) write; a governed session of another program (a hook) never does.

(What an action changed and an operator's undo, ``action.rollback`` and ``run.undone``, are in ``kinds_files``: a
hook session's file tools write the first too.)

- ``model.requested``, ``model.truncated``  a model call's request (with its manifest) and a reply cut off at
  the output limit (the other model kinds, which the run state folds, are in ``kinds``);
- ``context.section``                      a section of the model's context (skills, memory, ...);
- ``completion.claimed``                   the model claimed the task complete (the verdict is in ``kinds_control``);
- ``skills.bound``, ``memory.recalled``, ``memory.remembered``  what a run knows beyond its task
  (``plan.carried`` is in ``kinds_knowledge``).

Kept out of ``tether.events``'s own imports (``payload.LATER``): the registry imports this module the first time
it is asked for a kind it does not hold, the code that writes these kinds imports it directly, and a hook deciding
one call in a fresh process does not build their models (docs/log.md).
"""

from tether.plain import Field

from .payload import Payload, new_list, register


class MessageRecord(Payload):
    """One message of a call's manifest: what went in, rebuilt and checked by ``tether show RUN --context TURN``."""

    role: str
    tokens: int = Field(ge=0, description="Its tokens, by the call's counter.")
    hash: str = Field(description="The first 16 hex digits of the sha256 of the message as sent (canonical JSON).")
    seqs: list[int] = Field(default_factory=new_list, description="The events it was built from.")


@register("model.requested")
class ModelRequested(Payload):
    turn: int
    model: str
    n_messages: int = 0
    max_tokens: int | None = Field(None, description="The output budget sent: what fits the window and the budgets.")
    prompt_tokens_est: int | None = Field(None, description="Input tokens counted before the call (see counter).")
    capped_by: str | None = Field(None, description="The budget (usd, tokens) that lowered max_tokens, if one did.")
    worst_case_usd: float | None = Field(None, description="The most this call can cost (None: no price known).")
    counter: str = Field("", description="What counted prompt_tokens_est: a tiktoken encoding or the estimate.")
    tools_tokens: int = Field(0, ge=0, description="The tool definitions' share of prompt_tokens_est.")
    manifest: list[MessageRecord] = Field(
        default_factory=new_list,
        description="The messages sent, in order, after the first manifest_kept (see kernel/manifest.py).",
    )
    manifest_kept: int = Field(
        0, ge=0, description="Leading records the previous call's full manifest holds unchanged (not repeated)."
    )


@register("model.truncated")
class ModelTruncated(Payload):
    """The reply was cut off at the output limit: its tool calls (their arguments may be cut off too) were not
    run, and the model is told to continue. Recorded after the ``model.responded`` of the same turn."""

    turn: int
    max_tokens: int | None = Field(None, description="The output limit the reply hit.")
    not_run: list[str] = Field(default_factory=new_list, description="Call ids of the reply that were not run.")


@register("context.section")
class ContextSection(Payload):
    label: str = Field(min_length=1, description="The heading the model sees above the text, e.g. 'Skills'.")
    source: str = Field(min_length=1, description="Who put it there: 'skills', 'memory', … (for the manifest).")
    text: str


@register("completion.claimed")
class CompletionClaimed(Payload):
    call_id: str = ""
    summary: str = ""


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
