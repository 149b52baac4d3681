"""Where a path really points, and what the envelope says about that place.

The only I/O in the policy package lives here: ``os.path.realpath`` resolves symlinks and
``..`` against the real file system, so a link inside the workspace that points at ``/etc``
is judged as ``/etc``. Everything else is string work.

Verdicts on places (rule ids in brackets):

* writes outside the workspace [``path:write-outside``], into the workspace but outside
  ``environment.filesystem.write`` [``path:not-writable``], into ``filesystem.deny``
  [``path:denied``] are DENY;
* writes into ``.git/``, ``.tether/`` or hook directories [``path:protected``] are DENY;
  writes to other dotfiles / dot-directories [``path:dotfile``] are DENY by default (a file
  tool's explicit allow rule for that path may lift it; see the gate);
* shell start-up files [``path:startup-file``], credential files [``path:credential``] and
  devices [``path:device``, ``shell:dev-tcp``] are DENY for writes, credential files also for reads;
* a target that cannot be known before running (``$X``, unknown cwd, a path through a process's own view such
  as ``/proc/self/cwd``, which is the deciding process's here and the command's when it runs) is ASK
  [``path:unknown``].

``filesystem`` not stated (``None``) means: the whole workspace is readable, nothing is writable.
"""

from __future__ import annotations

import os
from _collections_abc import Callable  # collections.abc's, without the collections package
from contextvars import ContextVar, Token
from fnmatch import fnmatchcase

from tether import places
from tether.envelope.schema import Filesystem
from tether.memo import cached_property
from tether.records import dataclass

from .command import shell_tilde
from .decision import Finding, Layer, Verdict
from .globs import GitIgnoreSpec, GlobSet

_HOMES = ("{home}", "/root", "/home/*")

_CREDENTIAL_IN_HOME = (
    ".ssh",
    ".ssh/*",
    ".aws/*",
    ".gnupg/*",
    ".config/gcloud/*",
    ".azure/*",
    ".kube/*",
    ".docker/config.json",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".git-credentials",
    ".config/gh/*",
    ".config/hub",
    ".password-store/*",
    ".bash_history",
    ".zsh_history",
    ".python_history",
    ".psql_history",
    ".mysql_history",
    ".pgpass",
    ".local/share/keyrings/*",
    ".vault-token",
    ".terraform.d/credentials*",
    ".cargo/credentials*",
    ".boto",
    ".s3cfg",
    ".config/rclone/*",
)
_CREDENTIAL_ABSOLUTE = (
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d/*",
    "/etc/ssh/*_key",
    "/etc/ssl/private/*",
    "/proc/*/environ",
    "/root/*",
    "*/id_rsa",
    "*/id_rsa.*",
    "*/id_dsa",
    "*/id_ecdsa",
    "*/id_ed25519",
    "*/id_ed25519.*",
    "*.pem.key",
)
_STARTUP_IN_HOME = (
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zprofile",
    ".zshenv",
    ".zlogin",
    ".config/fish/*",
    ".config/autostart/*",
    ".gitconfig",
    ".pam_environment",
    ".inputrc",
    ".ssh/authorized_keys",
    ".ssh/config",
)
_STARTUP_ABSOLUTE = (
    "/etc/profile",
    "/etc/profile.d/*",
    "/etc/bash.bashrc",
    "/etc/bashrc",
    "/etc/environment",
    "/etc/zsh/*",
    "/etc/crontab",
    "/etc/cron*",
    "/var/spool/cron/*",
    "/etc/ld.so.preload",
    "/etc/rc.local",
    "/etc/systemd/*",
    "/etc/passwd",
    "/etc/group",
)
_HARMLESS_DEVICES = frozenset(
    {"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/tty", "/dev/zero", "/dev/random", "/dev/urandom"}
)
_HOOK_DIRS = (".git", ".tether", ".husky", ".githooks")
#: The names of what :meth:`PathPolicy.write` protects wherever they stand in a path (shell.py reads them too).
PROTECTED_NAMES = _HOOK_DIRS
_PROTECTED = "version control, tether's log or a hook directory"
#: What a process's own entry in /proc leads to in its own view: its directory, its root, its program, its maps.
_PROCESS_LINKS = ("cwd", "root", "exe", "map_files")


