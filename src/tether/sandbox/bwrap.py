"""``bwrap``: the bubblewrap sandbox.

What the command sees:

* system directories (``/usr``, ``/etc``, ``/opt``, the merged-/usr links) read-only; the interpreter
  tether runs on (which may live under a home directory, e.g. ``/root/.pyenv``) read-only at its own path,
  first on ``PATH``, and tether's own package read-only (its pytest reporter is loaded from there) —
  nothing else of the host (no ``/root``, ``/home``, ``/var``, ``/run``, ``/mnt``);
* the workspace read-write at its own path, and the working directory inside it — except what
  ``environment.filesystem.deny`` matches when the command starts, which is covered (a file by
  ``/dev/null``, a directory by an empty read-only tmpfs; see :mod:`tether.sandbox.mask`);
* private tmpfs ``/tmp``, ``/var/tmp`` and ``$HOME`` (``/home/sandbox``); a minimal ``/dev``; a new ``/proc``;
* new pid, network (loopback only, no route), ipc, uts and cgroup namespaces; ``--die-with-parent``,
  ``--new-session``; capabilities dropped, ``no_new_privs`` set; the same allowlisted environment and
  non-interactive guards as ``local``; rlimits and bounded output.

Root-owned secrets. Root inside a user namespace created by root is still host uid 0 and reads root-owned
host files, so hiding paths alone is not enough. The command therefore always runs as an unprivileged host
uid and the kernel's permission checks protect root-only files, in addition to them not being mounted:

* tether not root: bubblewrap runs unprivileged (all namespaces, including user, unshared) as the caller.
* tether root: bubblewrap runs privileged (mount, pid, net, ipc, uts, cgroup namespaces; no user
  namespace, because one created by root maps root) and ``setpriv`` drops the command to a dedicated
  unprivileged user (``tether-sandbox``, else ``nobody``) with no capabilities, an empty bounding set,
  no supplementary groups and ``no_new_privs``. That user is granted ``rwX`` on the workspace with a POSIX
  ACL (ownership unchanged; see :mod:`tether.sandbox.acl`).

Network. Without ``egress`` there is none. With it (``environment.network.allow`` lists hosts), each command
gets its own host-side proxy, its socket bound at ``/run/tether-egress``, and a bridge on the sandbox's
127.0.0.1:3128 started before the command (see :mod:`tether.sandbox.egress`).

The pid namespace ends with the command: when it exits, every process it started (``setsid`` or not) is
killed by the kernel. On timeout the bubblewrap process group is killed, and ``--die-with-parent`` takes
the sandbox down with it.
"""

from __future__ import annotations

import copy
import os
import pwd
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from tether.envelope.schema import SECRETS_DIR
from tether.errors import FileError, SandboxUnavailable
from tether.events.kinds_egress import EgressAttempted

from . import acl
from . import warm as warmth
from .ahead import Ahead
from .base import is_within, resolve_dir, to_argv
from .egress import SANDBOX_PORT, SANDBOX_SOCKET_DIR, Egress, EgressProxy, bridge_command, proxy_env
from .environment import build_env, starts_code
from .limits import Limits
from .mask import Listings, masks
from .output import OutputCap
from .process import Captured, Hold, hold_for, kill_group, run_captured, spawn, to_receipt
from .reaper import Leftovers
from .receipt import Receipt

SYSTEM_RO = ("/usr", "/etc")
SYSTEM_RO_TRY = ("/opt",)
MERGED_USR = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
SANDBOX_HOME = "/home/sandbox"
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SANDBOX_USERS = ("tether-sandbox", "nobody")
S = TypeVar("S")

INSTALL_FIX = "install bubblewrap (Debian/Ubuntu: apt-get install -y bubblewrap; Fedora: dnf install bubblewrap)"
USER_FIX = (
    "create an unprivileged sandbox user: useradd --system --user-group --no-create-home "
    "--shell /usr/sbin/nologin tether-sandbox"
)
USERNS_FIX = (
    "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or on Ubuntu "
    "kernel.apparmor_restrict_unprivileged_userns=0), or run tether in a container that permits them"
)


