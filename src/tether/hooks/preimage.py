"""Undo for a hook session's file tools: the image a PreToolUse reads, the receipt its PostToolUse records.

tether's own loop knows what an action changed from the workspace snapshots around it; a hook session has none,
since the agent runs its own tools. But a file tool names the files it writes. So the PreToolUse that lets one run
(ALLOW, or ASK: a person may let it run) reads each of them first: its bytes into the store's blobs, its image
into a ``hook.preimage`` event, durably before the agent is answered. The PostToolUse reads them again and records
the call's ``action.rollback`` receipt, the one ``tether.kernel.undo`` reads for a loop's ``write_file``. So
``tether undo`` takes back a Write, Edit, MultiEdit, NotebookEdit or Codex patch. A shell command names no file:
its receipt has no image, and an undo that reaches it is refused (what it changed is unknown).

Read as a snapshot reads (``tether.snapshot.probe``: the same digest, so undo's check compares like with like), at
the path the write lands on: the folder resolved as the gate resolves it (a folder linked inside the workspace, or
the workspace under another spelling, is read at its real path; the name the tool used is kept, and the receipt
refuses the call when it no longer leads there). Refused where a file tool's write would not land on the path
read: a symlink (the tool writes where it points), anything but a regular file, a file over 32 MiB (not kept), a
path outside the workspace. Such a file is listed ``unreadable``; the call then cannot be undone. So is a file
another call wrote, or was about to write, while this one was in flight: its before and after are not this call's
alone; and the whole call, when one that may write files no image names (a shell command) ran meanwhile.

The image is read when the call is decided. A change made to the file between then and the tool's run (while the call
waited for a person's answer, say) is in that image's future: undo would take it back with the call. Claude Code's
PostToolUse says what its file tool replaced (:func:`told`); a call whose tool replaced other contents than its
image holds is not undoable. An agent that says nothing (Codex) is taken at the image.
"""

from __future__ import annotations

import errno
import os
import stat

from tether.canonical import bytes_hash
from tether.state import WRITES

from .calls import MCP, NOTES

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from collections.abc import Sequence

    from tether.events.kinds_files import FileImage, HookPreimage, RollbackReceipt
    from tether.events.store import Event
    from tether.guard.session import Guard

#: Larger files are not kept (as ``tether.snapshot.MAX_BLOB_BYTES``, not imported: a hook call does not import the
#: snapshot); their calls cannot be undone.
MAX_BYTES = 32 * 1024 * 1024

_OPEN = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC


#: Where a Claude Code file tool's PostToolUse says what its file held just before the tool wrote it: the Agent SDK's
#: tool output types, ``FileWriteOutput.originalFile`` (null: no file there), ``FileEditOutput.originalFile``,
#: ``NotebookEditOutput.original_file``.
ORIGINAL = dict.fromkeys(("Write", "Edit", "MultiEdit"), "originalFile") | {"NotebookEdit": "original_file"}


class Told:
    """What a file tool said its file held just before it wrote: ``text`` as the tool read it, None for no file
    (anything else is malformed)."""

    __slots__ = ("text",)

    def __init__(self, text: object) -> None:
        self.text = text


def told(data: dict[str, object]) -> Told | None:
    """What a Claude Code PostToolUse ``data`` says its file tool replaced; None when it says nothing (another tool, an
    older Claude Code): the image then stands as read."""
    key, response = ORIGINAL.get(str(data.get("tool_name"))), data.get("tool_response")
    if key is None or not isinstance(response, dict) or key not in response:
        return None
    return Told(response[key])


class Unreadable(Exception):
    """A path whose image cannot be read whole; the message says why."""


def relative(root: str, path: str) -> str | None:
    """``path`` (absolute, as a hook call's file tool names it) as a normalised path inside the workspace ``root``,
    or None when it is not inside (or is the workspace itself)."""
    if not os.path.isabs(path):
        return None
    rel = os.path.relpath(os.path.normpath(path), root)
    return None if rel == "." or rel == ".." or rel.startswith("../") else rel


def placed(root: str, path: str) -> str | None:
    """Where a file tool's write of ``path`` lands, as a path inside the workspace ``root``: its folder resolved as
    the gate resolves it (``tether.policy.paths``: symlinks and ``..`` against the file system), so a folder linked
    inside the workspace or the workspace under another spelling is undoable at the real path. The file itself is
    not resolved (a symlink there is refused when it is read). None when it lands outside; :class:`Unreadable` when
    it names a folder."""
    head, name = os.path.split(path)
    if name in ("", ".", ".."):
        raise Unreadable("names a folder, not a file")
    return relative(os.path.realpath(root), os.path.join(os.path.realpath(head), name)) if os.path.isabs(path) else None


