"""The ``tether`` command run in a process of its own, forked from one that imported it and the model SDKs once.

A run's process spends most of its start-up importing: tether's CLI and kernel (~0.5 s here), the OpenAI SDK
(~0.6 s) and the Anthropic SDK (~1.6-2 s: hundreds of pydantic models). A test file that starts a run per test
against a provider's wire format paid that every time (``tests/kernel/test_providers.py``: ~135 runs). Here a
forkserver (``multiprocessing``) imports them once per test process, and each run is a fresh child of it: its own
pid, its environment exactly the one given (the server's cleared first), its working directory the caller's,
stdin ``/dev/null``, stdout and stderr captured, the console script's exit (``tether.cli.main.script``) and the
exit handlers run at its end, as in ``python -m tether.cli.main``. What is not the same: the imports happened
before the environment was set, so a module that read a variable at import would see the server's (none of
tether's does; ``tests/test_clikit.py`` checks that what a run reads it reads from the run's environment). The
entry point itself stays tested by :func:`started` (the console script started anew) and by the files that start
``python -m tether.cli.main``.
"""

from __future__ import annotations

import atexit
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence

#: What the forkserver imports before it forks a run: the CLI, what ``tether run`` imports, and both SDKs.
PRELOAD = ["tether.cli.main", "tether.cli.run_cmds", "tether.kernel.runtime", "openai", "anthropic"]
#: The console script (``tether``, as installed beside this interpreter).
TETHER = shutil.which("tether", path=os.path.dirname(sys.executable)) or "tether"
_context: multiprocessing.context.ForkServerContext | None = None


def _server() -> multiprocessing.context.ForkServerContext:
    global _context
    if _context is None:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(PRELOAD)
        _context = context
    return _context


def run(
    argv: Sequence[str], env: dict[str, str], *, timeout: float = 120, cwd: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``tether ARGV`` in a forked process, as ``subprocess.run(["tether", *argv], capture_output=True, text=True,
    stdin=DEVNULL, env=env, cwd=cwd, timeout=timeout)`` returns it (``cwd``: this process's when None)."""
    with tempfile.TemporaryDirectory(prefix="tether-clikit-") as tmp:
        out, err = os.path.join(tmp, "out"), os.path.join(tmp, "err")
        child = _server().Process(target=_main, args=(list(argv), dict(env), cwd or os.getcwd(), out, err))
        child.start()
        child.join(timeout)
        if child.exitcode is None:
            child.kill()
            child.join()
            raise subprocess.TimeoutExpired(["tether", *argv], timeout)
        with open(out, encoding="utf-8", errors="replace") as o, open(err, encoding="utf-8", errors="replace") as e:
            return subprocess.CompletedProcess(["tether", *argv], child.exitcode, o.read(), e.read())


def started(
    argv: Sequence[str], env: dict[str, str], *, timeout: float = 120, cwd: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``tether ARGV`` started anew (the console script): what :func:`run` stands in for, and is compared with."""
    return subprocess.run(
        [TETHER, *argv], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, env=env, cwd=cwd
    )


def _main(argv: list[str], env: dict[str, str], cwd: str, out: str, err: str) -> None:
    """The child: its standard streams, environment and directory set, then the console script; ends the process
    with its exit code once the exit handlers ran (``os._exit``: the forkserver's own would not run them)."""
    written = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    for fd, path, flags in ((0, os.devnull, os.O_RDONLY), (1, out, written), (2, err, written)):
        opened = os.open(path, flags, 0o600)
        os.dup2(opened, fd)
        os.close(opened)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    sys.argv = ["tether", *argv]
    from tether.cli.main import script

    code: object = 0
    try:
        script()
    except SystemExit as e:
        code = e.code
    except BaseException as e:  # as the interpreter would: the traceback on stderr, status 1
        import traceback

        traceback.print_exception(e)
        code = 1
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code or 0)