@dataclass(frozen=True)
class Carried:
    """Secret values one call's sandbox carries (see :mod:`tether.sandbox.broker`): variables, and files for the
    sandbox's private ``/run/secrets`` tmpfs (name -> bytes), written there 0400 by the sandbox user itself."""

    env: Mapping[str, str] = field(default_factory=dict)
    files: Mapping[str, bytes] = field(default_factory=dict)


@dataclass(frozen=True)
class SandboxUser:
    uid: int
    gid: int
    name: str


def resolve_user(name: str | None = None) -> SandboxUser | None:
    """The unprivileged user commands run as when tether is root: ``name``, else tether-sandbox, else nobody."""
    for candidate in (name,) if name else SANDBOX_USERS:
        try:
            entry = pwd.getpwnam(candidate)
        except KeyError:
            continue
        if entry.pw_uid != 0:
            return SandboxUser(entry.pw_uid, entry.pw_gid, entry.pw_name)
    return None


def command_user(user: str | None) -> tuple[SandboxUser, str]:
    """Where tether is root: the unprivileged user commands run as (:func:`resolve_user`) and the ``setpriv`` that
    drops root to it inside the sandbox; ``SandboxUnavailable`` (with the fix) when either is missing."""
    found = resolve_user(user)
    if found is None:
        raise SandboxUnavailable(
            f"tether runs as root and no unprivileged sandbox user ({user or ' / '.join(SANDBOX_USERS)}) "
            "exists to run commands as.",
            fix=USER_FIX,
        )
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        raise SandboxUnavailable(
            "setpriv (util-linux) is needed to drop root inside the sandbox.", fix="install util-linux"
        )
    return found, setpriv


def caller() -> SandboxUser:
    """Where tether is not root: commands run as tether's own user (bubblewrap unprivileged)."""
    return SandboxUser(os.getuid(), os.getgid(), pwd.getpwuid(os.getuid()).pw_name)


def is_under(path: Path, roots: Sequence[str]) -> bool:
    return any(path == Path(r) or path.is_relative_to(r) for r in roots)


def interpreter_paths() -> list[Path]:
    """The Python running tether, its virtual environment and tether's package, where outside the system directories.

    The venv comes first so that its tools (pytest, ruff) are the ones found on PATH, as they are on the host.
    """
    prefixes = dict.fromkeys(Path(p).resolve() for p in (sys.prefix, sys.base_prefix))
    package = Path(__file__).resolve().parents[1]  # tether itself: an editable install lives outside the prefix
    if not any(package.is_relative_to(p) for p in prefixes):
        prefixes[package] = None
    return [p for p in prefixes if not is_under(p, (*SYSTEM_RO, *SYSTEM_RO_TRY))]


@dataclass(frozen=True)
class Layout:
    """Arguments built so far, the directories they make exist inside the sandbox, and the system directories."""

    args: tuple[str, ...]
    made: frozenset[str]
    system: tuple[str, ...]

    def dirs_for(self, path: Path) -> list[str]:
        """``--dir`` arguments for the ancestors of ``path`` that nothing mounted or made so far provides."""
        out: list[str] = []
        for parent in reversed(path.parents):
            if str(parent) not in self.made and not is_under(parent, self.system):
                out += ["--perms", "0755", "--dir", str(parent)]
        return out

    def bind(self, path: Path, how: str) -> Layout:
        """This layout with ``path`` bound at its own path (``how``: ``--bind`` or ``--ro-bind``), and the way to it."""
        made = self.made | {str(parent) for parent in path.parents}
        return Layout((*self.args, *self.dirs_for(path), how, str(path), str(path)), made, self.system)


