"""Another agent's tool calls as tether tool calls, and the envelope used when a project names none.

Claude Code's tools map onto tether's contracts by what they do: ``Bash`` is ``bash``, ``Read`` is
``read_file``, ``Write`` is ``write_file``, ``Edit``/``MultiEdit``/``NotebookEdit`` are ``edit_file``,
``Glob``/``Grep`` are ``search``, ``LS`` is ``list_dir``, ``WebFetch``/``WebSearch`` are ``web_fetch``/
``web_search``, ``NotebookRead`` and ``LSP`` (a language server's answer about one file) are ``read_file``.
Claude Code's own bookkeeping and conversation tools (``TodoWrite``, ``Agent``/``Task``, ``TaskCreate``,
``Skill``, ...) are ``agent_internal``, a read: whatever they lead to (a subagent's calls, a skill's commands) comes
through the hook as calls of its own. ``EnterWorktree``, an ``Agent`` isolated in a worktree and an
``ExitWorktree`` that removes one are ``worktree``, an ``Agent`` isolated otherwise (``remote``) is
``agent_elsewhere``; the built-in envelope denies both (:data:`WORKTREE_WHY`, :data:`ELSEWHERE_WHY`).
Codex's shell tools (``Bash``, and ``shell``, ``exec_command``, ... by their own names; an argv list joined with
shell quoting) are ``bash``, its ``apply_patch`` is ``edit_file`` once per file the patch names,
``view_image``/``read_file`` are ``read_file``, ``list_dir`` is ``list_dir``, ``grep_files`` is ``search``, its
own bookkeeping (``update_plan``, ``spawn_agent``, ...) is ``agent_internal``. Every other name,
``mcp__server__tool`` and ``PowerShell`` (a shell tether does not parse) included, is kept as it is: the envelope
governs it by declaring a contract of that name, and the gate denies a tool the envelope does not declare
(``envelope:undeclared-tool``) — but for an MCP tool (and Claude Code's MCP resource tools) in an envelope that
declares :data:`MCP`, as the built-in one does: there it is that, which asks, as both agents ask for an MCP tool
themselves.
"""

from __future__ import annotations

import os
import re

from tether.envelope.schema import Effect, Envelope, Environment, Filesystem, Permissions, PlanRef, Rule, ToolContract
from tether.memo import cache
from tether.policy import braces
from tether.records import dataclass

from . import notes
from .wire import SHELL_TOOLS

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

AGENT_INTERNAL = "agent_internal"
NOTES = "agent_notes"
NOTES_WHY = "Claude Code's own plan or memory of this project, kept outside it"
MCP = "mcp_undeclared"
MCP_WHY = (
    "an MCP tool this envelope does not declare, so what it does is not known: a human decides (declare it as"
    " mcp__<server>__<tool> in the envelope to allow or deny it without asking)"
)
WORKTREE = "worktree"
WORKTREE_WHY = (
    "a session governs its own checkout: in a worktree (under .claude/, where writes are denied) its edits would not"
    " be what its stop's sensors judge; start a session in that worktree instead"
)
ELSEWHERE = "agent_elsewhere"
ELSEWHERE_WHY = (
    "a subagent isolated elsewhere (remote: on another machine) runs outside this hook: none of its calls would be"
    " judged or logged"
)
#: The agent's own bookkeeping and conversation: Claude Code's tools reference as of 2026 (code.claude.com/docs/en/
#: tools-reference: ``Agent``, formerly ``Task``; the task list; scheduled prompts; plan mode; skills; deferred-tool
#: search; teammates' messages; ``ExitWorktree`` back to the session's own checkout, keeping the worktree), and the
#: names older versions used.
INTERNAL_TOOLS = frozenset(
    {
        *("Agent", "Task", "SendMessage", "Skill", "ToolSearch", "AskUserQuestion", "EnterPlanMode", "ExitPlanMode"),
        *("TaskCreate", "TaskGet", "TaskList", "TaskUpdate", "TaskOutput", "TaskStop", "CronCreate", "CronDelete"),
        *("CronList", "ExitWorktree", "TodoWrite", "TodoRead", "BashOutput", "KillShell", "KillBash"),
    }
)


#: tether's own names for what an agent's tools do. A tool that bore one would be judged by a rule written for the
#: tools mapped to it, on input that is not what a mapping puts there: ``agent_notes`` with any path was allowed, so
#: were ``agent_internal`` and ``read_file`` with a field the gate does not read, as reads. Refused, whichever agent
#: names it (``web_fetch`` and ``web_search`` ask whatever their input: Codex's own web search keeps its name).
OWN_NAMES = frozenset(
    {"bash", "read_file", "write_file", "edit_file", "search", "list_dir"} | {AGENT_INTERNAL, NOTES, MCP, WORKTREE}
) | {ELSEWHERE}


