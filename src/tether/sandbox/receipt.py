"""The receipt: what running one command produced. Crosses into the event log as JSON."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

TIMEOUT_EXIT_CODE = 124
"""Exit code reported when the sandbox killed the command at its timeout (as coreutils ``timeout`` does)."""


class Receipt(BaseModel):
    """Exit status, bounded output and byte counts of one command. A failing command is a receipt, not an error."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: str = Field(description="Sandbox that ran the command: bwrap | local.")
    command: str = Field(description="The command as run: the shell string, or the argv joined shell-style.")
    cwd: str
    exit_code: int = Field(description="Exit status; 128+N when killed by signal N; 124 when timed out.")
    timed_out: bool
    duration_s: float = Field(ge=0)
    stdout: str = Field(description="Bounded: head and tail kept, the middle replaced by an omission marker.")
    stderr: str
    stdout_bytes: int = Field(ge=0, description="Total bytes the command wrote to stdout, kept or not.")
    stderr_bytes: int = Field(ge=0)
    truncated: bool = Field(description="True if either stream exceeded its cap.")

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out
