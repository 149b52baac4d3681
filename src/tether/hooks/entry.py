"""``tether hook claude-code|codex``: the command another agent runs before and after its tool calls.

Standard library only until it must decide in-process: this is the whole cost of a call a daemon answers.
Order: read stdin (bounded), ask the user's daemon (:mod:`tether.hooks.client`; the daemon checks the input),
else check it (:func:`tether.hooks.wire.parse`) and decide here, then, when no daemon answered, start one. Whatever
goes wrong is answered with a refusal (exit 2), never with an exit code the agent reads as "no objection".

Options: ``--envelope FILE`` (else ``$TETHER_ENVELOPE``), ``--db FILE|URL`` (else ``$TETHER_DB``), ``--no-daemon``
(decide in-process; also ``TETHER_HOOK_DAEMON=0``). ``tether hook install|uninstall …`` writes the agent's
settings; ``tether hook status`` checks them.
"""

from __future__ import annotations

import gc
import os
import sys

from .wire import (
    AGENTS,
    MAX_INPUT_BYTES,
    MAX_RECEIPT_BYTES,
    SHELL_TOOLS,
    HookInputError,
    Reply,
    parse,
    parse_receipt,
    refuse,
)

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from typing import Any, NoReturn

USAGE = (
    "usage: tether hook {claude-code|codex} [--envelope FILE] [--db FILE|URL] [--no-daemon] < HOOK_JSON\n"
    "       tether hook install {claude-code|codex} [--project|--user|--managed [--lock] [--managed-dir DIR]]"
    " [--envelope FILE] [--dir DIR]\n"
    "       tether hook uninstall {claude-code|codex} [--project|--user|--managed [--managed-dir DIR]] [--dir DIR]\n"
    "       tether hook status [claude-code|codex] [--dir DIR] [--managed-dir DIR] [--json]"
)


def manage(argv: list[str]) -> int:
    """``tether hook install|uninstall|status …``: settings, not a hook call (their exit codes are their own)."""
    if argv[0] == "status":
        from .status import main as status

        return status(argv[1:])
    from .install import main as install
    from .install import uninstall_main

    code: int = (install if argv[0] == "install" else uninstall_main)(argv[1:])
    return code


def located(value: str) -> str:
    """A file as an absolute path; a store URL (``postgresql://…``) as given."""
    return value if "://" in value else os.path.abspath(value)


def options(argv: list[str]) -> tuple[dict[str, str], bool]:
    """The request settings (absolute paths) and whether a daemon may answer; ValueError on a bad flag."""
    if not argv or argv[0] not in AGENTS:
        raise ValueError(f"the agent must be one of {', '.join(AGENTS)}")
    request = {"agent": argv[0]}
    daemon = os.environ.get("TETHER_HOOK_DAEMON", "1") != "0"
    rest = argv[1:]
    while rest:
        flag = rest.pop(0)
        if flag == "--no-daemon":
            daemon = False
        elif flag in ("--envelope", "--db") and rest:
            request[flag[2:]] = located(rest.pop(0))
        else:
            raise ValueError(f"unknown or incomplete option {flag!r}")
    for key, var in (("envelope", "TETHER_ENVELOPE"), ("db", "TETHER_DB")):
        if key not in request and os.environ.get(var):
            request[key] = located(os.environ[var])
    if os.environ.get("CLAUDE_PROJECT_DIR"):
        request["project"] = os.path.abspath(os.environ["CLAUDE_PROJECT_DIR"])
    return request, daemon


def write(out: Reply) -> int:
    if out.stdout:
        sys.stdout.write(out.stdout + "\n")
    if out.stderr:
        sys.stderr.write(out.stderr)
    sys.stdout.flush()
    return out.exit


def full_path(lean: bool = False) -> None:
    """Load ``site`` when the launcher started Python without it (``-S``): deciding needs site-packages. ``lean``
    (a call that may take the plain path): only the directories ``site`` would append, when that is all it would
    do (:func:`tether.hooks.leansite.lean`: no ``.pth`` code but setuptools' ``distutils`` line, no
    ``sitecustomize``); else ``site`` itself, once (a large receipt loads it before it is read)."""
    global _site_loaded
    if sys.flags.no_site and not _site_loaded:
        if lean:
            from .leansite import lean as lean_site

            if lean_site():
                return
        import site

        site.main()
        _site_loaded = True