def _unmapped(name: str, internal: frozenset[str], ti: Mapping[str, Any]) -> Call:
    """A tool no mapping took: the agent's bookkeeping, else kept as it is named — never as one of :data:`OWN_NAMES`."""
    if name in OWN_NAMES:
        raise CallError(f"{name}: a name tether gives its own calls, not a tool of the agent's; refused")
    return Call(AGENT_INTERNAL if name in internal else name, dict(ti))


class CallError(ValueError):
    """A tool call whose input lacks what tether needs to judge it (a Read without a file path)."""


@dataclass(frozen=True)
class Call:
    """One tether tool call: the contract name and the arguments the gate reads."""

    tool: str
    args: dict[str, Any]


def _text(tool_input: Mapping[str, Any], key: str, tool: str) -> str:
    value = tool_input.get(key)
    if not isinstance(value, str) or not value:
        raise CallError(f"{tool}: tool_input.{key} must be a non-empty string, got {value!r}")
    return value


@dataclass(frozen=True)
class Place:
    """Where the agent's call runs: its directory (the hook's ``cwd``: a ``cd`` in an earlier Bash call moves it)
    and the session's workspace (the gate's root)."""

    cwd: str
    workspace: str
    transcript: object = None  # the call's ``transcript_path``: where Claude Code keeps its notes (hooks/notes.py)

    def path(self, text: str, tool: str) -> str:
        """A path the agent named, as the agent's tool reads it: a relative one from its directory."""
        if text.startswith(("/", "~")):
            return text
        if not self.cwd.startswith("/"):
            raise CallError(
                f"{tool}: the relative path {text!r} cannot be placed: the hook's cwd {self.cwd!r} is not absolute"
            )
        return os.path.join(self.cwd, text)

    def shell(self, command: str) -> dict[str, Any]:
        """A shell call's arguments: with ``cwd`` (where the gate reads its relative paths from) when it runs
        anywhere but the workspace; a directory that is not absolute goes as it is (its paths are then unknown)."""
        where = os.path.realpath(self.cwd) if self.cwd.startswith("/") else self.cwd
        return {"command": command} if where == self.workspace else {"command": command, "cwd": where}


def _escaping(args: dict[str, Any], flag: object) -> dict[str, Any]:
    """A shell call's arguments, with ``unsandboxed`` when the agent asks to run it outside its own sandbox (any
    value but absent, false, null or empty: what the agent may read as a request is one); the gate then asks
    (policy/shellgate.py ``_unsandboxed``)."""
    return {**args, "unsandboxed": True} if flag not in (None, False, "", 0) else args


def _search(tool_input: Mapping[str, Any], at: Place, tool: str) -> dict[str, Any]:
    path = tool_input.get("path")
    where = at.path(path, tool) if isinstance(path, str) and path else at.cwd
    pattern = str(tool_input.get("pattern", ""))
    return {"path": _glob_root(where, pattern, tool) if tool == "Glob" else where, "pattern": pattern}


def _glob_root(where: str, pattern: str, tool: str) -> str:
    """The folder a Glob pattern lists: its literal leading folders from ``where``. An absolute pattern
    (``/root/.ssh/*``) or one climbing out (``../../other/**``) lists names there, not under ``where``; a ``..``
    after a wildcard (``*/../../x``) leaves the place unknown: refused. The glob expands braces first
    (``{/root/.ssh,x}/*`` lists ``/root/.ssh``): alternatives that list different folders are ``where`` when each
    stays below it as written (``{src,tests}/**``), else refused, as are more than :data:`MAX_GLOBS` of them."""
    if not braces.has_syntax(pattern):
        return _literal_root(where, pattern, tool)
    found = braces.expand(list(pattern), MAX_GLOBS)
    if found is None:
        raise CallError(f"{tool}: the pattern {pattern!r} expands to more than {MAX_GLOBS} patterns")
    alternatives = ["".join(str(a) for a in each) for each in found]
    roots = {_literal_root(where, alt, tool) for alt in alternatives}
    if len(roots) == 1:
        return roots.pop()
    if any(alt.startswith("/") or ".." in alt.split("/") for alt in alternatives):
        raise CallError(f"{tool}: the pattern {pattern!r} lists folders its braces name apart, one of them outside")
    return where


#: Patterns a Glob's braces may expand to (``braces.expand``'s limit): more, and where it lists is not worked out.
MAX_GLOBS = 64


