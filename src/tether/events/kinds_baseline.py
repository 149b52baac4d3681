"""The test-integrity baseline's event kind (``tests.baseline``; see tether.verify and docs/log.md).

Before the agent's first write: every test the test command collects and how it ended, the shape of each test
function (asserts, returns, skips) and the bytes of the test surface (test files and test configuration, as
blobs), against which the completion check compares the final state, and the bytecode that run compiled (as
blobs), which completion runs reuse for the sources the agent left alone, and the stamps of the extension modules
and start-up files then in the workspace (a blob).

Kept out of ``tether.events``'s own imports (``payload.LATER``): it is written once per run or session (a hook
session's first call, which imports the integrity checks anyway) and read by a stop's checks, never to decide a
tool call; the registry imports it on its first miss.
"""

from typing import Literal

from tether.plain import Field

from .payload import Payload, new_dict, new_list, register

CaseOutcome = Literal["passed", "failed", "error", "skipped", "xfailed", "xpassed", "not_run"]


class CaseShape(Payload):
    """What a test function's body does, counted with ``ast`` (nested functions and classes excluded)."""

    asserts: int = Field(ge=0, description="assert statements plus assert*/raises/warns calls")
    returns: int = Field(ge=0, description="return statements")
    skips: int = Field(ge=0, description="skip/xfail calls and skip/xfail decorators")


class CaseRecord(Payload):
    id: str = Field(description="pytest node id")
    file: str = Field(description="workspace-relative path of the file defining the test")
    cls: str | None = None
    function: str = Field(description="the function's name as written (without parametrisation)")
    outcome: CaseOutcome
    shape: CaseShape | None = Field(None, description="None when the function's source could not be found")


class CachedBytecode(Payload):
    """A bytecode file the baseline run compiled, kept so that completion runs need not recompile it."""

    path: str = Field(description="workspace-relative path of the .pyc (in a __pycache__ directory)")
    source: str = Field(description="workspace-relative path of the .py it was compiled from")
    source_digest: str = Field(description="sha256 of that source's bytes when it was compiled")
    blob: str = Field(description="blob hash of the .pyc's bytes")


@register("tests.baseline")
class SuiteBaseline(Payload):
    command: str
    runner: Literal["pytest", "other"]
    ok: bool = Field(description="a trustworthy report arrived (always False for a non-pytest runner)")
    detail: str = ""
    exit_code: int | None = None
    tests: list[CaseRecord] = Field(default_factory=new_list)
    deselected: list[str] = Field(default_factory=new_list)
    errors: list[str] = Field(default_factory=new_list, description="collection errors: 'node id: message'")
    surface: dict[str, str] = Field(
        default_factory=new_dict, description="test files and test configuration: path -> blob hash of the bytes"
    )
    duration_s: float = 0.0
    bytecode: list[CachedBytecode] = Field(
        default_factory=new_list, description="bytecode the baseline run compiled (see tether.verify.bytecode)"
    )
    loaders: str | None = Field(
        None, description="blob hash of the stamps of the files Python loads ahead of source (tether.verify.shadowing)"
    )
    commit: str | None = Field(
        None,
        description="a hook session's: the git commit HEAD named at its start, whose text of a file a shell command"
        " touched is that file's baseline (tether.hooks.origin)",
    )
    commit_dir: str = Field("", description="the workspace's folder in that commit's tree ('' at its top, else 'a/b/')")
    dirty: dict[str, str] = Field(
        default_factory=new_dict,
        description="a hook session's: files changed and not committed at its start, workspace-relative path -> blob"
        " hash of their bytes then, each that file's baseline in place of the commit's (tether.hooks.origin.dirty)",
    )
    carried: list[str] = Field(
        default_factory=new_list,
        description="a hook session's: files an earlier session's agent left changed whose baseline here is the text"
        " that session began with, not the work in progress found (tether.hooks.earlier)",
    )
    carried_from: str = Field("", description="that earlier session's run id")
    carried_why: str = Field("", description="how that session ended, as the stop names it ('which ended unverified')")
