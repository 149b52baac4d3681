"""The error tree.

Three families, so callers can tell them apart without parsing messages::

    TetherError
    ├── InputError             the user's mistake: fix the input and retry (exit 2 / 1)
    │   ├── FileError          a path is missing, unreadable or not what we expected
    │   ├── ParseError         YAML/JSON that does not parse
    │   ├── EnvelopeInvalid    schema or strict-validation problems (carries all of them)
    │   └── NotATetherDatabase a file that is not our SQLite schema
    ├── RuntimeFailure         the world failed us: the provider, the sandbox, the disk
    │   ├── SandboxUnavailable a required sandbox cannot start (fail closed)
    │   │   └── SecretUnavailable a secret a call must carry cannot be resolved or carried
    │   ├── ProviderError      the model provider failed beyond retries (outage, rejected, malformed)
    │   │   └── ContextOverflow the request does not fit the model's context window (not an outage)
    │   ├── DatabaseLocked     another writer holds the database
    │   ├── RunLeased          another live driver holds the run's lease (names it)
    │   ├── HeadMoved          a compare-and-append found the run's head moved
    │   ├── DiskFull           the disk under the database (or anchor file) is full
    │   └── StaleBelief        a belief read pinned to a generation that has advanced
    └── LogCorrupt             the hash chain does not verify (names the first bad seq)

Flow signals (denied, needs approval) are *data* (decisions, statuses), never
exceptions. Foreign errors are translated at the adapter with ``raise … from``.
"""

from __future__ import annotations

from tether.records import dataclass


class TetherError(Exception):
    """Base of every error tether raises on purpose.

    ``path`` (the file) and ``field`` (where in it) are set where the raiser knows them, so that
    ``--json`` can report them as fields instead of leaving a program to parse the message.
    """

    path: str | None = None
    field: str | None = None

    def __init__(self, message: str = "", *, path: str | None = None, field: str | None = None) -> None:
        super().__init__(message)
        if path is not None:
            self.path = path
        if field is not None:
            self.field = field


class InputError(TetherError):
    """The user's input is wrong; the message says where and what was expected."""


class FileError(InputError):
    pass


class ParseError(InputError):
    pass


@dataclass(frozen=True)
class Problem:
    """One validation finding: where (JSON path), what was found, what was expected."""

    path: str
    found: str
    expected: str
    file: str = ""

    def __str__(self) -> str:
        where = f"{self.file}: " if self.file else ""
        return f"{where}{self.path}: found {self.found}; expected {self.expected}"

    def to_dict(self) -> dict[str, str]:
        return {"file": self.file, "path": self.path, "found": self.found, "expected": self.expected}


class EnvelopeInvalid(InputError):
    """All problems found, not just the first."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        first = problems[0] if problems else None
        super().__init__(
            "\n".join(str(p) for p in problems),
            path=(first.file or None) if first else None,
            field=first.path if first else None,
        )


class NotATetherDatabase(InputError):
    pass


class RunExists(InputError):
    """A run id that is taken already: a caller that names its runs (a session, a trigger, a node's attempt)
    tells "another process created it first" from a real failure by this type, on every store."""


class RuntimeFailure(TetherError):
    pass


class SandboxUnavailable(RuntimeFailure):
    """A required sandbox cannot start. The command must not run; ``fix`` says how to repair."""

    def __init__(self, message: str, fix: str = "") -> None:
        self.fix = fix
        super().__init__(message + (f" Fix: {fix}" if fix else ""))


class SecretUnavailable(SandboxUnavailable):
    """A secret a tool call must carry cannot be resolved (missing, unreadable, too short or too large), or the
    sandbox cannot carry it. The call does not run; the message names the secret and its source, never a value."""


class ProviderError(RuntimeFailure):
    """A model call that produced no usable turn. ``failure`` names the kind, for the log and the exit status.

    ``attempts`` is how many requests the logical call made in all (set by the retry loop).
    """

    def __init__(
        self, message: str, *, transient: bool = False, status: int | None = None, malformed: bool = False
    ) -> None:
        self.transient = transient
        self.status = status
        self.malformed = malformed
        self.attempts = 1
        super().__init__(message)

    @property
    def failure(self) -> str:
        """``outage`` (worth retrying), ``malformed`` (an answer we cannot read) or ``rejected``."""
        if self.malformed:
            return "malformed"
        return "outage" if self.transient else "rejected"


class ContextOverflow(ProviderError):
    """The prompt plus the requested output exceed the model's context window.

    A context problem, not an outage: retrying the same request cannot help, and the
    key is fine. ``window`` and ``prompt_tokens`` are what the provider said, when it did.
    """

    def __init__(
        self, message: str, *, status: int | None = None, window: int | None = None, prompt_tokens: int | None = None
    ) -> None:
        super().__init__(message, transient=False, status=status)
        self.window = window
        self.prompt_tokens = prompt_tokens

    @property
    def failure(self) -> str:
        return "context_overflow"


class DatabaseLocked(RuntimeFailure):
    pass


class StaleBelief(RuntimeFailure):
    pass


class RunLeased(RuntimeFailure):
    """Another driver holds the run: one driver per run, the second one stops at once."""

    def __init__(self, run_id: str, holder: str) -> None:
        self.run_id = run_id
        self.holder = holder
        super().__init__(f"run {run_id} is being driven by {holder}; wait for it to end (or end it) and retry")


class HeadMoved(RuntimeFailure):
    """An append named a head (seq, hash) that is no longer the run's head: someone else wrote first."""

    def __init__(self, run_id: str, expected: tuple[int, str], found: tuple[int, str]) -> None:
        self.run_id = run_id
        self.expected = expected
        self.found = found
        super().__init__(
            f"run {run_id}: the log's head moved (expected seq {expected[0]} {expected[1][:12]}, found seq "
            f"{found[0]} {found[1][:12]}); another writer appended, nothing was written"
        )


class DiskFull(RuntimeFailure):
    """No space left where tether writes; nothing was half-written, and the run resumes once space is back."""


class LogCorrupt(TetherError):
    def __init__(self, run_id: str, seq: int, reason: str) -> None:
        self.run_id = run_id
        self.seq = seq
        self.reason = reason
        super().__init__(f"run {run_id}: event seq {seq}: {reason}")