class BwrapSandbox:
    """Runs each command in a fresh bubblewrap sandbox. See the module docstring for what is enforced."""

    name = "bwrap"

    def __init__(
        self,
        workspace: Path | None = None,
        *,
        env_allow: Sequence[str] = (),
        limits: Limits | None = None,
        cap: OutputCap | None = None,
        ro_paths: Sequence[Path] | None = None,
        user: str | None = None,
        deny: Sequence[str] = (),
        egress: Egress | None = None,
    ) -> None:
        """``workspace`` is bound read-write (default: each call's ``cwd``); ``ro_paths`` are bound read-only
        at their own paths (default: the interpreter prefix); ``user`` names the sandbox user when root;
        workspace paths matching the ``deny`` globs are covered inside the sandbox; with ``egress``, each command
        reaches the network through its own proxy (:mod:`tether.sandbox.egress`), else not at all."""
        exe = shutil.which("bwrap")
        if exe is None:
            raise SandboxUnavailable("bubblewrap (bwrap) is not installed.", fix=INSTALL_FIX)
        self.exe = exe
        self.workspace = workspace.resolve() if workspace is not None else None
        self._workspace_str = str(self.workspace) if self.workspace is not None else None
        self.env_allow = tuple(env_allow)
        self.deny = tuple(deny)
        self.limits = limits or Limits()
        self.cap = cap or OutputCap()
        self.ro_paths = [p.resolve() for p in (interpreter_paths() if ro_paths is None else ro_paths)]
        self.privileged = os.geteuid() == 0
        dropped: tuple[SandboxUser, str | None] = command_user(user) if self.privileged else (caller(), None)
        self.user, self.setpriv = dropped
        self._granted: set[Path] = set()
        self._layouts: dict[Path, Layout] = {}
        self._fixed_env = self.fixed_env()  # never changed in place: the per-call twins share it
        self._listings: dict[Path, Listings] = {}
        """The deny walk's directory listings per workspace, for the next command's walk (see :mod:`.mask`)."""
        self.egress = egress
        self.egress_attempts: list[EgressAttempted] = []
        """Every connection the commands run so far asked the proxy for (see :func:`take_egress`)."""
        self.carried = Carried()
        self._ahead: warmth.Slot[Ahead] = warmth.Slot()  # the next command's sandbox, set up ahead (views share it)

    @contextmanager
    def warm(self) -> Iterator[None]:
        """While it lasts (a run's drive), each command's end sets up the next shell command's sandbox, whose shell
        then waits for that command (:mod:`.ahead`); at its end the waiting one is stopped, unrun."""
        with self._ahead.driving():
            yield

    @property
    def warm_runs(self) -> int:
        """How many commands ran in a sandbox set up ahead (:mod:`.ahead`)."""
        return self._ahead.runs

    def with_egress(self, egress: Egress | None) -> BwrapSandbox:
        """This sandbox with another network: ``egress``'s proxy for each command, or none (no network)."""
        view = copy.copy(self)
        view.egress, view.egress_attempts = egress, []
        return view

    def for_call(self, call_id: str, secrets: Sequence[tuple[str, Sequence[str]]] = ()) -> BwrapSandbox:
        """This sandbox for one tool call: its proxy's attempts are the call's, and a call carrying ``secrets``
        (name, hosts) reaches only hosts every one of them may go to. ``self`` is unchanged."""
        return self if self.egress is None else self.with_egress(self.egress.for_call(call_id, secrets))

    def carrying(self, carried: Carried) -> BwrapSandbox:
        """This sandbox for one call that carries ``carried``; ``self`` is unchanged (other calls get nothing)."""
        twin = copy.copy(self)
        twin.carried = carried
        return twin

    # -- argv ---------------------------------------------------------------------------------------

    def argv(
        self,
        inner: Sequence[str],
        *,
        workspace: Path,
        cwd: Path,
        proxy_dir: Path | None = None,
        resolved: str | None = None,
    ) -> list[str]:
        """The full bubblewrap command line for running ``inner`` with ``workspace`` writable, less what
        ``deny`` matches in it now, and the egress proxy's socket directory when there is one. ``resolved``: the
        workspace's real path, when the caller has just resolved it (see :func:`.mask.masks`)."""
        layout = self._layouts.get(workspace)
        if layout is None:
            layout = self._layouts[workspace] = self.layout(workspace)
        args = list(layout.args)
        if proxy_dir is not None:
            args += [*layout.dirs_for(Path(SANDBOX_SOCKET_DIR)), "--ro-bind", str(proxy_dir), SANDBOX_SOCKET_DIR]
        listings = self._listings.get(workspace)
        if listings is None:
            listings = self._listings[workspace] = Listings()
        covered = masks(workspace, self.deny, listings, resolved=resolved).bwrap_args()
        args += [*covered, *self._secrets_tmpfs(), "--chdir", str(cwd), "--"]
        if self.setpriv is not None:
            uid, gid = str(self.user.uid), str(self.user.gid)
            args += [self.setpriv, "--reuid", uid, "--regid", gid, "--clear-groups", "--no-new-privs"]
            args += ["--inh-caps=-all", "--bounding-set=-all", "--"]
        return [*args, *inner]

    def layout(self, workspace: Path) -> Layout:
        """Namespaces and the mounts that do not change from one command to the next: the system directories,
        tether's interpreter and the workspace. Built once per workspace (the host's directory layout is read
        then); what may change between commands (covered paths, the proxy, carried secrets) is added per command.
        """
        args = [self.exe, "--die-with-parent", "--new-session"]
        if self.privileged:
            args += ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
            args += ["--cap-drop", "ALL"]
            for cap in ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP"):  # only for setpriv, which drops them all
                args += ["--cap-add", cap]
        else:
            args += ["--unshare-all", "--cap-drop", "ALL"]
        args += ["--hostname", "sandbox"]
        for d in SYSTEM_RO:
            args += ["--ro-bind", d, d]
        for d in SYSTEM_RO_TRY:
            args += ["--ro-bind-try", d, d]
        system = [*SYSTEM_RO, *SYSTEM_RO_TRY]
        for link in MERGED_USR:
            p = Path(link)
            if p.is_symlink():
                args += ["--symlink", os.readlink(p), link]
            elif p.is_dir():
                args += ["--ro-bind", link, link]
                system.append(link)
        args += ["--dev", "/dev", "--proc", "/proc"]
        args += ["--perms", "1777", "--tmpfs", "/tmp", "--perms", "1777", "--tmpfs", "/var/tmp"]
        args += ["--perms", "0777", "--tmpfs", SANDBOX_HOME]
        mounted = frozenset({"/", "/dev", "/proc", "/tmp", "/var/tmp", SANDBOX_HOME, *system})
        layout = Layout(tuple(args), mounted, tuple(system))
        for p in self.ro_paths:
            if is_under(p, system) or p == workspace or p.is_relative_to(workspace) or not p.exists():
                continue
            layout = layout.bind(p, "--ro-bind")
        return layout.bind(workspace, "--bind")

    def fixed_env(self) -> dict[str, str]:
        """What the sandbox sets in every command's environment whatever the host's: the sandbox's own PATH
        (tether's interpreter first), home and user. It depends only on the sandbox's mounts and user, so it is
        built once (the host's allowlisted variables, the call's own and carried secrets are read per command)."""
        path = ":".join([*(str(p / "bin") for p in self.ro_paths if (p / "bin").is_dir()), SYSTEM_PATH])
        overrides = {"PATH": path, "HOME": SANDBOX_HOME, "TMPDIR": "/tmp", "USER": self.user.name}
        overrides["LOGNAME"] = self.user.name
        # The workspace belongs to another uid; git inside the sandbox must still work on it.
        overrides |= {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "safe.directory", "GIT_CONFIG_VALUE_0": "*"}
        return overrides

    def env(self, extra: Mapping[str, str] | None) -> dict[str, str]:
        env = build_env(os.environ, env_allow=self.env_allow, extra=extra, overrides=self._fixed_env)
        env.update(self.carried.env)  # a fresh dict: build_env's own
        return env

    # -- running ------------------------------------------------------------------------------------

    def prepare(self, workspace: Path) -> None:
        """When dropping to the sandbox user, make sure it can write the workspace (once per workspace)."""
        if not self.privileged or workspace in self._granted:
            return
        try:
            acl.grant_tree(workspace, self.user.uid)
        except acl.AclUnsupported as e:
            raise SandboxUnavailable(
                f"cannot give the sandbox user {self.user.name} write access to {workspace}: {e.strerror}.",
                fix="put the workspace on a filesystem with POSIX ACLs (ext4, xfs, btrfs, tmpfs), "
                "or run tether as an unprivileged user",
            ) from e
        self._granted.add(workspace)

    def run(
        self,
        command: str | Sequence[str],
        *,
        cwd: Path,
        timeout_s: float,
        env: Mapping[str, str] | None = None,
        before: Callable[[], None] | None = None,
    ) -> Receipt:
        """Run ``command``; with ``before``, started held (:class:`.process.Hold`): bubblewrap sets the sandbox up
        while ``before`` runs, and the command begins only once it has returned (if it raises, never:
        ``NotReleased``). ``before`` runs only if bubblewrap started: a caller whose ``before`` was not run runs it
        itself before going on."""
        real = resolve_dir(cwd)
        if real is None:
            raise FileError(f"{cwd}: working directory does not exist")
        cwd = Path(real)
        workspace = self.workspace or cwd
        if not is_within(real, self._workspace_str or real):
            raise FileError(f"{cwd}: working directory is outside the sandbox workspace {workspace}")
        # The command runs at the workspace root (as tools run it), or the workspace is the cwd: its resolution is
        # the workspace's, not made a second time for the deny walk.
        resolved = real if self._workspace_str in (None, real) else None
        self.prepare(workspace)
        ahead = self._take(command, workspace, cwd, resolved, timeout_s, env, before)
        if ahead is not None:
            try:
                got = self._spawn(
                    [],
                    cwd=cwd,
                    env=ahead.env,
                    timeout_s=timeout_s,
                    pass_fds=(),
                    hold=ahead.hold,
                    ahead=ahead,
                    then=(workspace, resolved),
                )
                started = wrote_byte(ahead.start_r)
            finally:
                ahead.close()
            self._ahead.runs += 1
            return self._receipt(got, started, command, cwd)
        try:
            proxy = self.egress.start() if self.egress is not None else None  # none: no network at all
        except OSError as e:  # fail closed: the command does not run without its way out
            raise SandboxUnavailable(f"cannot start the egress proxy: {e}", fix="check that /tmp is writable") from e
        try:
            hold = hold_for(before, (*self.env_allow, *(env or ()), *self.carried.env))
            try:
                return self._run(
                    command,
                    cwd=cwd,
                    workspace=workspace,
                    resolved=resolved,
                    timeout_s=timeout_s,
                    env=env,
                    proxy=proxy,
                    hold=hold,
                )
            finally:
                if hold is not None:
                    hold.close()
        finally:
            if proxy is not None:
                proxy.close()  # first: a connection still open is ended and recorded
                self.egress_attempts += proxy.attempts

    def _run(
        self,
        command: str | Sequence[str],
        *,
        cwd: Path,
        workspace: Path,
        timeout_s: float,
        env: Mapping[str, str] | None,
        proxy: EgressProxy | None,
        hold: Hold | None = None,
        resolved: str | None = None,
    ) -> Receipt:
        """Start bubblewrap on ``command`` and wait for it. The start pipe tells a setup failure (bubblewrap dies
        before its trampoline wrote the byte) from the command failing: the first raises ``SandboxUnavailable``.
        ``resolved``: the workspace's real path when already resolved (see :meth:`argv`)."""
        start_r, start_w = os.pipe()
        secrets = self._secret_pipes()
        try:
            inner = self._trampoline(command, timeout_s, secrets, start_w, proxy, hold)
            proxy_dir = None if proxy is None else proxy.directory
            argv = self.argv(inner, workspace=workspace, cwd=cwd, proxy_dir=proxy_dir, resolved=resolved)
            child_env = self.env(env)
            if proxy is not None:
                child_env.update(proxy_env())
            pass_fds = (start_w, *(fd for _, fd in secrets))
            then = (workspace, resolved) if proxy is None else None
            got = self._spawn(
                argv, cwd=cwd, env=child_env, timeout_s=timeout_s, pass_fds=pass_fds, hold=hold, then=then
            )
            started = wrote_byte(start_r)
        finally:
            for fd in (start_r, start_w, *(fd for _, fd in secrets)):
                os.close(fd)
        return self._receipt(got, started, command, cwd)

    def _receipt(self, got: Captured, started: bool, command: str | Sequence[str], cwd: Path) -> Receipt:
        """The command's receipt; ``SandboxUnavailable`` when bubblewrap died before its shell wrote the start byte
        (a set-up failure, not the command's)."""
        if not started and not got.timed_out:
            reason = got.stderr.text().strip() or f"bwrap exited {got.exit_code} before starting the command"
            fix = USERNS_FIX if "namespace" in reason.lower() else INSTALL_FIX
            raise SandboxUnavailable(f"bubblewrap could not start the sandbox: {reason}", fix=fix)
        return to_receipt(got, backend=self.name, command=command, cwd=cwd)

    def _take(
        self,
        command: str | Sequence[str],
        workspace: Path,
        cwd: Path,
        resolved: str | None,
        timeout_s: float,
        env: Mapping[str, str] | None,
        before: Callable[[], None] | None,
    ) -> Ahead | None:
        """The sandbox set up ahead (:meth:`warm`), given this call's command and ``before``, if it is what the
        call would start now (:meth:`.ahead.Ahead.fits`, and nothing in the workspace changed since its deny walk);
        one that is not is stopped. None, the sandbox left waiting, for a call it cannot carry: an argv, the call's
        own variables, an egress proxy, carried secrets, a text :func:`.warm.go` refuses."""
        if self._ahead.idle is None or not isinstance(command, str) or env or not self._plain():
            return None
        # `exec` last: `$_` at the command's start is what a fresh sandbox's first line leaves (the start byte's exec)
        text = warmth.go(f"{self.limits.ulimit_script(timeout_s, unprivileged=True)}; exec", command)
        if text is None:
            return None
        ahead = self._ahead.take()
        if ahead is None:
            return None
        try:
            flags = self.argv([], workspace=workspace, cwd=cwd, resolved=resolved)
            fits = ahead.fits(flags, self.env(None), warmth.inode(workspace), self._walks(workspace))
        except BaseException:  # taken, so no one else would stop it
            ahead.discard()
            raise
        if not fits:
            ahead.discard()
            return None
        ahead.hold.go = text
        if before is not None:
            ahead.hold.before = before
        return ahead

    def _walks(self, workspace: Path) -> int | None:
        """How many times the deny walk has looked at ``workspace`` (not served whole from its last walk, which the
        inotify watch vouches for): a count that moved means something there changed. None: no walk kept."""
        listings = self._listings.get(workspace)
        return None if listings is None or listings.watch is None else listings.walked

    def _plain(self) -> bool:
        """Whether this is the sandbox itself, not a view of it with an egress proxy or carried secrets (whose
        commands start fresh, each with its own proxy or secrets, and set up none ahead)."""
        return self.egress is None and not self.carried.env and not self.carried.files

    def _set_up_next(self, workspace: Path, cwd: Path, resolved: str | None) -> None:
        """While :meth:`warm` lasts, set up the next shell command's sandbox in ``cwd`` unless one waits already (or
        the environment makes bash run code as it starts: such a command is never held). Any failure leaves none:
        the next call starts its own, and says why."""
        slot = self._ahead
        if not slot.drives or not self._plain() or starts_code(self.env_allow) or not _on_main_thread():
            return
        with slot.lock:
            if slot.drives and slot.idle is None:  # (the drive may have ended since: it stops what it finds)
                slot.idle = self._ahead_box(workspace, cwd, resolved)

    def _ahead_box(self, workspace: Path, cwd: Path, resolved: str | None) -> Ahead | None:
        """bubblewrap started on the flags a call in ``cwd`` would be given now, its shell writing the start byte and
        then waiting for the command (:func:`.warm.line`, with the limits it is sent)."""
        hold = Hold(_nothing)
        start_r, start_w = os.pipe()
        try:
            flags = self.argv([], workspace=workspace, cwd=cwd, resolved=resolved)
            walks = self._walks(workspace)
            env = self.env(None)
            shell = f"printf . >&{start_w} && exec {start_w}>&- || exit 126; {warmth.line(hold.r)}"
            argv = [*flags, "/bin/bash", "-c", shell, "bash"]
            spawned = spawn(argv, cwd=cwd, env=env, pass_fds=(start_w,), new_session=False, hold=hold)
        except Exception:  # after the command's end: nothing set up ahead, the next call starts its own
            hold.close()
            os.close(start_r)
            return None
        finally:
            os.close(start_w)
        return Ahead(spawned, hold, start_r, flags, env, warmth.inode(workspace), walks, argv)

    def _trampoline(
        self,
        command: str | Sequence[str],
        timeout_s: float,
        secrets: Sequence[tuple[str, int]],
        start_w: int,
        proxy: EgressProxy | None,
        hold: Hold | None,
    ) -> list[str]:
        """What bubblewrap runs inside the sandbox: a bash (not sh: dash cannot redirect descriptors above 9) that
        applies the rlimits as builtins (no ``preexec_fn``: Python can then vfork), writes the carried secret
        files from their pipes (a value is never in an argv or on a host disk), starts the egress bridge, writes
        the start byte, waits for tether's go when held, and then runs the command on the lines after its own
        (the command's lines numbered as unheld)."""
        limits = self.limits.ulimit_script(timeout_s, unprivileged=True)
        unpack = "".join(
            f"(umask 0277 && cat <&{fd} >{shlex.quote(f'{SECRETS_DIR}/{name}')}) && exec {fd}<&- && "
            for name, fd in secrets
        )
        start = f"printf . >&{start_w} && exec {start_w}>&-"
        if proxy is not None:  # the bridge listens before the command starts; if it cannot, nothing starts
            bridge = shlex.join(bridge_command(f"{SANDBOX_SOCKET_DIR}/{proxy.socket_path.name}", SANDBOX_PORT))
            start = f"{bridge} {start_w}>&- && {start}"
        held = f"; {hold.line()}" if hold is not None else ""
        if isinstance(command, str):
            # A shell command runs in the trampoline's own bash, on the lines after it (as local runs its limits
            # line): a second bash would cost more than bubblewrap's own setup adds to a `true`.
            return ["/bin/bash", "-c", f"{limits}; {unpack}{start} || exit 126{held}\n{command}", "bash"]
        script = f'{limits}; {unpack}{start} || exit 126{held}\nexec "$@"'
        return ["/bin/bash", "-c", script, "tether", *to_argv(command)]

    def _spawn(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        timeout_s: float,
        pass_fds: Sequence[int],
        hold: Hold | None,
        ahead: Ahead | None = None,
        then: tuple[Path, str | None] | None = None,
    ) -> Captured:
        """Run bubblewrap's ``argv`` (or the sandbox set up ``ahead``) as the one command of this process
        (:class:`.reaper.Leftovers`): if tether is a subreaper, bubblewrap's inner process may come back to it, and is
        reaped with the rest. ``then``: the workspace (and its resolution) in which, while :meth:`warm` lasts, the
        next command's sandbox is set up once this one has ended, under the reaper's lock (so that no other thread's
        command takes it for a leftover)."""
        try:
            with Leftovers() as leftovers:
                if ahead is not None:  # the command's own process: started before, but no bystander
                    leftovers.before.discard(ahead.pid)
                if hold is not None:  # what the commit starts (a sink's process) is not the command's
                    hold.before = leftovers.after(hold.before, hold.held_pid)

                def kill(proc: subprocess.Popen[bytes]) -> None:
                    kill_group(proc)
                    leftovers.reap(proc.pid)

                try:
                    return run_captured(
                        argv,
                        cwd=cwd,
                        env=env,
                        timeout_s=timeout_s,
                        cap=self.cap,
                        kill=kill,
                        pass_fds=pass_fds,
                        new_session=False,  # the command gets its own from --new-session
                        hold=hold,
                        spawned=None if ahead is None else ahead.spawned,
                    )
                finally:
                    if then is not None:
                        self._set_up_next(then[0], cwd, then[1])
        except (FileNotFoundError, PermissionError) as e:
            raise SandboxUnavailable(f"cannot start bubblewrap ({self.exe}): {e}", fix=INSTALL_FIX) from e

    def could_read(self, path: Path) -> bool:
        """Could a command in this sandbox read the host file ``path`` (resolved)? It is mounted (system
        directories, tether's interpreter, the workspace) and its mode lets the sandbox user read it."""
        roots = [*SYSTEM_RO, *SYSTEM_RO_TRY, *MERGED_USR, *map(str, self.ro_paths)]
        if self.workspace is not None:
            roots.append(str(self.workspace))
        if not is_under(path, roots):
            return False
        try:
            st = path.stat()
        except OSError:
            return False  # nothing there to read (the broker's read then fails, naming the path)
        return bool(
            st.st_mode & stat.S_IROTH
            or (st.st_uid == self.user.uid and st.st_mode & stat.S_IRUSR)
            or (st.st_gid == self.user.gid and st.st_mode & stat.S_IRGRP)
        )

    def _secrets_tmpfs(self) -> list[str]:
        """The private tmpfs the carried files go on. The sandbox user writes them (its own, 0400); privileged,
        the tmpfs itself is root's, so it is sticky and open to that user."""
        return ["--perms", "1777" if self.privileged else "0700", "--tmpfs", SECRETS_DIR] if self.carried.files else []

    def _secret_pipes(self) -> list[tuple[str, int]]:
        """A pipe per carried file, filled and closed for writing: (file name, read end to pass on)."""
        out: list[tuple[str, int]] = []
        try:
            for name, data in self.carried.files.items():
                r, w = os.pipe()
                out.append((name, r))
                try:
                    os.write(w, data)  # below the pipe's capacity (the broker's MAX_SECRET): never blocks
                finally:
                    os.close(w)
        except OSError:
            for _, fd in out:
                os.close(fd)
            raise
        return out


