"""Event kinds of a workspace file's images: what an action changed, and what a hook call's file tool is about to.

- ``action.rollback``  what one action changed in the workspace, a pre- and post-image per file
  (``tether.kernel.undo`` reads it). tether's own loop takes it from its snapshots around the action; a hook
  session from the file its file tool names (``tether.hooks.preimage``).
- ``run.undone``      an operator took actions back (``tether undo``): each file restored.
- ``hook.preimage``    a hook session's file tool allowed to run (or asked about): the image of each file it names,
  read when the call was decided, its bytes in the store's blobs. The call's receipt turns it into its
  ``action.rollback``.

A module of their own (``payload.LATER``): a hook call that lets a Write run imports these few models, not the
kernel's (``kinds_kernel``).
"""

from tether.plain import Field, Literal, field_validator  # typing's Literal, or a plain process's stand-in

from .payload import Payload, new_list, register

__all__ = ["FileBefore", "FileChange", "FileImage", "HookPreimage", "RollbackReceipt", "UndoReceipt", "same_image"]


class FileImage(Payload):
    """One side of a file's change, as the workspace snapshot read it: enough to check it and to restore it.

    ``digest`` names the bytes (a symlink's: its target text) in the store's blobs; ``mode`` is the
    permission bits.
    """

    kind: Literal["file", "link"]
    digest: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    mode: int = Field(ge=0, le=0o7777)
    size: int = Field(ge=0)


def same_image(a: FileImage | None, b: FileImage | None) -> bool:
    """Equal as a snapshot judges a change: existence, kind, bytes and the executable bit (undo's checks of a file
    before it restores it; a hook call's receipt, which records only the files its tool changed)."""
    if a is None or b is None:
        return a is b
    return a.kind == b.kind and a.digest == b.digest and bool(a.mode & 0o111) == bool(b.mode & 0o111)


def _workspace_path(v: str) -> str:
    parts = v.split("/")
    if not v or v.startswith("/") or any(p in ("", ".", "..") for p in parts) or "\0" in v:
        raise ValueError(f"expected a normalised workspace-relative path, found {v!r}")
    return v


class FileChange(Payload):
    """A path's pre-image and post-image (None: it did not exist on that side)."""

    path: str
    before: FileImage | None
    after: FileImage | None

    @field_validator("path")
    @classmethod
    def _inside(cls, v: str) -> str:
        return _workspace_path(v)


class FileBefore(Payload):
    """A path's image before an action ran (None: it did not exist), at the path the write lands on. Not a
    :class:`FileChange` subclass: pydantic copies a parent's validators into a subclass, which marks their classes
    (``__slotnames__``) in the process that builds it, and a daemon's classes must stay as a cold hook's
    (tests/hooks/test_cold_dataclasses.py)."""

    path: str
    before: FileImage | None
    named: str | None = Field(
        default=None,
        description="The path as the tool named it, when a folder on its way is a symlink (or the workspace is"
        " spelled another way): held to the same place when the receipt is read.",
    )

    @field_validator("path")
    @classmethod
    def _inside(cls, v: str) -> str:
        return _workspace_path(v)


@register("action.rollback")
class RollbackReceipt(Payload):
    """What one action changed in the workspace: a pre- and post-image per changed file (tether.kernel.undo).

    In tether's loop taken from the snapshots around the action, so a shell command's changes are recorded like a
    file tool's; in a hook session from the file a file tool names, read at its decision (``hook.preimage``) and
    at its receipt. ``unreadable`` lists paths whose change is not known whole (a snapshot could not read them, or
    another call wrote them meanwhile): the receipt is then incomplete and the action cannot be undone.
    """

    call_id: str
    files: list[FileChange]
    unreadable: list[str] = Field(default_factory=new_list, description="The paths, each with why where known.")


@register("run.undone")
class UndoReceipt(Payload):
    """An operator took actions back (``tether undo``): who, which actions, and each file restored.

    In ``files`` each change goes from what the workspace held (``before``: the actions' post-image)
    to what was restored (``after``: the pre-image of the first action undone).
    """

    by: str
    scope: str = Field(description="'run', 'to <seq>' or 'action <call_id>'.")
    actions: list[str] = Field(description="Call ids undone, in log order.")
    files: list[FileChange]


@register("hook.preimage")
class HookPreimage(Payload):
    """The files a hook call's file tool names, read when tether decided it (ALLOW, or ASK: a person may let it run),
    durably before the agent was answered: the before side of the receipt its PostToolUse records."""

    call_id: str
    files: list[FileBefore] = Field(description="Each file's image when the call was decided.")
    unreadable: list[str] = Field(
        default_factory=new_list,
        description="'path: why' for each file named that could not be read whole (a symlink, a folder, over 32"
        " MiB, outside the workspace): the call cannot be undone.",
    )
