"""The Python launcher's whole work when the daemon answers: read stdin, connect, send, read, print, exit.

``launch.py`` loads this file by its path, from its cached bytecode (compiling even a small module costs a bare
interpreter more than its own start-up), before anything of tether is imported. So this module imports nothing
but built-in modules (``posix``, ``sys``), and ``_socket`` once it connects: no ``os`` (its ``_collections_abc``
alone costs the launcher more than the round trip to the daemon), no ``json``, no tether package, no ``site``.
After the reply it ends the process at once (``posix._exit``): the interpreter's tear-down is a fifth of its
start-up and there is nothing left to flush. The same functions serve :mod:`tether.hooks.client` (the ``tether
hook`` console command) and the daemon (:func:`code_stamp`), so both sides speak one protocol.

Anything this path cannot vouch for goes, with the input already read, to :func:`tether.hooks.entry.main`, the
full path that ``launch.py`` runs (it asks the daemon again, decides in-process and, when none answered, starts
one): an option other than ``--envelope`` / ``--db``, a relative or unnormalised path, ``--no-daemon`` or
``TETHER_HOOK_DAEMON=0``, no socket directory yet, a code file missing beside this one, a refused connection, a
failed write of the request, or a daemon that closed the connection without a byte (it declines clients of
other code). Once the daemon has the whole request, a reply that is not exactly well formed is a refusal (exit
2): the daemon may have recorded the call, so it is not asked twice, and nothing but a valid reply exits 0.
"""

import posix
import sys

TYPE_CHECKING = False  # not typing's: see the module docstring
if TYPE_CHECKING:
    import _socket

AGENTS = ("claude-code", "codex")
MAX_INPUT_BYTES = 8 * 1024 * 1024  # the same as wire.MAX_INPUT_BYTES (the daemon refuses more)
CONNECT_TIMEOUT_S = 1.0
#: The files whose modification times say which code this is (:func:`code_stamp`).
CODE_FILES = ("relay.py", "client.py", "hook.sh")
_S_IFMT, _S_IFDIR = 0o170000, 0o040000


def env(name: str) -> str | None:
    """An environment variable as ``os.environ`` gives it (the file system encoding, surrogateescape)."""
    value = posix.environ.get(name.encode())
    return None if value is None else value.decode(sys.getfilesystemencoding(), sys.getfilesystemencodeerrors())


def dirname(path: str) -> str:
    """``os.path.dirname``."""
    head = path[: path.rfind("/") + 1]
    return head.rstrip("/") if head and head != "/" * len(head) else head


HERE = dirname(__file__) or "."


def socket_path() -> str:
    explicit = env("TETHER_HOOK_SOCKET")
    if explicit:
        return explicit
    runtime = env("XDG_RUNTIME_DIR")
    if not runtime:
        return f"/tmp/tether-{posix.getuid()}/hookd.sock"
    return runtime + ("tether/hookd.sock" if runtime.endswith("/") else "/tether/hookd.sock")  # os.path.join


def lock_path(socket: str) -> str:
    """The file whose ``flock`` the daemon serving ``socket`` holds for its life (taken before it imports)."""
    return socket + ".lock"


def endpoint_path(socket: str) -> str:
    """The daemon's loopback TCP endpoint for the bash client: ``PORT CLIENT_TOKEN SERVER_TOKEN SCRIPT``, 0600."""
    return socket + ".tcp"


def is_private_dir(directory: str) -> bool:
    """A directory (not a link to one) of this user's that nobody else may open."""
    try:
        st = posix.lstat(directory)
    except OSError:
        return False
    return st.st_mode & _S_IFMT == _S_IFDIR and st.st_uid == posix.getuid() and not st.st_mode & 0o077


def private_dir(path: str) -> bool:
    """Create the socket's directory 0700, or check that an existing one is the user's alone."""
    directory = dirname(path) or "."
    if not is_private_dir(directory):
        try:
            import os  # only here: a first call, or a directory that is not usable anyway

            os.makedirs(directory, mode=0o700, exist_ok=True)
        except OSError:
            return False
    return is_private_dir(directory)


def code_stamp() -> str:
    """Which tether code this is (the protocol's files' mtimes): a daemon started from other code (an upgrade) is
    not asked, and a daemon whose code changed on disk while it ran stops answering."""
    stamps = []
    for name in CODE_FILES:
        try:
            stamps.append(str(posix.stat(f"{HERE}/{name}").st_mtime_ns))
        except OSError:
            stamps.append("-")
    return ".".join(stamps)


def encode(request: dict[str, str], raw: bytes, stamp: str | None = None) -> bytes | None:
    """The request as the daemon reads it: ``key=value`` lines, a blank line, the hook input (no JSON here:
    importing ``json`` costs the client more than the whole socket round trip). None when a value holds a
    newline."""
    stamp = code_stamp() if stamp is None else stamp
    lines = [f"{k}={v}" for k, v in {**request, "size": str(len(raw)), "code": stamp}.items()]
    if any("\n" in line for line in lines):
        return None
    return ("\n".join(lines) + "\n\n").encode() + raw


def decode(answer: bytes) -> tuple[int, bytes, bytes] | None:
    """``<exit> <stdout bytes> <stderr bytes>\n<stdout><stderr>``: the exit code (0 or 2) and both outputs,
    exactly the bytes announced; None for anything else (a daemon that died or was cut off mid-reply)."""
    head, sep, body = answer.partition(b"\n")
    fields = head.split(b" ")
    if not sep or len(fields) != 3 or fields[0] not in (b"0", b"2") or not all(f.isdigit() for f in fields[1:]):
        return None
    out, err = int(fields[1]), int(fields[2])
    if len(body) != out + err:
        return None
    return int(fields[0]), body[:out], body[out:]


