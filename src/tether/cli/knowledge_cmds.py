"""``tether skills list`` and ``tether memory list | show | forget``: what runs know beyond their task.

The skill registry and the memory store are imported inside the commands (ranking loads numpy), so
that the CLI starts as fast without them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from .common import DbOption, JsonOption, console, find_db, print_json

skills_app = typer.Typer(help="Skills: SKILL.md folders a run can bind and load.", no_args_is_help=True)
FactArgument = typer.Argument(..., help="A fact id (or a unique prefix).")
memory_app = typer.Typer(help="Project memory: facts the user stated, with their source.", no_args_is_help=True)


@skills_app.command("list")
def skills_list_cmd(
    task: str = typer.Option("", "--task", "-t", help="Show what would bind to this task, and why (scores)."),
    envelope: Path | None = typer.Option(
        None, "--envelope", "-e", help="Use its skills settings and workspace (default: ./envelope.yaml if any)."
    ),
    workspace: Path | None = typer.Option(None, "--workspace", "-w", help="The workspace (default: the envelope's)."),
    as_json: bool = JsonOption,
) -> None:
    """Every skill found (and every malformed one); with --task, which would bind and each one's BM25 score."""
    from tether.envelope.load import load_envelope
    from tether.envelope.schema import Envelope, PlanRef, Skills
    from tether.kernel.knowledge import skill_roots
    from tether.skills import bind, discover

    if envelope is None and Path("envelope.yaml").is_file():
        envelope = Path("envelope.yaml")
    env, base = Envelope(plan=PlanRef(path="", hash="")), Path.cwd()  # no envelope: the defaults
    if envelope is not None:
        env, base = load_envelope(envelope), envelope.resolve().parent
    cfg = env.skills or Skills()
    roots = skill_roots(env, base, (workspace or base / env.environment.workspace).resolve())
    catalog = discover(roots)
    binding = bind(catalog, task, limit=cfg.max_bound, pin=cfg.pin, forbid=cfg.forbid)
    bound = {b.skill.name: b.why for b in binding.bound}
    scores = {name: (score, shared) for name, score, shared in binding.ranked}
    rows = [
        {
            **s.to_dict(),
            "score": scores[s.name][0],
            "matched": list(scores[s.name][1]),
            "bound": s.name in bound,
            "why": bound.get(s.name, ""),
        }
        for s in sorted(catalog.skills, key=lambda s: (-scores[s.name][0], s.name))
    ]
    problems = [p.to_dict() for p in binding.problems]
    if as_json:
        print_json({"roots": [str(r.path) for r in roots], "task": task, "skills": rows, "problems": problems})
        return
    _show_skills(rows, problems, [str(r.path) for r in roots], bool(task))


def _show_skills(rows: list[dict[str, object]], problems: list[dict[str, str]], roots: list[str], ranked: bool) -> None:
    table = Table(box=None, padding=(0, 1))
    for column in ("name", "source", *(("score", "bound") if ranked else ()), "description"):
        table.add_column(column)
    for r in rows:
        extra = (f"{r['score']:.2f}", escape(str(r["why"]) or "-")) if ranked else ()
        table.add_row(escape(str(r["name"])), str(r["source"]), *extra, escape(str(r["description"])))
    console.print(table if rows else f"no skills found in {', '.join(roots)}")
    for p in problems:
        where = f"{p['file']}: " if p["file"] else ""
        console.print(
            f"[red]problem[/] {escape(where + p['path'])}: found {escape(p['found'])}; expected {escape(p['expected'])}"
        )


def _memory(db: str | None) -> Path:
    """The memory beside the log: a file's directory, or a PostgreSQL-backed workspace's ``.tether/``."""
    from tether.events.backends import local_dir
    from tether.memory.store import MEMORY_FILE

    return local_dir(find_db(db)) / MEMORY_FILE


@memory_app.command("list")
def memory_list_cmd(
    forgotten: bool = typer.Option(False, "--forgotten", help="List what was forgotten (when, by whom, why)."),
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """The facts remembered for this project (newest first), each with the run and event it came from."""
    from tether.memory import MemoryStore

    path = _memory(db)
    if not path.is_file():
        rows: list[dict[str, object]] = []
    else:
        with MemoryStore.open(path) as mem:
            rows = [f.to_dict() for f in (mem.forgotten() if forgotten else mem.facts())]
    if as_json:
        print_json({"memory": str(path), "facts": rows})
        return
    if not rows:
        console.print(f"nothing {'forgotten' if forgotten else 'remembered'} in {path}")
    for r in rows:
        if forgotten:
            console.print(f"{r['fact_id']}  forgotten {r['at']} by {escape(str(r['by']))}: {escape(str(r['reason']))}")
        else:
            console.print(f"{r['id']}  {escape(str(r['text']))}  [dim](run {r['run_id']}, event {r['seq']})[/]")


@memory_app.command("show")
def memory_show_cmd(
    fact: str = typer.Argument(..., help="A fact id (or a unique prefix)."),
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """One fact, with its source: the run, the event and the kind of user text it was stated in."""
    from tether.memory import MemoryStore

    with MemoryStore.open(_memory(db), create=False) as mem:
        found = mem.get(fact).to_dict()
    if as_json:
        print_json(found)
        return
    for key, value in found.items():
        console.print(f"[bold]{key}[/] {escape(str(value))}")
    console.print(f"[dim]see it in its run: tether log show {found['run_id']}[/]")


@memory_app.command("forget")
def memory_forget_cmd(
    fact: str = FactArgument,
    reason: str = typer.Option("", "--reason", help="Why (recorded with the forgetting; the fact's text is not)."),
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Delete a fact from memory for good: no later run is offered it, even if the user states it again."""
    from tether.kernel.approvals import whoami
    from tether.memory import MemoryStore

    with MemoryStore.open(_memory(db), create=False) as mem:
        gone = mem.forget(fact, by=whoami(), reason=reason, at=datetime.now(UTC).isoformat(timespec="seconds"))
    if as_json:
        print_json({"forgotten": gone.id, "run_id": gone.run_id, "seq": gone.seq})
        return
    console.print(f"forgot {gone.id} (stated in run {gone.run_id}, event {gone.seq}); the run's own log is unchanged")


def register(app: typer.Typer) -> None:
    app.add_typer(skills_app, name="skills")
    app.add_typer(memory_app, name="memory")