def _literal_root(where: str, pattern: str, tool: str) -> str:
    parts = pattern.split("/")
    head: list[str] = []
    for i, part in enumerate(parts[:-1]):
        if any(c in part for c in "*?[{"):
            if ".." in parts[i + 1 :]:
                raise CallError(
                    f"{tool}: the pattern {pattern!r} climbs ('..') after a wildcard: where it lists is unknown"
                )
            break
        head.append(part)
    literal = "/".join(head) or ("/" if pattern.startswith("/") else "")
    return os.path.join(where, literal) if literal else where


def _isolated(ti: Mapping[str, Any]) -> Call:
    """A subagent started in isolation: in a worktree of its own (``worktree``), else elsewhere (``remote``)."""
    if ti.get("isolation") == "worktree":
        return Call(WORKTREE, {**dict(ti), "action": "agent"})
    return Call(ELSEWHERE, dict(ti))


#: Claude Code's tools that read one file, and the input field naming it. ``LSP`` asks a language server about a
#: place in one file (a definition, its references, the file's symbols).
CLAUDE_READS = {"Read": "file_path", "NotebookRead": "notebook_path", "LSP": "filePath"}


def _read(name: str, ti: Mapping[str, Any], at: Place) -> Call | None:
    return (
        Call("read_file", {"path": at.path(_text(ti, CLAUDE_READS[name], name), name)})
        if name in CLAUDE_READS
        else None
    )


#: The tools Claude Code keeps its notes with (:mod:`.notes`): what each becomes for one, and its text's field.
NOTE_TOOLS = {
    "Read": (AGENT_INTERNAL, ""),
    "Write": (NOTES, "content"),
    "Edit": (NOTES, "new_string"),
    "MultiEdit": (NOTES, "edits"),
}


def _note(name: str, ti: Mapping[str, Any], at: Place) -> Call | None:
    """A Read, Write or Edit of one of Claude Code's own notes (its plan, its memory of this project), else None:
    reading one is the agent's own bookkeeping, writing one is ``agent_notes`` (allowed by the built-in envelope,
    escalated as any write is when its text came from untrusted output)."""
    raw = ti.get("file_path")
    if name not in NOTE_TOOLS or not isinstance(raw, str) or not raw:
        return None
    path = at.path(raw, name)
    found = notes.kind(path, at.workspace, transcript=at.transcript)
    if found is None:
        return None
    tool, field = NOTE_TOOLS[name]
    value = ti.get(field, "")
    if isinstance(value, list):  # MultiEdit's edits: the texts they put in
        value = "\n".join(str(e.get("new_string", "")) if isinstance(e, dict) else str(e) for e in value)
    text = {"content": str(value)} if field else {}
    return Call(tool, {"file": path, "note": found, **text})


def _claude(name: str, ti: Mapping[str, Any], at: Place) -> list[Call]:
    first = _note(name, ti, at) or _read(name, ti, at)
    if first is not None:
        return [first]
    match name:
        case "Bash":
            return [Call("bash", _escaping(at.shell(_text(ti, "command", name)), ti.get("dangerouslyDisableSandbox")))]
        case "Write":
            path = at.path(_text(ti, "file_path", name), name)
            return [Call("write_file", {"path": path, "content": str(ti.get("content", ""))})]
        case "Edit":
            path = at.path(_text(ti, "file_path", name), name)
            return [Call("edit_file", {"path": path, "old": ti.get("old_string"), "new": ti.get("new_string")})]
        case "MultiEdit":
            return [Call("edit_file", {"path": at.path(_text(ti, "file_path", name), name), "edits": ti.get("edits")})]
        case "NotebookEdit":
            return [
                Call(
                    "edit_file", {"path": at.path(_text(ti, "notebook_path", name), name), "new": ti.get("new_source")}
                )
            ]
        case "Glob":
            return [Call("search", _search(ti, at, name))]
        case "Grep":  # it reads every file under its path: the gate checks the deny list's reach (contents)
            return [Call("search", {**_search(ti, at, name), "contents": True})]
        case "LS":
            return [Call("list_dir", {"path": at.path(_text(ti, "path", name), name)})]
        case "Agent" | "Task" if ti.get("isolation") not in (None, ""):  # a worktree of its own, another machine
            return [_isolated(ti)]
        case "EnterWorktree":  # a new one (``name``) or one that exists (``path``: judged as a write there)
            where = {"path": at.path(_text(ti, "path", name), name)} if "path" in ti else {}
            return [Call(WORKTREE, {**dict(ti), **where, "action": "enter"})]
        case "ExitWorktree" if ti.get("action") != "keep":  # "remove" deletes the worktree, and unknown is not "keep"
            return [Call(WORKTREE, {**dict(ti), "action": str(ti.get("action"))})]
        case "WebFetch":
            return [Call("web_fetch", {"url": _text(ti, "url", name), "prompt": str(ti.get("prompt", ""))})]
        case "WebSearch":
            return [Call("web_search", {"query": _text(ti, "query", name)})]
    return [_unmapped(name, INTERNAL_TOOLS, ti)]