def exchange(path: str, message: bytes) -> bytes | None:
    """Send ``message`` to the daemon on ``path`` and read its whole reply. None when the daemon never had the
    whole request (no daemon, a refused connection, a failed write, a reset before any byte of a reply): then
    nothing was recorded. b"" when the daemon closed the connection without a byte (it declines a client of other
    code); an error after part of a reply makes it malformed.

    Why a reset before any byte is no refusal: the kernel resets a Unix socket's peer only when the socket closes
    with bytes still queued to read, or before it was accepted, so the daemon had not read the whole request, and
    it reads it whole before deciding. A daemon killed with calls in its backlog (SIGKILL, the OOM killer) had
    their clients refuse them; they are decided in-process now (tests/hooks/test_launcher.py).

    ``_socket`` (the C module: ``socket.py``'s imports, selectors and enum classes, cost milliseconds) is imported
    here, by the first call that connects: loading it took a call decided in-process (``--no-daemon``) ~0.4 ms."""
    import _socket

    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        try:
            conn.settimeout(CONNECT_TIMEOUT_S)
            conn.connect(path)
            if not _own_peer(conn):  # a socket another user listens on: never given the call (decided here)
                return None
            conn.settimeout(None)  # a Stop's sensors may take minutes; the agent's own hook timeout bounds us
            conn.sendall(message)
            conn.shutdown(_socket.SHUT_WR)
        except OSError:
            return None
        chunks = []
        try:
            while chunk := conn.recv(65536):
                chunks.append(chunk)
        except OSError:  # reset: after part of a reply, cut short; before any byte, the request was never read whole
            return b"".join(chunks) + b"\0" if chunks else None
        return b"".join(chunks)
    finally:
        conn.close()


def _own_peer(conn: "_socket.socket") -> bool:
    """Whether the process listening on ``conn``'s other end is this user's (``SO_PEERCRED``: the uid of the
    ``struct ucred`` after its pid). The socket's directory is checked to be this user's alone before connecting
    (:func:`is_private_dir`), but a directory above it that others may write lets them swap it between that check
    and the connect, and root's hook would connect to any socket put there: the daemon checks its clients' uid
    the same way, so the client checks the daemon's."""
    import _socket  # exchange's, already loaded

    creds = conn.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)
    return int.from_bytes(creds[4:8], sys.byteorder) == posix.getuid()


def located(value: str) -> str | None:
    """A store URL as given, else :func:`absolute`: what ``entry.located`` would send."""
    return value if "://" in value else absolute(value)


def absolute(value: str) -> str | None:
    """An absolute normal path as given (what ``os.path.abspath`` would leave as it is); None for anything the
    full path must resolve."""
    parts = value.split("/")
    if value == "/" or (value[:1] == "/" and all(p not in ("", ".", "..") for p in parts[1:])):  # "": relative
        return value
    return None


def request_of(argv: list[str]) -> dict[str, str] | None:
    """:func:`tether.hooks.entry.options` for the plain case (an agent, ``--envelope``/``--db`` with absolute
    paths or a URL, a daemon allowed); None for everything else, which the full path handles and explains."""
    if not argv or argv[0] not in AGENTS or env("TETHER_HOOK_DAEMON") == "0":
        return None
    request = {"agent": argv[0]}
    rest = argv[1:]
    while rest:
        flag = rest.pop(0)
        if flag not in ("--envelope", "--db") or not rest:
            return None
        request[flag[2:]] = rest.pop(0)
    for key, var in (("envelope", "TETHER_ENVELOPE"), ("db", "TETHER_DB")):
        value = env(var)
        if key not in request and value:
            request[key] = value
    for key, value in request.items():
        if key != "agent" and located(value) is None:
            return None
    project = env("CLAUDE_PROJECT_DIR")
    if project:  # a directory, never a URL: ``entry.options`` makes it absolute whatever it holds
        if absolute(project) is None:
            return None
        request["project"] = project
    return request


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[posix.write(fd, view) :]


def launch(argv: list[str]) -> bytes | None:
    """One hook call from ``launch.py``. It ends the process itself once the daemon has answered; otherwise it
    returns the input it read (None: not read) for the full path, :func:`tether.hooks.entry.main`, which
    ``launch.py`` runs (this module imports nothing of tether)."""
    if argv[:1] not in (["claude-code"], ["codex"]):  # ``install``, or a mistake the full path explains
        return None
    try:
        raw = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
    except Exception:  # the full path reads again, and reports what fails
        return None
    if len(raw) > MAX_INPUT_BYTES:  # more than the daemon reads: a tool's receipt, read whole by the full path
        return raw
    request = request_of(argv)
    path = socket_path()
    stamp = code_stamp()
    try:  # a code file missing beside this one: not an installation the daemon can vouch for
        message = encode(request, raw, stamp) if request is not None and "-" not in stamp.split(".") else None
    except UnicodeError:  # a value the full path refuses, naming it
        message = None
    if message is None or not is_private_dir(dirname(path) or "."):
        return raw
    answer = exchange(path, message)
    if answer is None or answer == b"":  # the daemon never had it, or declined it: decide in-process
        return raw
    reply = decode(answer)
    if reply is None:
        code, out, err = 2, b"", b"tether refused (fail closed): the daemon's reply is malformed or cut short\n"
    else:
        code, out, err = reply
    try:
        if out:
            write_all(1, out + b"\n")
        if err:
            write_all(2, err)
    except OSError:
        code = 2  # the agent is not reading: never exit 0 without the answer delivered
    posix._exit(code)