def _process_view(path: str) -> bool:
    """A path through a process's own view of the file system (``/proc/self/cwd/x``, ``/proc/<pid>/root/…``, a
    directory descriptor's ``/dev/fd/N/x``) names a place in the process that opens it: the agent's shell, or the
    sandboxed command, not the process deciding (a daemon's directory is not the shell's). ``/proc/self/fd/N`` and
    ``/dev/fd/N`` themselves, and the process's own files (``environ``), are judged as they resolve."""
    parts = path.split("/")[1:]
    if parts[:2] == ["dev", "fd"]:
        return len(parts) > 3
    if len(parts) < 3 or parts[0] != "proc" or not (parts[1] in ("self", "thread-self") or parts[1].isdigit()):
        return False
    rest = parts[2:]
    if rest[0] == "task" and len(rest) > 2:
        rest = rest[2:]
    return rest[0] in _PROCESS_LINKS or (rest[0] == "fd" and len(rest) > 2)


#: Entries the walks of one decision look at in all (:class:`WalkBudget`): a command naming one large folder a
#: thousand times (``rm -rf src src …``) walked it a thousand times, for longer than a hook call may take.
DECISION_WALK = 20_000


class WalkBudget:
    """What the folder walks of one decision may still look at, and each folder's answer so far: a folder named
    again is answered from here, and past the budget a walk stops as one past its own limit does (the pattern
    that may match: fail closed). Set for a decision by :func:`walking`; none set: each walk has only its limit."""

    def __init__(self, entries: int = DECISION_WALK) -> None:
        self.left = entries
        self.answers: dict[tuple[object, ...], object] = {}


TYPE_CHECKING = False  # not typing's: deciding imports no typing
if TYPE_CHECKING:
    from typing import TypeVar

    #: A walk's answer: a place or a sentence (:meth:`PathPolicy.deny_within`), or a verdict (``protected_within``).
    _A = TypeVar("_A")

_BUDGET: ContextVar[WalkBudget | None] = ContextVar("tether_walk_budget", default=None)


def walking(budget: WalkBudget | None) -> Token[WalkBudget | None]:
    """Make ``budget`` the current decision's (a token for :func:`done_walking`); per thread, as a context is."""
    return _BUDGET.set(budget)


def done_walking(token: Token[WalkBudget | None]) -> None:
    _BUDGET.reset(token)


def _budgeted(key: tuple[object, ...], limit: int, walk: Callable[[int], tuple[_A, int]]) -> _A:
    """A walk's answer within the current decision's budget: given before (``key``), or walked with at most
    ``limit`` entries, fewer when the budget has fewer left (``walk(cap)``: its answer, and the entries it saw)."""
    budget = _BUDGET.get()
    if budget is not None and key in budget.answers:
        return budget.answers[key]  # type: ignore[return-value]  # the key's kind says which walk answered it
    cap = limit if budget is None else min(limit, budget.left)
    answer, seen = walk(cap)
    if budget is not None:
        budget.left -= min(seen, cap)
        budget.answers[key] = answer
    return answer


#: Directories whose recursive contents include credentials (archiving ``~`` reads ``~/.ssh``).
_CREDENTIAL_ROOTS = ("/", "/root", "/home", "/home/*", "{home}", "/etc")


def _unsure(why: str) -> PlaceVerdict:
    """:meth:`PathPolicy.protected_within`'s ASK: whether a tree holds a protected entry is not known (``why``)."""
    return PlaceVerdict("path:protected", Verdict.ASK, f"whether it holds {_PROTECTED} is not known: {why}")


def _raise(error: OSError) -> None:
    raise error


def _entries_named(folder: str, dot: bool, part: str) -> list[tuple[str, bool]]:
    """The entries of ``folder`` the glob component ``part`` names, a leading dot matched as any other character and
    letters in either case, each with whether that took a shell option — ``dotglob`` (a name with a leading dot, a
    pattern without one), ``nocaseglob`` (``?TETHER`` names ``.tether``) — or ``dot`` already did. Nothing when
    ``folder`` is not a folder (the shell names nothing under a file)."""
    if not os.path.isdir(folder):
        return []
    literal_dot = part.startswith(".")
    folded = part.lower()
    with os.scandir(folder) as it:
        return [
            (os.path.join(folder, e.name), dot or (e.name.startswith(".") and not literal_dot) or not exact)
            for e in it
            if (exact := fnmatchcase(e.name, part)) or fnmatchcase(e.name.lower(), folded)
        ]


