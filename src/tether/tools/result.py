"""What a tool call produced: the model-facing content plus the receipt details the log keeps."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Failure classes the built-ins use. User tools may add their own (any short snake_case string).
FAILURE_CLASSES: tuple[str, ...] = (
    "invalid_args",  # arguments failed schema validation or a tool's own argument check
    "outside_workspace",  # a path resolved (through symlinks / ..) to somewhere outside the workspace
    "protected_path",  # a write into .git/ or .tether/
    "not_found",  # the file or directory does not exist
    "is_a_directory",  # a file was expected
    "not_a_directory",  # a directory was expected
    "not_text",  # binary or non-UTF-8 content where text was expected
    "too_large",  # beyond a size cap
    "no_match",  # edit_file: the old text occurs zero times
    "ambiguous_match",  # edit_file: the old text occurs more than once
    "nonzero_exit",  # a command exited non-zero
    "timeout",  # a command hit its timeout
    "tests_failed",  # run_tests: the suite ran and something failed
    "no_tests",  # run_tests: nothing was collected
    "not_a_git_repo",  # git_diff outside a git work tree
    "os_error",  # the OS refused (permissions, disk full, ...)
    "tool_error",  # a tool implementation raised an unexpected exception
)


@dataclass(frozen=True)
class ToolResult:
    """The outcome of one tool call.

    ``ok=False`` is an ordinary outcome (a failing command is data); ``failure_class`` names
    the kind of failure so retry policy and stuck detection can group failures without
    parsing prose. ``content`` is what the model is shown and is always bounded.
    """

    ok: bool
    content: str
    data: dict[str, Any] = field(default_factory=dict)
    changed_files: tuple[str, ...] = ()
    failure_class: str | None = None
    whole: str | None = field(default=None, compare=False, repr=False)
    """The content before it was cut to its bound, when it was: the kernel keeps it as a blob (never in an event)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "content": self.content,
            "data": self.data,
            "changed_files": list(self.changed_files),
            "failure_class": self.failure_class,
        }

    @classmethod
    def failure(cls, failure_class: str, content: str, **data: Any) -> ToolResult:
        return cls(ok=False, content=content, data=dict(data), failure_class=failure_class)


class ToolFailure(Exception):
    """Raise inside a tool to end the call as ``ok=False`` with a failure class (not a crash)."""

    def __init__(self, failure_class: str, message: str, **data: Any) -> None:
        self.failure_class = failure_class
        self.message = message
        self.data = data
        super().__init__(message)

    def to_result(self) -> ToolResult:
        return ToolResult.failure(self.failure_class, self.message, **self.data)
