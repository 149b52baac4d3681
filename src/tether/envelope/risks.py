"""Dangerous settings: what strict validation refuses in a well-formed envelope, and the safer form of each.

Each finding names its JSON path, what was found and what to write instead. Some may be accepted on
purpose with a named acknowledgement (``acknowledge: [{risk: network-any, reason: ...}]``, see
:class:`~tether.envelope.schema.Risk`); the others have no legitimate use and cannot be acknowledged:

* globs that reach outside the workspace (``../**``, ``/etc/**``, ``~/.ssh/*``): the sandbox grants only
  the workspace, so such a glob is at best dead and at worst read by a person as a grant;
* a workspace of ``/``, a system directory or a home directory: every file the write globs match there
  is the agent's to change;
* writes that reach the run's own audit log;
* secrets declared with a sandbox that may be ``local`` (which hides nothing from a command);
* acknowledgeable: any-host network, writable ``.git/``; and a blanket allow of the shell tool, which only
  the policy engine can see (``tether.policy.strict``, the layer that composes the whole strict check).
"""

from __future__ import annotations

import contextlib
import os
import pwd
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pathspec

from .network import means_any_host
from .schema import Effect, Envelope, Risk, ToolContract

SYSTEM_DIRS = frozenset(
    {
        *("/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32", "/media", "/mnt"),
        *("/opt", "/proc", "/root", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/var", "/var/tmp", "/Users"),
    }
)
"""Workspaces that are the machine, not a project."""

GIT_PROBES = (".git/config", ".git/hooks/pre-commit", ".git/info/attributes", ".git/modules/m/config")
"""Files in ``.git/`` whose contents git executes or obeys (config, hooks, attributes naming filters)."""

FIXED_COMMAND_TOOLS = frozenset({"run_tests"})
"""Built-in exec tools that run a command the envelope fixes (``verification.test_command``), not the model."""


@dataclass(frozen=True)
class Risky:
    """One dangerous setting. ``risk`` is the acknowledgement that may accept it; None: it must be fixed."""

    path: str
    found: str
    safer: str
    risk: Risk | None = None


def risky_settings(envelope: Envelope, workspace: Path) -> list[Risky]:
    """Every dangerous setting of ``envelope`` when run on ``workspace`` (resolved by the caller)."""
    out: list[Risky] = []
    problem = workspace_risk(workspace)
    if problem is not None:
        out.append(problem)
    out += glob_risks(envelope, workspace)
    out += git_and_log_risks(envelope)
    out += network_risks(envelope)
    out += secret_risks(envelope)
    return out


def homes() -> set[Path]:
    """The invoking user's home directory, however it is spelled."""
    found = {Path.home()}
    if os.environ.get("HOME"):
        found.add(Path(os.environ["HOME"]))
    with contextlib.suppress(KeyError):
        found.add(Path(pwd.getpwuid(os.getuid()).pw_dir))
    return {Path(os.path.realpath(h)) for h in found}


def workspace_risk(workspace: Path, where: str = "$.environment.workspace") -> Risky | None:
    """A workspace that is ``/``, a system directory or a home directory (or a parent of one)."""
    ws = Path(os.path.realpath(workspace))
    safer = "a project directory (e.g. ~/src/project): the agent may change whatever the write globs match in it"
    if str(ws) in SYSTEM_DIRS:
        return Risky(where, f"{ws} (the root or a system directory)", safer)
    for home in homes():
        if ws == home or ws in home.parents:
            return Risky(where, f"{ws} (a home directory or one that contains it)", safer)
    if ws.parent in (Path("/home"), Path("/Users")):
        return Risky(where, f"{ws} (a home directory)", safer)
    return None


def glob_risks(envelope: Envelope, workspace: Path) -> list[Risky]:
    """Read and write globs that name places outside the workspace (deny globs outside it are harmless)."""
    fs = envelope.environment.filesystem
    if fs is None:
        return []
    out: list[Risky] = []
    ws = PurePosixPath(os.path.realpath(workspace))
    for kind, globs in (("read", fs.read), ("write", fs.write)):
        for i, glob in enumerate(globs):
            where = f"$.environment.filesystem.{kind}[{i}]"
            if glob.startswith("!"):
                continue  # a negation only takes away
            if ".." in PurePosixPath(glob).parts:
                out.append(Risky(where, repr(glob), "a glob inside the workspace, without '..' (e.g. 'src/**')"))
            elif glob.startswith("~"):
                out.append(Risky(where, repr(glob), "a glob relative to the workspace; the home directory is outside"))
            elif glob.startswith("/"):
                literal = PurePosixPath(os.path.normpath(_literal_prefix(glob)))
                if literal == ws or literal.is_relative_to(ws):
                    relative = os.path.relpath(glob, ws) if literal != ws else "**"
                    safer = f"the same glob relative to the workspace: {relative!r}"
                else:
                    safer = f"a glob relative to the workspace (e.g. {glob.lstrip('/')!r}); the sandbox grants no more"
                out.append(Risky(where, f"{glob!r} (an absolute path)", safer))
    return out


def _literal_prefix(glob: str) -> str:
    """The directories of ``glob`` before its first wildcard."""
    parts: list[str] = []
    for part in glob.split("/"):
        if any(c in part for c in "*?["):
            break
        parts.append(part)
    return "/".join(parts) or "/"


def git_and_log_risks(envelope: Envelope) -> list[Risky]:
    """Write globs that reach ``.git/`` (acknowledgeable) or the run's own audit log (never)."""
    fs = envelope.environment.filesystem
    if fs is None or not fs.write:
        return []
    deny = pathspec.GitIgnoreSpec.from_lines(fs.deny)
    writable = pathspec.GitIgnoreSpec.from_lines(fs.write)

    def reaches(paths: list[str]) -> list[int]:
        hit = [p for p in paths if writable.match_file(p) and not deny.match_file(p)]
        return [
            i for i, g in enumerate(fs.write) if any(pathspec.GitIgnoreSpec.from_lines([g]).match_file(p) for p in hit)
        ]

    out: list[Risky] = []
    for i in reaches(list(GIT_PROBES)):
        out.append(
            Risky(
                f"$.environment.filesystem.write[{i}]",
                f"{fs.write[i]!r} (makes .git/config and .git/hooks/ writable)",
                "globs that leave .git/ out (e.g. 'src/**'), or '.git/**' added to environment.filesystem.deny",
                Risk.GIT_WRITABLE,
            )
        )
    log = envelope.audit.log if envelope.audit else ""
    if log and not log.startswith("/"):
        for i in reaches([log, f"{log}-wal", f"{log}-journal"]):
            out.append(
                Risky(
                    f"$.environment.filesystem.write[{i}]",
                    f"{fs.write[i]!r} (makes the run's own log {log} writable)",
                    f"globs that leave {os.path.dirname(log) or log}/ out, or it added to environment.filesystem.deny",
                )
            )
    return out


def network_risks(envelope: Envelope) -> list[Risky]:
    net = envelope.environment.network
    if net is None:
        return []
    loopback = [
        Risky(
            "$.environment.network.allow_loopback",
            "true (a listed name may resolve to this machine's own services)",
            "false; true only in an envelope for a local test or development server",
            Risk.NETWORK_LOOPBACK,
        )
    ]
    return (loopback if net.allow_loopback else []) + [
        Risky(
            f"$.environment.network.allow[{i}]",
            f"{host!r} (any host)",
            "the exact host names the task needs (e.g. 'pypi.org'), or [] for no network",
            Risk.NETWORK_ANY,
        )
        for i, host in enumerate(net.allow)
        if means_any_host(host)
    ]


def takes_command(contract: ToolContract) -> bool:
    """A shell tool: it has the ``exec`` effect and the model chooses the command it runs."""
    if Effect.EXEC not in contract.effects or contract.name in FIXED_COMMAND_TOOLS:
        return False
    properties = contract.input_schema.get("properties")
    return not isinstance(properties, dict) or "command" in properties


def secret_risks(envelope: Envelope) -> list[Risky]:
    """Secrets need an isolating sandbox: ``local`` shows a command every file and environment of the user."""
    env = envelope.environment
    if not env.secrets:
        return []
    why = "an envelope that declares secrets runs only in the bwrap sandbox (local isolates nothing)"
    if env.sandbox.backend == "local":
        return [Risky("$.environment.sandbox.backend", "'local'", f"'bwrap': {why}")]
    if not env.sandbox.required:
        return [Risky("$.environment.sandbox.required", "false (may fall back to local)", f"true: {why}")]
    return []