def _below(folder: str, dot: bool, limit: int, files: bool) -> list[tuple[str, bool]]:
    """``**`` under ``globstar``: ``folder`` and every folder below it (links to folders not followed, as bash's
    globstar does not), and with ``files`` (``**`` last) every other entry too, each with whether ``dotglob`` was
    needed on the way; stops once more than ``limit`` are found."""
    if not os.path.isdir(folder):
        return []
    out, folders = [(folder, dot)], [(folder, dot)]
    for top, top_dot in folders:  # grows as folders are found
        with os.scandir(top) as it:
            for e in it:
                named = (e.path, top_dot or e.name.startswith("."))
                if e.is_dir(follow_symlinks=False):
                    folders.append(named)
                    out.append(named)
                elif files:
                    out.append(named)
        if len(out) > limit:
            break
    return out


def _expand(patterns: tuple[str, ...], home: str) -> tuple[str, ...]:
    out: list[str] = []
    for p in patterns:
        if p.startswith("{home}"):
            out.append(p.replace("{home}", home))
        else:
            out.append(p)
    return tuple(out)


def _in_homes(patterns: tuple[str, ...], home: str) -> tuple[str, ...]:
    return tuple(f"{h.replace('{home}', home)}/{p}" for h in _HOMES for p in patterns)


@dataclass(frozen=True)
class PlaceVerdict:
    """The verdict of a path rule on a place, and the rule."""

    rule_id: str
    verdict: Verdict
    reason: str

    def finding(self, prefix: str = "") -> Finding:
        """This verdict as the gate's finding: a path rule is a hard one, no user rule lifts it."""
        return Finding.of(Layer.HARD, self.rule_id, self.verdict, prefix + self.reason)