def image(root: str, rel: str, keep: list[bytes] | None = None) -> FileImage | None:
    """The image of ``rel`` under ``root`` now (None: no file there), its bytes appended to ``keep`` when given;
    :class:`Unreadable` when a file tool's write would not land on what was read, or it cannot be read whole."""
    from tether.events.kinds_files import FileImage

    parts = rel.split("/")
    try:
        for i in range(1, len(parts)):
            if not stat.S_ISDIR(os.lstat(os.path.join(root, *parts[:i])).st_mode):
                raise Unreadable("a folder on its way is not a real folder (a symlink?)")
        fd = os.open(os.path.join(root, *parts), _OPEN)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        linked = e.errno == errno.ELOOP  # O_NOFOLLOW on a symlink
        raise Unreadable("a symlink: the tool writes where it points" if linked else str(e.strerror)) from e
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Unreadable("not a regular file")
        if st.st_size > MAX_BYTES:
            raise Unreadable("over 32 MiB: not kept")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        data = b"".join(chunks)
    except OSError as e:
        raise Unreadable(str(e.strerror)) from e
    finally:
        os.close(fd)
    if len(data) > MAX_BYTES:
        raise Unreadable("over 32 MiB: not kept")
    if keep is not None:
        keep.append(data)
    return FileImage(kind="file", digest=bytes_hash(data), mode=stat.S_IMODE(st.st_mode), size=len(data))


def take(guard: Guard, call_id: str, paths: Sequence[str]) -> HookPreimage:
    """The ``hook.preimage`` of a call whose file tools name ``paths``: each file read now, its bytes stored."""
    from tether.events.kinds_files import FileBefore, HookPreimage

    files, unreadable = [], []
    for path in dict.fromkeys(paths):
        try:
            rel = placed(guard.root, path)
        except Unreadable as e:
            unreadable.append(f"{path}: {e}")
            continue
        if rel is None:
            unreadable.append(f"{path}: outside the workspace")
            continue
        kept: list[bytes] = []
        try:
            before = image(guard.root, rel, kept)
        except Unreadable as e:
            unreadable.append(f"{rel}: {e}")
            continue
        if kept:
            guard.store.put_blob(kept[0])
        named = None if relative(guard.root, path) == rel else path
        files.append(FileBefore(path=rel, before=before, named=named))
    return HookPreimage(call_id=call_id, files=files, unreadable=unreadable)


def rollback(guard: Guard, call_id: str, said: Told | None = None) -> tuple[RollbackReceipt | None, list[str] | None]:
    """The receipt of what the call ``call_id`` changed, and the paths it changed; (None, None) when no image was
    read before it ran (its changes are unknown). The files its ``hook.preimage`` names are read again now; ``said``:
    what the tool says its one file held before it wrote, held against the image."""
    from tether.events.kinds_files import FileChange, HookPreimage, RollbackReceipt, same_image

    events = guard.events
    proposed = guard.state.actions.get(call_id)
    first = proposed.seq if proposed is not None else 0  # its image is written after its proposal: none before it
    at = next((i for i in range(len(events) - 1, first - 1, -1) if _pre_of(events[i], call_id)), None)
    if at is None:
        return None, None
    pre = events[at].data_as(HookPreimage)
    busy, unseen = _in_flight(guard, events, at, call_id)
    unreadable = list(pre.unreadable)
    if unseen:
        unreadable.append(f"{', '.join(unseen)} ran while this call was in flight: what it wrote is unknown")
    files = []
    for f in pre.files:
        if f.path in busy:
            unreadable.append(f"{f.path}: another call wrote it while this one was in flight")
            continue
        if f.named is not None and _placed_again(guard.root, f.named) != f.path:
            unreadable.append(f"{f.path}: {f.named} no longer leads to it: the tool may have written elsewhere")
            continue
        if said is not None and not _as_said(guard, f.before, said.text):
            unreadable.append(
                f"{f.path}: the tool replaced other contents than were read when the call was decided: a change made"
                " in between would be taken back with it"
            )
            continue
        try:
            after = image(guard.root, f.path)
        except Unreadable as e:
            unreadable.append(f"{f.path}: {e}")
            continue
        if not same_image(f.before, after):
            files.append(FileChange(path=f.path, before=f.before, after=after))
    if not files and not unreadable:
        return None, []
    return RollbackReceipt(call_id=call_id, files=files, unreadable=unreadable), [f.path for f in files]


def _placed_again(root: str, named: str) -> str | None:
    """Where ``named`` leads now (:func:`placed`), None when nowhere inside the workspace."""
    try:
        return placed(root, named)
    except Unreadable:
        return None


def _pre_of(e: Event, call_id: str) -> bool:
    return e.kind == "hook.preimage" and e.payload.get("call_id") == call_id


