"""What a run starts knowing besides its task: bound skills, the project's memory, a carried-over plan.

Each is worked out once, when the run begins, and logged — ``skills.bound``, ``memory.recalled``,
``plan.carried`` — with the words the model is shown as a ``context.section`` beside it. A resumed, forked
or replayed run reads them back from its log instead of looking again, so the model sees the same words.
Facts the user states are remembered when the run begins (its task), when a human declines an action (the
reason) and each time it is continued (notes); see docs/knowledge.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from tether.envelope.schema import Envelope, Skills, Trust
from tether.errors import InputError
from tether.events.kinds_kernel import (
    BoundSkill,
    ContextSection,
    FactData,
    MemoryRecalled,
    MemoryRemembered,
    SkillData,
    SkillProblem,
    SkillsBound,
    SkillScore,
)
from tether.events.kinds_knowledge import (
    CarriedTask,
    PlanCarried,
)
from tether.events.payload import Payload
from tether.events.protocol import Store
from tether.events.store import Event
from tether.memory import Fact, MemoryStore, memory_path, stated
from tether.skills import Skill, SkillRoot, bind, default_roots, discover
from tether.tools.skill import LOAD_SKILL

SHOWN_SCORES = 50  # skills.bound lists at most this many ranked skills and problems (the CLI shows all)
PLAN_KINDS = ("plan.updated", "plan.carried")


def skill_roots(env: Envelope, base_dir: Path, workspace: Path) -> list[SkillRoot]:
    """The envelope's skill directories, the user's, and the workspace's unless the envelope distrusts it:
    a skill's description joins the system message, so an untrusted workspace's skills are not searched."""
    cfg = env.skills or Skills()
    own = env.environment.trust.workspace is Trust.TRUSTED
    return default_roots(workspace, [base_dir / d for d in cfg.dirs], user=cfg.user, own=own)


def skill_events(env: Envelope, base_dir: Path, workspace: Path, task: str) -> list[Payload]:
    """Bind skills to ``task`` when the envelope declares ``load_skill``: the ``skills.bound`` and its section."""
    if env.tool(LOAD_SKILL) is None:
        return []
    cfg = env.skills or Skills()
    roots = skill_roots(env, base_dir, workspace)
    binding = bind(discover(roots), task, limit=cfg.max_bound, pin=cfg.pin, forbid=cfg.forbid)
    event = SkillsBound(
        roots=[str(r.path) for r in roots],
        bound=[BoundSkill(skill=SkillData(**b.skill.to_dict()), score=b.score, why=b.why) for b in binding.bound],
        ranked=[SkillScore(name=n, score=s, matched=list(m)) for n, s, m in binding.ranked[:SHOWN_SCORES]],
        problems=[
            SkillProblem(file=p.file, path=p.path, found=p.found, expected=p.expected)
            for p in binding.problems[:SHOWN_SCORES]
        ],
    )
    if not binding.bound:
        return [event]
    lines = [f"- {b.skill.name}: {b.skill.description}" for b in binding.bound]
    intro = "Skills you can use; call load_skill(name) to read a skill's instructions before following them:"
    return [event, ContextSection(label="Skills", source="skills", text="\n".join([intro, *lines]))]


def bound_skills(items: Sequence[Event | Payload]) -> list[Skill]:
    """The skills a run bound at its start (none if it bound none), from its events or the payloads about to be."""
    for item in items:
        data = item.data if isinstance(item, Event) else item
        if isinstance(data, SkillsBound):
            return [Skill.from_dict(b.skill.model_dump()) for b in data.bound]
    return []


def _fact(f: Fact) -> FactData:
    return FactData(**f.to_dict())


def recall_events(database: Path, env: Envelope) -> list[Payload]:
    """The project's newest remembered facts, offered to the model with their sources (``memory.recall``)."""
    cfg = env.memory
    path = memory_path(database)
    if cfg is None or not cfg.recall or cfg.max_facts == 0 or not path.is_file():
        return []
    with MemoryStore.open(path) as mem:
        facts = mem.facts(cfg.max_facts)
    if not facts:
        return []
    intro = (
        "Facts the user stated in earlier runs of this project, each with the run and event it came from. "
        "They may be out of date: the current task and what you observe win."
    )
    lines = [f"- {f.text} (run {f.run_id}, event {f.seq}, from the {f.source})" for f in facts]
    return [
        MemoryRecalled(facts=[_fact(f) for f in facts], store=str(path)),
        ContextSection(label="Memory", source="memory", text="\n".join([intro, *lines])),
    ]


def remembered(store: Store, run_id: str, env: Envelope) -> MemoryRemembered | None:
    """Store the facts the run's user has stated so far (``memory.remember``); None when nothing is new."""
    cfg = env.memory
    if cfg is None or not cfg.remember:
        return None
    found = stated(store.events(run_id))
    if not found:
        return None
    path = memory_path(store.path)
    with MemoryStore.open(path) as mem:
        new = mem.remember(run_id, found, datetime.now(UTC).isoformat(timespec="seconds"))
    return MemoryRemembered(facts=[_fact(f) for f in new], store=str(path)) if new else None


def carried_plan(store: Store, workspace: Path) -> list[Payload]:
    """The task list of the latest run on ``workspace`` that has one, as ``plan.carried`` and its section.

    Raises ``InputError`` when no earlier run of this workspace in the store has a plan.
    """
    for info in reversed(store.runs()):
        events = store.events(info.run_id, kinds=("run.started", "run.forked", *PLAN_KINDS))
        places = [e.payload["workspace"] for e in events if e.kind in ("run.started", "run.forked")]
        plans = [e for e in events if e.kind in PLAN_KINDS and e.payload["tasks"]]
        if not places or Path(places[-1]) != workspace or not plans:
            continue
        last = plans[-1]
        fields = CarriedTask.model_fields
        tasks = [CarriedTask.model_validate({k: v for k, v in t.items() if k in fields}) for t in last.payload["tasks"]]
        lines = [f"- {t.id} [{t.status}] {t.title}".rstrip() for t in tasks]
        intro = (
            f"Your task list, carried over from run {info.run_id} (event {last.seq}); the tasks keep their states. "
            "Go on from it and update it with the plan tool:"
        )
        return [
            PlanCarried(from_run=info.run_id, from_seq=last.seq, tasks=tasks),
            ContextSection(label="Plan", source="plan", text="\n".join([intro, *lines])),
        ]
    raise InputError(
        f"--continue-plan: no earlier run on workspace {workspace} in {store.path} has a task list (the plan tool's)"
    )