class PathPolicy:
    """Judges places for one workspace and one ``filesystem`` section."""

    def __init__(self, workspace: str | os.PathLike[str], filesystem: Filesystem | None) -> None:
        self.workspace = places.place(os.path.realpath(workspace))
        self.filesystem = filesystem
        self.home = os.path.expanduser("~")
        self._credential = _in_homes(_CREDENTIAL_IN_HOME, self.home) + _CREDENTIAL_ABSOLUTE
        self._startup = _in_homes(_STARTUP_IN_HOME, self.home) + _STARTUP_ABSOLUTE
        self._cred_roots = _expand(_CREDENTIAL_ROOTS, self.home)
        self._credential_globs = GlobSet(self._credential)
        self._startup_globs = GlobSet(self._startup)

    @cached_property
    def _read_spec(self) -> GitIgnoreSpec | None:
        fs = self.filesystem
        return None if fs is None else GitIgnoreSpec(fs.read)

    @cached_property
    def _write_spec(self) -> GitIgnoreSpec | None:
        fs = self.filesystem
        return None if fs is None else GitIgnoreSpec(fs.write)

    @cached_property
    def _deny_spec(self) -> GitIgnoreSpec | None:
        fs = self.filesystem
        return None if fs is None or not fs.deny else GitIgnoreSpec(fs.deny)

    # -- resolution -------------------------------------------------------------------------

    def expand_user(self, text: str) -> str:
        if text == "~" or text.startswith("~/"):
            return self.home + text[1:]
        if shell_tilde(text) is not None:
            return ""  # the shell's PWD, OLDPWD or directory stack: not known here (unknown, as ``$X``)
        if text.startswith("~"):
            user, _, rest = text[1:].partition("/")
            base = "/root" if user == "root" else f"/home/{user}"
            return base + ("/" + rest if rest else "")
        return text

    def resolve(self, text: str, cwd: str | None) -> str | None:
        """Absolute real path of ``text`` as seen from ``cwd``; None when it cannot be known."""
        text = self.expand_user(text)
        if not text:
            return None
        if not text.startswith("/"):
            if cwd is None:
                return None
            text = f"{cwd}/{text}"
        if _process_view(os.path.normpath(text)):
            return None
        try:
            return places.place(os.path.realpath(text))
        except (OSError, ValueError):  # unreadable (/proc/1/root), too long, NUL: the place cannot be known
            return None

    def relative(self, path: str) -> str | None:
        """``path`` relative to the workspace, or None when outside it."""
        return places.relative(path, self.workspace)

    # -- classification ---------------------------------------------------------------------

    def is_credential(self, path: str) -> bool:
        return self._credential_globs.match(path)

    def glob_may_hit_credential(self, pattern: str) -> bool:
        """Could a shell glob such as ``~/.ss*/id_*`` name a credential file?"""
        probes = [p.replace("*", "x") for p in self._credential if "/*/" not in p and not p.startswith("*")]
        probes += [f"{self.home}/.ssh/id_rsa", "/etc/shadow", "/root/.ssh/id_rsa"]
        return any(fnmatchcase(probe, pattern) for probe in probes)

    def holds_credentials(self, path: str) -> bool:
        """A directory whose recursive contents include credential files."""
        return any(fnmatchcase(path, p) for p in self._cred_roots) or self.is_credential(path)

    def is_startup(self, path: str) -> bool:
        return self._startup_globs.match(path)

    def read(self, path: str, *, shell: bool) -> PlaceVerdict | None:
        """Verdict for reading ``path``; None means no objection.

        Shell commands may read outside the workspace (system headers, ``/etc/os-release``);
        file tools may not. Credential files are never readable.
        """
        if self.is_credential(path):
            return PlaceVerdict("path:credential", Verdict.DENY, f"{path} is a credential file")
        rel = self.relative(path)
        if rel is None:
            if shell:
                return None
            return PlaceVerdict("path:read-outside", Verdict.DENY, f"{path} is outside the workspace {self.workspace}")
        if self._deny_spec is not None and self._deny_spec.match_file(rel):
            return PlaceVerdict("path:denied", Verdict.DENY, f"{rel} matches environment.filesystem.deny")
        if self._read_spec is not None and rel != "." and not self._read_spec.match_file(rel):
            return PlaceVerdict("path:not-readable", Verdict.DENY, f"{rel} is not in environment.filesystem.read")
        return None

    def deny_reach(self, path: str) -> str | None:
        """The first ``filesystem.deny`` pattern that may match ``path`` or a file under it, if any.

        For readers that choose files themselves (``grep -r``, ``find -exec``, ``git show``, archivers):
        a pattern without a slash matches at any depth; an anchored one reaches ``path`` when the two
        agree on every leading component (``**`` agrees with anything). A directory above the
        workspace holds all of it.
        """
        fs = self.filesystem
        if fs is None or not fs.deny:
            return None
        rel = self.relative(path)
        if rel is None:
            if not places.within(self.workspace, path):  # a directory above the workspace holds all of it
                return None
            rel = "."
        here = [p for p in places.parts(rel) if p != "."]
        for pattern in fs.deny:
            q = pattern.strip()
            if not q or q.startswith("#") or q.startswith("!"):
                continue
            body = q.strip("/")
            if "/" not in body and not q.startswith("/"):
                return pattern
            parts = body.split("/")
            if all(a == "**" or b == "**" or fnmatchcase(b, a) for a, b in zip(parts, here, strict=False)):
                return pattern
        return None

    def deny_within(self, path: str, limit: int = 4000) -> str | None:
        """A file under the directory ``path`` that ``filesystem.deny`` matches, as it is on disk now, or (more than
        ``limit`` entries to look at, or an unreadable one) :meth:`deny_reach`'s pattern: for a tree deleted, moved
        or changed as a whole (``rm -r``, ``mv DIR``), whose files are there before the command runs. Links are
        not followed (removing one does not touch what it points at)."""
        spec = self._deny_spec
        if spec is None or self.relative(path) is None or self.deny_reach(path) is None:
            return self.deny_reach(path)  # no pattern may match under it: nothing to look at
        return _budgeted(("within", path, limit), limit, lambda cap: self._first_hidden(path, spec, cap))

    def _first_hidden(self, path: str, spec: GitIgnoreSpec, cap: int) -> tuple[str | None, int]:
        """The first file under ``path`` that ``spec`` matches, or past ``cap`` entries :meth:`deny_reach`'s
        pattern; and how many entries were looked at."""
        seen = 0
        for top, dirs, files in os.walk(path, onerror=_raise):
            here = self.relative(places.place(top))  # once a folder: each entry's is this and its name
            prefix = "" if here in (None, ".") else f"{here}/"
            for name in (*dirs, *files):
                seen += 1
                if seen > cap:
                    return self.deny_reach(path), seen
                if spec.match_file(prefix + name):
                    return prefix + name, seen
        return None, seen

    def protected_within(
        self, path: str, limit: int = DECISION_WALK, names: tuple[str, ...] = _HOOK_DIRS
    ) -> PlaceVerdict | None:
        """For a tree deleted, moved or changed as a whole (``rm -r sub``, ``find sub -delete``, ``chmod -R sub``),
        whose every entry the command reaches: DENY when the directory ``path`` holds, at any depth, an entry that
        :meth:`write` protects (``.git``, ``.tether``, a hook directory), as it is on disk now: ``rm -r sub`` deletes
        ``sub/.git`` as surely as the ``rm -r sub/.git`` that is denied. ASK when that is not known: more than
        ``limit`` entries (the folder's own are always all looked at; the decision's whole budget by default, as only
        names are compared: 17,000 entries in ~33 ms), or a folder that cannot be read. Links are not followed
        (removing one does not touch what it points at). ``names``: the protected entries looked for; a ``.git`` left
        out of them is not looked into either (``git clean`` and ``git stash -u`` leave repositories alone)."""
        if self.relative(path) is None:
            return None  # outside the workspace: write() refuses it as such
        key = ("protected", path, limit, names)
        return _budgeted(key, limit, lambda cap: self._protected_walk(path, cap, names))

    def _protected_walk(self, path: str, cap: int, names: tuple[str, ...]) -> tuple[PlaceVerdict | None, int]:
        """:meth:`protected_within`'s answer, and how many entries it looked at: breadth first, so that a folder's own
        entries are all looked at before any deeper one."""
        seen = 0
        queue = [path]
        for top in queue:  # grows as folders are found
            try:
                with os.scandir(top) as it:
                    entries = list(it)
            except OSError:
                return _unsure(f"{self.relative(places.place(top))} cannot be read"), seen
            seen += len(entries)
            for e in entries:
                if e.name in names:
                    held = self.relative(places.place(e.path)) or e.path
                    why = f"it holds {held} (version control, log or hooks)"
                    return PlaceVerdict("path:protected", Verdict.DENY, why), seen
            if seen > cap:
                return _unsure(f"more than {cap} entries, not all looked at"), seen
            queue += [e.path for e in entries if e.name != ".git" and e.is_dir(follow_symlinks=False)]
        return None, seen

    def glob_names(self, pattern: str, cwd: str | None, limit: int = 2000) -> list[tuple[str, bool]] | str:
        """The places the shell glob ``pattern`` (a written place) names as the folders are now, each with whether only
        the shell's ``dotglob`` or ``nocaseglob`` makes it match: with one set (a ``shopt`` before the command, or the
        user's start-up files, which an agent's shell may carry) a wildcard matches a leading dot too, and
        ``?tether/x``, ``[.]git/x`` and ``*/x`` reach ``.tether/x`` and ``.git/x``; or letters match in either case,
        and ``?TETHER`` reaches ``.tether``. ``**`` (``globstar``) names folders at any depth. A sentence
        instead when they cannot all be known: more than ``limit`` places, a folder that cannot be read, no directory.
        :meth:`write` sees only the pattern's text: ``secre?s/key.txt`` is not ``secrets/key.txt`` to it."""
        if not pattern.startswith("/") and cwd is None:
            return "the command's directory is not known"
        named = [("/" if pattern.startswith("/") else cwd or "/", False)]
        parts = [p for p in pattern.split("/") if p not in ("", ".")]
        for i, part in enumerate(parts):
            if not any(c in part for c in "*?["):
                named = [(os.path.join(d, part), dot) for d, dot in named]
                continue
            matcher = part.replace("[^", "[!")  # bash's negation, which fnmatch reads as a literal ^
            found: list[tuple[str, bool]] = []
            for d, dot in named:
                try:
                    if part == "**":
                        found += _below(d, dot, limit, files=i + 1 == len(parts))
                    else:
                        found += _entries_named(d, dot, matcher)
                except OSError:
                    return f"{d}, which it looks into, cannot be read"
                if len(found) > limit:
                    return f"it names more than {limit} places"
            named = found
        return [(p, dot) for p, dot in named if os.path.lexists(p)]

    def hidden_link(self, path: str, depth: int | None = None, limit: int = 4000) -> str | None:
        """A symbolic link under the directory ``path`` (at most ``depth`` levels down) that leads to a file the deny
        list hides or a directory it may reach: for a reader that follows links (``grep -R``, ``tar -h``, a glob,
        files chosen at run time), ``build/l -> ../secrets`` is secrets. Its path relative to the workspace; past
        ``limit`` entries, or a folder that cannot be read, a sentence saying so (it may hold one)."""
        return _budgeted(("link", path, depth), limit, lambda cap: self._link_walk(path, depth, cap))

    def _link_walk(self, path: str, depth: int | None, limit: int) -> tuple[str | None, int]:
        """:meth:`hidden_link`'s answer, and how many entries it looked at."""
        if self._deny_spec is None or self.relative(path) is None or not os.path.isdir(path):
            return None, 0
        seen = 0
        stack = [(path, 1, "")]  # a folder, its level, the link under path it was reached through ("": none)
        visited = {os.path.realpath(path)}  # a folder reached twice (links to it, a loop) is looked at once
        while stack:
            top, level, through = stack.pop()
            try:
                with os.scandir(top) as it:
                    entries = list(it)
            except OSError:
                return f"{top} (which cannot be read)", seen
            seen += len(entries)
            if seen > limit:
                return f"one of the more than {limit} entries under {path}", seen
            for e in entries:
                link = e.is_symlink()
                target = os.path.realpath(e.path) if link else e.path
                if link and self._hides(places.place(target)):
                    return through or self.relative(places.place(e.path)), seen
                # the reader follows a link to a folder, in or out of the workspace, and the links in it
                deeper = (depth is None or level < depth) and (os.path.isdir(target) if link else e.is_dir())
                if deeper and target not in visited:
                    visited.add(target)
                    name = (self.relative(places.place(e.path)) or e.path) if link else ""
                    stack.append((target, level + 1, through or name))
        return None, seen

    def hides(self, path: str) -> bool:
        """Whether ``filesystem.deny`` matches ``path`` (and nothing else is asked: the read set is not compiled)."""
        rel = self.relative(path)
        return rel is not None and self._deny_spec is not None and self._deny_spec.match_file(rel)

    def _hides(self, target: str) -> bool:
        return self.hides(target) or (
            self.relative(target) is not None and os.path.isdir(target) and self.deny_reach(target) is not None
        )

    def write(self, path: str) -> PlaceVerdict | None:
        """Verdict for writing (creating, changing, deleting) ``path``; None means allowed."""
        s = path
        if s.startswith(("/dev/tcp/", "/dev/udp/")):
            return PlaceVerdict("shell:dev-tcp", Verdict.DENY, f"{s} opens a network connection")
        if s in _HARMLESS_DEVICES or s.startswith(("/dev/fd/", "/proc/self/fd/")):
            return None
        if s.startswith("/dev/"):
            return PlaceVerdict("path:device", Verdict.DENY, f"writing to the device {s}")
        if self.is_credential(path):
            return PlaceVerdict("path:credential", Verdict.DENY, f"{s} is a credential file")
        if self.is_startup(path):
            return PlaceVerdict("path:startup-file", Verdict.DENY, f"{s} is a shell start-up or system file")
        rel = self.relative(path)
        if rel is None:
            return PlaceVerdict("path:write-outside", Verdict.DENY, f"{s} is outside the workspace {self.workspace}")
        if rel == ".":
            return PlaceVerdict("path:workspace-root", Verdict.DENY, "the workspace root itself")
        parts = places.parts(rel)
        if any(p in _HOOK_DIRS for p in parts) or (len(parts) > 1 and parts[-2] == "hooks" and ".git" in parts):
            return PlaceVerdict(
                "path:protected", Verdict.DENY, f"{rel} is inside {parts[0]}/ (version control, log or hooks)"
            )
        if self._deny_spec is not None and self._deny_spec.match_file(rel):
            return PlaceVerdict("path:denied", Verdict.DENY, f"{rel} matches environment.filesystem.deny")
        if self._write_spec is None:
            return PlaceVerdict("path:not-writable", Verdict.DENY, "the envelope states no writable paths")
        if not self._write_spec.match_file(rel):
            return PlaceVerdict("path:not-writable", Verdict.DENY, f"{rel} is not in environment.filesystem.write")
        return None

    def dotfile(self, path: str) -> PlaceVerdict | None:
        """Dotfiles and dot-directories inside the workspace are not written by default."""
        rel = self.relative(path)
        if rel is not None and any(p.startswith(".") and p not in (".", "..") for p in places.parts(rel)):
            return PlaceVerdict("path:dotfile", Verdict.DENY, f"{rel} is a dotfile (configuration, CI or secrets)")
        return None