_site_loaded = False


#: The hook events whose calls the gate judges (``Guard.check``): the others record only, and do not import it.
GATED = frozenset({"PreToolUse"})
#: pydantic's plugin loader, which this process replaces by one that finds none (:func:`no_pydantic_plugins`).
PLUGIN_LOADER = "pydantic.plugin._loader"


def no_pydantic_plugins() -> None:
    """No pydantic plugins in a hook process that decides: tether has none, and looking for them costs.

    ``PYDANTIC_DISABLE_PLUGINS=__all__`` spares the scan of every installed distribution's entry points (~8 ms a
    call); sandboxed commands do not inherit it (their environment is allowlisted). With it set, pydantic's
    loader's one function, ``get_plugins``, returns ``()`` at once, yet importing the loader still imports
    ``importlib.metadata`` (with zipfile, email, csv, socket: ~14 ms of CPU). So, when plugins are disabled this
    way and pydantic has not loaded its loader yet, the loader is a module whose ``get_plugins`` returns ``()``:
    what the real one returns under that setting. pydantic imports it in one place, ``from ._loader import
    get_plugins`` (``tests/hooks/test_cold_path.py`` checks that the installed pydantic still does).
    """
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    if os.environ["PYDANTIC_DISABLE_PLUGINS"] != "__all__" or PLUGIN_LOADER in sys.modules:
        return
    loader = type(sys)(PLUGIN_LOADER, "pydantic's plugin loader, plugins disabled: tether.hooks.entry")
    loader.get_plugins = _no_plugins  # type: ignore[attr-defined]
    sys.modules[PLUGIN_LOADER] = loader


def _no_plugins() -> tuple[()]:
    return ()


def import_deciding_code(gate: bool = True, shell: bool = True, collecting: bool | None = None) -> None:
    """Import the deciding code (:mod:`.answer`) with the cyclic garbage collector paused, then freeze what it made.
    ``gate``: the gate too (``guard.session.load_gate``), which only a call the gate judges needs (a PreToolUse);
    one that records (PostToolUse, a prompt, a stop) does without it, a tenth of a cold call, and imports the
    control layer instead (``guard.session.load_observer``: a receipt's view of it), which a PreToolUse does
    without (it reads the control state from the run state). ``shell``: with the gate, the shell's reading
    (``policy/shellgate.py``), which only a call of a tool that runs a command line needs.

    Importing it builds ~300 modules and their classes: long-lived objects, no garbage to find, yet the
    collector walked them dozens of times on the way, and again at every later collection of the call and at
    exit (~80 M instructions of a cold call, ~6 %). So, the first time in a process, the collector is paused
    for the import and what exists then is moved out of its reach for good (``gc.freeze``, as the daemon does
    with its imports: they live as long as the process anyway); then it is enabled as it was, for the call.
    Reference counting frees memory as ever. ``tests/hooks/test_cold_path.py`` checks the collector is restored.
    ``collecting``: the caller paused the collector before this process imported anything of tether (the launcher:
    :func:`main`'s ``collecting``) and had it enabled or not; so the imports before these (``typing``,
    ``contextlib``, ``json``, the plain records: ~5 young collections, ~3 M instructions) are not
    walked either, and are frozen with these.

    The libraries imported here on the full path (pydantic, annotated_types; pathspec later, at a pattern
    tether.wildmatch declines) make their dataclasses, and the standard ``dataclass`` compiles each method it
    writes (~0.5 M instructions each): during this import, ``dataclasses.dataclass`` is :mod:`tether.records`'
    maker (``standing_in``), which compiles only ``__init__`` and falls back to the standard one for what it does
    not mirror; the standard one is back as soon as the import ends, also when it fails. A plain process imports
    no such library and not ``dataclasses`` either (tether's classes: :mod:`tether.recordmaker`).
    ``tests/hooks/test_cold_dataclasses.py`` compares every class made here both ways. Meanwhile tether's own
    modules are found without the import system's walk (:class:`.finder.OwnFinder`, on Python 3.11; in a hook's own
    process, the one :func:`decide` put first, with their code: :mod:`.modulecode`).
    """
    if (
        "tether.hooks.answer" in sys.modules
        and ("tether.policy.gate" if gate else "tether.control.loop") in sys.modules
    ):
        return  # imported already (main called in-process again): as it is
    from .finder import OwnFinder

    enabled = gc.isenabled() if collecting is None else collecting
    gc.disable()
    try:
        with OwnFinder():
            from tether.records import standing_in

            with standing_in():
                from tether.guard.session import load_gate, load_observer

                from . import answer  # noqa: F401

                load_gate(shell) if gate else load_observer()
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