def _on_main_thread() -> bool:
    """Whether this is the process's main thread. bubblewrap's ``--die-with-parent`` is the death of the *thread*
    that started it: a sandbox set up ahead from a thread that ends before its command comes would be killed then,
    in the middle of its set-up maybe, which can leave its inner process waiting for good. The main thread lives as
    long as the process."""
    return threading.current_thread() is threading.main_thread()


def _nothing() -> None:
    """A sandbox set up ahead's ``before`` until a call gives it its own."""


def wrote_byte(fd: int) -> bool:
    """Whether the start pipe's read end ``fd`` holds the trampoline's byte (read without waiting)."""
    os.set_blocking(fd, False)
    try:
        return bool(os.read(fd, 1))
    except BlockingIOError:
        return False


def take_egress(sandbox: object) -> list[EgressAttempted]:
    """The connection attempts a sandbox's commands made since the last call (a sandbox without a proxy: none)."""
    if not isinstance(sandbox, BwrapSandbox):
        return []
    taken, sandbox.egress_attempts = sandbox.egress_attempts, []
    return taken


def for_call(sandbox: S, call_id: str, secrets: Sequence[tuple[str, Sequence[str]]] = ()) -> S:
    """``sandbox`` for one tool call (see :meth:`BwrapSandbox.for_call`); any other sandbox as it is."""
    return sandbox.for_call(call_id, secrets) if isinstance(sandbox, BwrapSandbox) else sandbox  # type: ignore[return-value]


def probe(user: str | None = None) -> SandboxUnavailable | None:
    """Start a real sandbox running ``true``; the error (with its fix) if that fails, else ``None``."""
    try:
        sandbox = BwrapSandbox(None, ro_paths=[], user=user)
        with tempfile.TemporaryDirectory(prefix="tether-bwrap-probe-") as d:
            receipt = sandbox.run(["true"], cwd=Path(d), timeout_s=10)
    except SandboxUnavailable as e:
        return e
    if not receipt.ok:
        return SandboxUnavailable(
            f"bubblewrap probe `true` failed with exit {receipt.exit_code}: {receipt.stderr.strip()}", fix=USERNS_FIX
        )
    return None


def bwrap_available(user: str | None = None) -> str | None:
    """``None`` if a bubblewrap sandbox can really start here (probed by running ``true``), else the reason."""
    error = probe(user)
    return None if error is None else str(error)


__all__ = [
    "BwrapSandbox",
    "Carried",
    "SandboxUser",
    "bwrap_available",
    "for_call",
    "interpreter_paths",
    "probe",
    "resolve_user",
    "take_egress",
]