#: The file lines of an apply_patch envelope: ``*** Add File: p``, ``*** Update File: p``, ``*** Move to: p``,
#: indented too: Codex trims a hunk's header line before reading it (codex-rs/apply-patch/src/parser.rs).
#: Compiled at the first Codex patch read, not at import: a Claude Code hook call never reads one.
@cache
def _patch_file() -> re.Pattern[str]:
    return re.compile(r"^\s*\*\*\* (?:Add File|Update File|Delete File|Move to): (.+?)\s*$", re.M)


#: Codex's own bookkeeping, a read as Claude Code's TodoWrite and Task are: the plan, questions to its user, and its
#: sub-agents (whose own tool calls reach the hooks, with ``agent_id``).
CODEX_INTERNAL = frozenset(
    {
        "update_plan",
        "request_user_input",
        "spawn_agent",
        "send_input",
        "resume_agent",
        "wait",
        "wait_agent",
        "close_agent",
        "list_agents",
    }
)

#: The programs ``exec_command``'s ``shell`` may name whose command text tether's shell reading fits.
_POSIX_SHELLS = frozenset({"sh", "bash", "zsh", "dash"})


def _codex(name: str, ti: Mapping[str, Any], at: Place) -> list[Call]:
    workdir = ti.get("workdir")  # the shell's own directory, if it names one; null: Codex no longer knows it
    if workdir is not None:
        at = Place(at.path(_text(ti, "workdir", name), name), at.workspace)
    if name in SHELL_TOOLS:
        return [Call("bash", _escaping(at.shell(_codex_command(ti, name)), _codex_escalated(ti)))]
    if name == "apply_patch":
        # ``command`` as Codex's hooks send it; ``input``, the JSON tool's own argument, as a function call Codex does
        # not route to its patch handler sends it (openai/codex#26751); ``patch`` as older docs had it.
        patch = _text(ti, _one_key(ti, ("command", "input", "patch"), name), name)
        paths = list(dict.fromkeys(_patch_file().findall(patch)))
        if not paths:
            raise CallError("apply_patch: the patch names no file (*** Add/Update/Delete File: PATH)")
        return [Call("edit_file", {"path": at.path(p, name), "patch": patch}) for p in paths]
    match name:
        case "view_image":
            return [Call("read_file", {"path": at.path(_text(ti, "path", name), name)})]
        case "read_file":
            return [Call("read_file", {"path": at.path(_text(ti, "file_path", name), name)})]
        case "list_dir":
            return [Call("list_dir", {"path": at.path(_text(ti, "dir_path", name), name)})]
        case "grep_files":  # it reads every file under its path, as Claude Code's Grep does
            return [Call("search", {**_search(ti, at, name), "contents": True})]
    return [_unmapped(name, CODEX_INTERNAL, ti)]  # a Codex tool of a name Claude Code uses is not its bookkeeping


def _codex_command(ti: Mapping[str, Any], name: str) -> str:
    """A shell call's command as text: an argv list (the ``shell`` tool's) joined with shell quoting, which a shell
    splits back into the same argv, so it is judged as the command it runs. ``exec_command`` runs ``cmd`` with the
    program its ``shell`` names: one that is not a POSIX shell is refused (its text is not shell text)."""
    key = _one_key(ti, ("command", "cmd"), name)
    shell = ti.get("shell")
    if shell is not None and (not isinstance(shell, str) or os.path.basename(shell) not in _POSIX_SHELLS):
        raise CallError(f"{name}: tool_input.shell {shell!r} is not a POSIX shell; its command cannot be read as one")
    value = ti.get(key)
    if isinstance(value, list):
        if not value or not all(isinstance(word, str) for word in value) or not value[0]:
            raise CallError(f"{name}: tool_input.{key} must be a command or a list of words, got {value!r}")
        import shlex  # here: a cold hook call of another tool does not import it

        return shlex.join(value)
    return _text(ti, key, name)