#: The hook events a cold call may answer on the plain path (tether/plain.py): the gated one, and those that come as
#: often and only record (a receipt after every tool call, a prompt). Not a SessionStart: it mostly begins a run,
#: which is created on the full path, so the plain attempt would only add to it (likewise a stop runs sensors).
PLAIN_EVENTS = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure", "UserPromptSubmit"})
#: ``TETHER_HOOK_PLAIN=0``: never the plain path (what a call the plain path was unsure of runs again with).
PLAIN_VAR = "TETHER_HOOK_PLAIN"


def plain_fits(request: dict[str, str], data: dict[str, Any]) -> bool:
    """May this call try the plain path (decided without pydantic: tether/plain.py)? One of
    :data:`PLAIN_EVENTS`, plain not switched off, a store that is a file, and beside it a folder holding a kept
    envelope (guard/envcache.py), as every call after a session's first finds. Only a cheap look: whatever the call
    then finds (another envelope's file, a run not created yet) that the plain path cannot vouch for runs it again
    on the full path."""
    if data.get("hook_event_name") not in PLAIN_EVENTS or os.environ.get(PLAIN_VAR, "1") == "0":
        return False
    db = request.get("db")
    if db is None:
        project = request.get("project") or os.path.realpath(str(data.get("cwd", "")))  # a hint: after a cd (the
        # session's project pinned elsewhere: hooks/pin.py) the full path decides, with the pin
        db = os.path.join(project, ".tether", "tether.db")
    elif "://" in db:
        return False
    try:
        with os.scandir(db + ".folds") as entries:
            return any(e.name.endswith(".env") for e in entries)
    except OSError:
        return False


def full_again(raw: bytes) -> NoReturn:
    """Run this very command again on the full path (``TETHER_HOOK_PLAIN=0``), in this process (``execve``), its
    input replayed from an anonymous file that becomes its stdin: what the plain path was unsure of before it
    wrote anything. Its output, not yet written, is the new program's."""
    try:
        fd = os.memfd_create("tether-hook-input")
    except (AttributeError, OSError):  # not Linux, or no memfd: an unnamed temporary file
        import tempfile

        with tempfile.TemporaryFile() as f:
            fd = os.dup(f.fileno())
    view = memoryview(raw)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    os.dup2(fd, 0)
    os.close(fd)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, sys.orig_argv, {**os.environ, PLAIN_VAR: "0"})


def decide(
    request: dict[str, str], data: dict[str, Any], raw: bytes, own_process: bool, collecting: bool | None = None
) -> Reply:
    """Decide in this process: on the plain path when the call fits it and the process is the hook's own (which
    :func:`full_again` may replace), else on the full path, with pydantic. ``collecting``: :func:`main`'s."""
    gated = data.get("hook_event_name") in GATED
    shell = gated and data.get("tool_name") in SHELL_TOOLS
    fits = own_process and plain_fits(request, data)
    if own_process:  # the modules' code from one file from here on (and kept there at exit), a table for each kind
        from .finder import install  # of call: the rare full path's modules would weigh on every plain call's read

        install(("gate-shell" if shell else "gate" if gated else "observe") + ("" if fits else "-full"))
    from tether import plain

    full_path(lean=fits)
    if not (fits and plain.choose()):
        no_pydantic_plugins()
    try:
        import_deciding_code(gate=gated, shell=shell, collecting=collecting)
        from .answer import answer

        return answer(request, data)
    except plain.Unsure as why:
        if plain.wrote:  # the call's events may be in the log: never run it twice; refuse (fail closed)
            return refuse(f"tether hook: the plain path was unsure after it wrote: {why}")
        full_again(raw)


