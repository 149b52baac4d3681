"""What a pip requirements file asks pip to do: ``pip install -r FILE`` takes the file's lines as arguments too.

The coding profile asks before pip fetches from a custom index, a URL or a VCS; written into a requirements file
(``--index-url http://…``, ``pkg @ https://…``, ``git+…``), the same went through unasked. The file is read now,
before pip runs: each line's words are judged as the command line's are. Per-line ``--hash`` and an editable
local path are what locked and development files hold; any other option asks, and a nested ``-r``/``-c`` file is
read in turn (three deep). pip expands ``${VAR}`` in a file from its environment, and ``pkg @ ${URL}`` is a direct
reference the words alone do not show: a variable or a lone ``@`` asks too. A file that cannot be read (missing:
it may be written later in the same command line; outside the workspace; too large, not text) asks.
"""

from __future__ import annotations

from tether import disk

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from collections.abc import Callable

    Place = Callable[[str, str | None], str | None]  # (name, base) -> its path in the workspace, or None
    Remote = Callable[[str], bool]  # does a word name a URL or VCS spec

MAX_BYTES = 256 * 1024
MAX_DEPTH = 3
NESTED = ("-r", "--requirement", "-c", "--constraint")
#: Options a requirements line may carry that fetch nothing from elsewhere by themselves.
PLAIN_OPTIONS = ("--hash", "-e", "--editable")


def files_named(texts: list[str]) -> list[str]:
    """The requirement and constraint files a pip command line names (``-r F``, ``-rF``, ``--requirement=F``)."""
    out = []
    for i, t in enumerate(texts):
        if t in NESTED and i + 1 < len(texts):
            out.append(texts[i + 1])
        elif t.startswith(tuple(f"{o}=" for o in NESTED if o.startswith("--"))):
            out.append(t.split("=", 1)[1])
        elif t[:2] in ("-r", "-c") and len(t) > 2 and not t.startswith("--"):
            out.append(t[2:])
    return out


def objection(name: str, place: Place, base: str | None, remote: Remote) -> str | None:
    """Why the file ``name`` (read from ``base``) must be asked about, or None. ``place(name, base)``: its path
    when it is a file in the workspace, else None; ``remote(word)``: whether a word names a URL or VCS spec."""
    return _objection(name, place, base, remote, 1)


def _objection(
    name: str,
    place: Callable[[str, str | None], str | None],
    base: str | None,
    remote: Callable[[str], bool],
    depth: int,
) -> str | None:
    path = place(name, base)
    if path is None or not disk.is_file(path):
        return f"the requirements file {name!r} is not a file in the workspace now: what it installs is unknown"
    if depth > MAX_DEPTH:
        return f"requirements files nest more than {MAX_DEPTH} deep"
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError as e:
        return f"the requirements file {name!r} cannot be read ({e})"
    if len(data) > MAX_BYTES or b"\0" in data:
        return f"the requirements file {name!r} is too large or not text to check"
    words = [w for line in data.decode("utf-8", "replace").replace("\\\n", " ").splitlines() for w in _words(line)]
    for i, w in enumerate(words):
        if remote(w) or w.startswith("@") or "${" in w:
            return f"the requirements file {name!r} installs from a URL or VCS ({w!r})"
        if w in NESTED and i + 1 < len(words):
            found = _objection(words[i + 1], place, path.rsplit("/", 1)[0], remote, depth + 1)
            if found is not None:
                return found
        elif w.startswith("-") and not w.startswith(PLAIN_OPTIONS) and (i == 0 or words[i - 1] not in NESTED):
            return f"the requirements file {name!r} gives pip the option {w.split('=', 1)[0]!r}"
    return None


def _words(line: str) -> list[str]:
    """A line's words without its comment (`` #`` starts one, as pip reads it)."""
    text = line.split(" #", 1)[0]
    return [] if text.lstrip().startswith("#") else text.split()
