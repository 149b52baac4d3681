"""``tether demo``: the bugfix example, end to end, with no API key.

Copies ``examples/bugfix`` to a scratch directory (the example itself is never
modified), makes its project a git repository, runs the recorded trajectory
through the full loop, answers the one approval non-interactively (denied, and
shown), then verifies the log's hash chain.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import typer

from tether.events.anchor import Signer
from tether.events.backends import describe, open_store, spec_of
from tether.kernel import session
from tether.kernel.approvals import ApprovalAnswer, ApprovalRequest
from tether.status import RunStatus

from .common import EXIT_INVALID, JsonOption, console, err_console, exit_code
from .progress import progress_line
from .run_cmds import control_line, printer, show_contract
from .trace_cmds import traced

REPO_EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "bugfix"


def cli_name() -> str:
    """How to call this same tether again (after `make demo` it is not on PATH)."""
    argv0 = Path(sys.argv[0])
    return str(argv0) if argv0.name == "tether" else "tether"


def demo_approver(request: ApprovalRequest) -> ApprovalAnswer:
    """The demo's stand-in for a human: it declines anything that needs approval, with a reason."""
    return ApprovalAnswer("deny", "demo-approver", "publishing is not part of this task (answered by the demo)")


def prepare(example: Path, workdir: Path) -> Path:
    dest = workdir / example.name
    shutil.copytree(example, dest, ignore=shutil.ignore_patterns(".tether", "__pycache__", ".pytest_cache"))
    project = dest / "project"
    (project / ".gitignore").write_text("__pycache__/\n.pytest_cache/\n")
    for cmd in (
        ["git", "init", "-q", "-b", "main"],
        ["git", "add", "-A"],
        ["git", "-c", "user.name=demo", "-c", "user.email=demo@tether.dev", "commit", "-qm", "initial"],
    ):
        subprocess.run(cmd, cwd=project, check=True, capture_output=True)
    return dest


def demo_cmd(
    example: Path = typer.Option(REPO_EXAMPLE, "--example", help="Example directory to copy and run."),
    workdir: Path | None = typer.Option(None, "--workdir", help="Where to put the copy (default: a temp dir)."),
    keep: bool = typer.Option(False, "--keep", help="Keep the temp dir (its log and project) to inspect afterwards."),
    sandbox: str | None = typer.Option(None, "--sandbox", help="Override the sandbox backend: bwrap | local."),
    model: str | None = typer.Option(None, "--model", "-m", help="A real model instead of the recorded trajectory."),
    base_url: str | None = typer.Option(None, "--base-url", help="Provider base URL (local servers)."),
    db: str | None = typer.Option(
        None, "--db", help="Event store for the run (default: tether.db in the work dir); e.g. a postgresql:// URL."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Run the bugfix demo: a denial, a declined approval, a wrong edit, a fix, verification, COMPLETE.

    The temp dir it works in is removed at the end (also when it fails or is interrupted) unless --keep;
    a --workdir is the caller's and is always kept.
    """
    work = workdir or Path(tempfile.mkdtemp(prefix="tether-demo-"))
    try:
        options = session.Options(model=model, base_url=base_url, sandbox=sandbox)
        code = run_demo(example, work, options, as_json, kept=keep or workdir is not None, db=db)
    finally:
        if workdir is None and not keep:
            shutil.rmtree(work, ignore_errors=True)
    if workdir is None and not keep and not as_json:
        console.print(f"\nremoved {work} (keep it to inspect: `tether demo --keep`, or `make demo KEEP=1`)")
    raise typer.Exit(code)


def run_demo(
    example: Path, work: Path, options: session.Options, as_json: bool, *, kept: bool, db: str | None = None
) -> int:
    """Copy the example into ``work``, run it to its end, verify the log; the exit code."""
    work.mkdir(parents=True, exist_ok=True)
    dest = prepare(example, work)
    spec = spec_of(db) if db else work / "tether.db"
    store = open_store(spec, signer=Signer.configured(), local=work)  # a URL's local files: the work dir
    with store, progress_line(err_console, None, as_json) as line:
        with traced(printer(as_json, progress=line)) as sink:  # and to OpenTelemetry when OTEL_* ask for it
            options = replace(options, approver=demo_approver, on_event=sink)
            runtime = session.start(store, dest / "envelope.yaml", "Fix the failing median test.", options)
            contract = runtime.drive()
        count = store.verify(contract.run_id)
        control = control_line(store, contract.run_id)
    show_contract(contract, as_json)
    if not as_json:
        console.print(control)
        console.print(f"\nlog verified: {count} events, hash chain intact ({describe(spec)})")
        if kept:
            console.print(f"inspect it:   {cli_name()} show {contract.run_id} --db {describe(spec)}")
            console.print(f"the diff:     git -C {dest / 'project'} diff")
    code = exit_code(contract.status)
    return code if code else (0 if contract.status is RunStatus.COMPLETE else EXIT_INVALID)


def register(app: typer.Typer) -> None:
    app.command("demo")(demo_cmd)
