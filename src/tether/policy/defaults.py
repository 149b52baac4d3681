"""The envelope used when none is given (``tether policy check`` without ``--envelope``).

A bash tool (exec), read_file (read), write_file and edit_file (write); the whole workspace
readable and writable; the ``coding`` profile. Built in code so it needs no file.
"""

from __future__ import annotations

from tether.envelope.schema import Effect, Envelope, Environment, Filesystem, PlanRef, ToolContract
from tether.memo import cache


@cache  # no arguments: the one envelope, as lru_cache(maxsize=1) kept it
def default_envelope() -> Envelope:
    return Envelope(
        plan=PlanRef(path="(built-in)", hash="sha256:" + "0" * 64),
        environment=Environment(filesystem=Filesystem(read=["**"], write=["**"])),
        tools=[
            ToolContract(name="bash", purpose="Run a shell command in the workspace.", effects=[Effect.EXEC]),
            ToolContract(name="read_file", purpose="Read a file.", effects=[Effect.READ]),
            ToolContract(name="write_file", purpose="Write a file.", effects=[Effect.WRITE]),
            ToolContract(name="edit_file", purpose="Edit a file in place.", effects=[Effect.READ, Effect.WRITE]),
        ],
    )