#: The exit status CPython gives a process whose standard streams fail to flush at its end (``Py_RunMain``).
FLUSH_FAILED = 120


def finish(code: int) -> NoReturn:
    """End a process that is the hook's own (the launcher, the ``tether`` console command) with ``code``, at once.

    Its reply is out: what the interpreter would free at exit matters to no one, and freeing a cold call's loaded
    state cost ~10 ms of CPU. So, what a normal exit does that someone sees is done here, in its order, and then
    ``os._exit``: the ``atexit`` handlers (:mod:`tether.compiled` registers one that writes its code cache), the
    standard streams flushed (a failure, a reader that closed the pipe, gives CPython's status at exit, 120, and
    its message), every store the call kept closed explicitly (:func:`.session.release`: no finalizer runs after
    ``os._exit``). The trial children are reaped where they are made (``try``/``finally``) and files written are
    closed by ``with``, as before. A process with another thread still running (none is started on this path)
    exits the normal way, which waits for it. Never for ``main`` called in-process (tests, the daemon)."""
    import _thread

    if _thread._count():  # threads still running besides this one, threading's and _thread's alike
        sys.exit(code)
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        code = _flushed(stream, code)
    session = sys.modules.get("tether.hooks.session")
    if session is not None:
        session.release()
    os._exit(code)


def _flushed(stream: Any, code: int) -> int:
    """``code``, or :data:`FLUSH_FAILED` when ``stream`` (open) fails to flush, as CPython's exit reports it."""
    if stream is None or getattr(stream, "closed", True):
        return code
    try:
        stream.flush()
    except Exception as e:  # a closed pipe above all: the status CPython would give
        if stream is sys.stdout:
            try:
                sys.stderr.write(f"Exception ignored in: {stream!r}\n{type(e).__name__}: {e}\n")
                sys.stderr.flush()
            except Exception:  # nowhere left to say it
                pass
        return FLUSH_FAILED
    return code


def main(
    argv: list[str], raw: bytes | None = None, *, own_process: bool = False, collecting: bool | None = None
) -> int:
    """Run one hook call; the return value is the exit code. ``raw``: the input, when the launcher's relay
    (:mod:`.relay`) already read it from stdin. ``own_process``: this process runs the hook alone (the launcher,
    the ``tether`` console command), so a call the plain path is unsure of may replace it (:func:`full_again`).
    ``collecting``: the caller (the launcher) paused the cyclic collector before it imported this module, and
    whether it was enabled before: it stays paused until the deciding code is imported and frozen
    (:func:`import_deciding_code`), then is as it was, also when the call returns without deciding here."""
    try:
        return _main(argv, raw, own_process, collecting)
    finally:
        if collecting and not gc.isenabled():
            gc.enable()


def _main(argv: list[str], raw: bytes | None, own_process: bool, collecting: bool | None) -> int:
    try:
        if argv[:1] in (["install"], ["uninstall"], ["status"]):
            return manage(argv)
        try:
            request, daemon = options(argv)
        except ValueError as e:
            return write(refuse(f"{e}\n{USAGE}"))
        if raw is None:
            raw = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
        large = len(raw) > MAX_INPUT_BYTES  # a tool's receipt, perhaps: read whole here, never by the daemon
        if large:
            raw += sys.stdin.buffer.read(MAX_RECEIPT_BYTES + 1 - len(raw))
        absent = None
        if daemon and not large:
            from .client import NoDaemon, ask

            answered = ask(request, raw)
            if isinstance(answered, Reply):
                return write(answered)
            absent = answered if isinstance(answered, NoDaemon) else None
        try:
            if large:
                full_path()  # the stream's reader (ijson) is in site-packages
            try:
                data = parse_receipt(raw) if large else parse(raw)
            except HookInputError as e:
                return write(refuse(str(e)))
            return write(decide(request, data, raw, own_process, collecting))
        finally:
            if absent is not None:  # once the reply is out: its start-up would have taken the decision's CPU
                absent.start()
    except BaseException as e:  # anything at all: refuse, never exit 1 (which lets the call through)
        return write(refuse(f"tether hook failed: {type(e).__name__}: {e}"))