def _in_flight(guard: Guard, events: Sequence[Event], at: int, call_id: str) -> tuple[set[str], list[str]]:
    """What other calls did while this one, whose image is ``events[at]``, was in flight: the paths they wrote (named
    by an image or a receipt of another call after this image, or by the image of one decided before it and reported
    after, or the note an ``agent_notes`` call names), and the calls that may have written files no
    image names (a shell command, a tool whose contract writes or runs code, a file tool whose image could not be
    read whole: decided, or reported, after this image).

    Read from the log: the events after the image, and before it only those from the proposal of the first call still
    in flight at the image (``Action.settled_seq``: its first completion or failure came after it) — not the whole
    log before it, which every receipt of a write read (0.3 s after 1,000 calls). Each call's tool, and an
    ``agent_notes`` call's file, are the run state's (its proposal's)."""
    actions = guard.state.actions
    found: set[str] = set()
    unknown: dict[str, str] = {}  # call id -> its tool, for the calls whose writes are unknown
    earlier: dict[str, list[str] | None] = {}  # call id -> the paths its image names (None: not all), decided before
    begun = [a.seq for a in actions.values() if a.seq < at and a.settled_seq > at and a.call_id != call_id]
    for e in events[min(begun, default=at) : at]:
        other = str(e.payload.get("call_id"))
        if e.kind == "hook.preimage" and other != call_id:
            earlier[other] = None if e.payload.get("unreadable") else _paths(e)
        elif e.kind in ("action.completed", "action.failed"):
            earlier.pop(other, None)
    for e in events[at + 1 :]:
        other = str(e.payload.get("call_id"))
        if other == call_id:
            continue
        ran = actions.get(other)
        tool = ran.tool if ran is not None else None
        if e.kind == "hook.preimage" or e.kind == "action.rollback":
            found.update(_paths(e))
            if e.payload.get("unreadable"):
                unknown[other] = tool or "?"
        elif e.kind in ("action.completed", "action.failed") and other in earlier:
            paths = earlier.pop(other)
            if paths is None:
                unknown[other] = tool or "?"
            else:
                found.update(paths)
        runs = e.kind == "action.started" or (e.kind == "action.decided" and e.payload.get("verdict") != "DENY")
        wrote = _written(guard, tool, ran.args.get("file") if ran is not None else None) if runs else set()
        if wrote is None:
            unknown[other] = tool or "?"
        else:
            found.update(wrote)
    return found, [f"{c} ({t})" for c, t in unknown.items()]


def _written(guard: Guard, tool: str | None, note: object) -> set[str] | None:
    """The workspace paths a call of ``tool`` that ran may have written that no image names; None when not known.
    An ``agent_notes`` call (Claude Code's plan or memory) writes the one file its proposal names (``note``), most
    often outside the workspace: nothing here."""
    if tool == NOTES:
        if not isinstance(note, str):
            return None
        rel = _placed_again(guard.root, note)
        return set() if rel is None else {rel}
    return None if _writes_unseen(guard, tool) else set()


def _writes_unseen(guard: Guard, tool: str | None) -> bool:
    """Whether a call of ``tool`` may change files no image names: not a file tool, and its contract writes or runs
    code, or it has none, or it stands in for an MCP tool the envelope does not declare, whose effects are not known
    whatever the stand-in's contract says (fail closed)."""
    if tool in WRITES:  # the tether tools a hook call's file tools become, each naming its file as ``path``
        return False
    if tool == MCP:
        return True
    contract = guard.env.tool(tool) if tool else None
    return contract is None or any(e in ("write", "exec") for e in contract.effects)


def _paths(e: Event) -> list[str]:
    return [str(f.get("path")) for f in e.payload.get("files") or () if isinstance(f, dict)]


def _as_said(guard: Guard, before: FileImage | None, text: object) -> bool:
    """Whether the image ``before`` holds what the tool said it replaced: no file and null, or the file's bytes and the
    text it read (Claude Code reads UTF-8, or UTF-16 after its byte order mark, and may give CRLF line ends as LF)."""
    if before is None or text is None:
        return before is None and text is None
    if not isinstance(text, str):
        return False  # malformed: the tool's account cannot vouch for the image
    if bytes_hash(text.encode("utf-8", "surrogatepass")) == before.digest:
        return True  # the usual file, read as it is
    from tether.errors import InputError

    try:
        data = guard.store.get_blob(before.digest)
    except InputError:  # not kept under its own hash (redacted): nothing to hold the account against
        return False
    marked = data[:2] in (b"\xff\xfe", b"\xfe\xff")
    read = data.decode("utf-16" if marked else "utf-8", "replace")
    return _plain(read) == _plain(text)


def _plain(text: str) -> str:
    return text.removeprefix("\ufeff").replace("\r\n", "\n")