def _one_key(ti: Mapping[str, Any], keys: tuple[str, ...], name: str) -> str:
    """Which of ``keys`` holds the call's text: the first present (the first when none is). A call that passes its
    raw arguments (``exec_command``'s ``cmd``, the JSON patch tool's ``input``) is the model's own JSON, so it may
    hold two of them: the tool reads its own and tether would have judged another. Two that differ are refused."""
    present = [k for k in keys if k in ti]
    for other in present[1:]:
        if ti[other] != ti[present[0]]:
            raise CallError(
                f"{name}: tool_input has {present[0]!r} and {other!r}, which differ: which one runs is unknown"
            )
    return present[0] if present else keys[0]


def _codex_escalated(ti: Mapping[str, Any]) -> bool:
    """Whether a Codex shell call asks for more than its sandbox: ``with_escalated_permissions``, or a
    ``sandbox_permissions`` other than ``use_default`` (``require_escalated``, ``with_additional_permissions``)."""
    permissions = ti.get("sandbox_permissions")
    return bool(ti.get("with_escalated_permissions")) or permissions not in (None, "use_default")


def tether_calls(
    agent: str,
    tool_name: str,
    tool_input: Mapping[str, Any],
    cwd: str,
    workspace: str | os.PathLike[str],
    declares: Callable[[str], object] | None = None,
    transcript: object = None,
) -> list[Call]:
    """The tether calls one agent tool call amounts to (more than one only for a multi-file patch), placed where
    the agent runs it: ``cwd``, the hook's directory, which is the workspace only until the agent's shell moves.
    Given what the envelope ``declares``, an MCP tool it does not is :data:`MCP` where it declares that. ``transcript``:
    the call's ``transcript_path``, which says where Claude Code keeps its notes (:func:`.notes.roots`)."""
    at = Place(cwd, os.fspath(workspace), transcript)
    calls = (_codex if agent == "codex" else _claude)(tool_name, tool_input, at)
    if declares is None or not declares(MCP):
        return calls
    return [Call(MCP, {"tool": c.tool, "input": c.args}) if _mcp(c.tool) and not declares(c.tool) else c for c in calls]


def _mcp(tool: str) -> bool:
    """An MCP server's tool (``mcp__<server>__<tool>``, as both agents name them), or Claude Code's own tools that
    read an MCP server's resources."""
    return tool.startswith("mcp__") or tool in ("ListMcpResourcesTool", "ReadMcpResourceTool")


def hook_envelope() -> Envelope:
    """The envelope of a project that has none: the built-in ``coding`` profile over the mapped tools.

    The whole workspace is readable and writable (the profile still denies ``.git/``, ``.tether/``, secrets
    and destructive commands); the network tools need a human; a move to another worktree is refused; no sensor
    is required at a stop.
    """

    def contract(name: str, purpose: str, *effects: Effect) -> ToolContract:
        return ToolContract(name=name, purpose=purpose, effects=list(effects))

    return Envelope(
        plan=PlanRef(path="(built-in hooks envelope)", hash="sha256:" + "0" * 64),
        environment=Environment(filesystem=Filesystem(read=["**"], write=["**"])),
        tools=[
            contract("bash", "Run a shell command in the workspace.", Effect.EXEC),
            contract("read_file", "Read a file.", Effect.READ),
            contract("write_file", "Write a file.", Effect.WRITE),
            contract("edit_file", "Edit a file in place.", Effect.READ, Effect.WRITE),
            contract("search", "Find files or lines by pattern.", Effect.READ),
            contract("list_dir", "List a directory.", Effect.READ),
            contract("web_fetch", "Fetch a URL.", Effect.NETWORK),
            contract("web_search", "Search the web.", Effect.NETWORK),
            contract(AGENT_INTERNAL, "The agent's own bookkeeping (todo lists, sub-agents, plans).", Effect.READ),
            contract(NOTES, "Write Claude Code's plan or its memory of this project (hooks/notes.py).", Effect.WRITE),
            contract(MCP, "Call an MCP server's tool that this envelope does not declare.", Effect.EXTERNAL),
            contract(WORKTREE, "Move the session into another git worktree, or remove one.", Effect.WRITE),
            contract(ELSEWHERE, "Start a subagent outside this machine's session.", Effect.EXEC),
        ],
        permissions=Permissions(
            allow=[Rule(id="hooks:agent-notes", rule=NOTES, reason=NOTES_WHY)],
            ask=[Rule(id="hooks:mcp-undeclared", rule=MCP, reason=MCP_WHY)],
            deny=[
                Rule(id="hooks:worktree", rule=WORKTREE, reason=WORKTREE_WHY),
                Rule(id="hooks:agent-elsewhere", rule=ELSEWHERE, reason=ELSEWHERE_WHY),
            ],
        ),
    )
