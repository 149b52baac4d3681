"""The hook wire formats of Claude Code and Codex: what comes in on stdin, what goes back on stdout.

Standard library only (and :mod:`tether.jsonc`, json's C parts without its Python modules), imported only when
used: the hook client (:mod:`tether.hooks.entry`) imports this on every tool call.

In: one JSON object with ``hook_event_name``, ``session_id`` and ``cwd``, plus the event's fields
(``tool_name``/``tool_input``/``tool_use_id`` for tool events, ``prompt``, ``stop_hook_active``, ...).

Out, for both agents: exit 0 with a JSON object (or nothing) is an answer; exit 2 with a reason on stderr
blocks whatever the event was about (the tool call, the prompt, the stop). Any other exit code lets the agent
go on as if no hook ran, so tether never exits with one: input it cannot read is answered with exit 2.

* Claude Code PreToolUse: ``hookSpecificOutput.permissionDecision`` allow | deny | ask and its
  ``permissionDecisionReason``. Stop: ``{"decision": "block", "reason": ...}`` makes Claude go on.
* Codex PreToolUse blocks on ``permissionDecision: deny``, legacy ``decision: block`` or exit 2, each with a
  non-empty reason; it reads ``ask``, a bare ``allow`` (``allow`` is only for ``updatedInput``), ``continue: false``
  or a block without a reason as a hook that failed, and runs the call (codex-rs/hooks/src/engine/output_parser.rs;
  openai/codex#28437 asks for ``ask``). So ALLOW is an empty answer, DENY and ASK are exit 2 with the reason (for
  ASK, the ``tether approve`` command that lets the retried call through). Stop: the same ``decision: block`` as
  Claude Code, whose reason Codex sends the model as its next prompt. A reason is never empty.
"""

from __future__ import annotations

AGENTS = ("claude-code", "codex")

#: The tools that run a command line: Claude Code's ``Bash``, and Codex's shell tools. Codex's hooks name each
#: ``Bash`` with ``{"command": TEXT}`` (codex-rs/core/src/tools/hook_names.rs); builds that name the tool they ran,
#: or pass its raw arguments (``exec_command``'s ``cmd``), are read the same way (hooks/calls.py). A hook process
#: deciding a call of one imports the shell's reading with the gate (hooks/entry.py ``decide``).
SHELL_TOOLS = frozenset({"Bash", "shell", "shell_command", "exec_command", "local_shell", "container.exec"})

#: Bigger input is refused whole (Claude Code's Write of a large file is the biggest legitimate payload), but for a
#: tool's receipt, which is streamed (:func:`parse_receipt`).
MAX_INPUT_BYTES = 8 * 1024 * 1024

#: A tool's receipt (PostToolUse, PostToolUseFailure) is read up to this. Its response may carry the file before and
#: after (a NotebookEdit of a notebook with its plots, an Edit of a large file), each up to the 32 MiB an image keeps
#: (``tether.hooks.preimage.MAX_BYTES``), JSON-escaped. Refused at 8 MiB, it dropped what ran from the log: the run
#: said the call was "proposed but not executed", and the stop took no evidence from it.
MAX_RECEIPT_BYTES = 160 * 1024 * 1024

#: A streamed receipt keeps texts up to this many characters (the log keeps 64 KiB of a tool's output): of a longer one,
#: its head and tail. What names the call and its input is kept whole (the receipt is held to the input judged),
#: and so is what the tool says its file held before (``tether.hooks.preimage.ORIGINAL``), held against the image.
RECEIPT_TEXT = 64 * 1024
_WHOLE = frozenset({"tool_response.originalFile", "tool_response.original_file"})

#: The values a streamed receipt may hold, and how deep it may nest: one of many small values is refused, not built,
#: and so is one nested deeper than the code that records it recurses (json's parser refuses ~1,000 levels itself).
RECEIPT_VALUES = 1_000_000
RECEIPT_DEPTH = 512

#: The events a tool call passes through; every other event is recorded (and a Stop judged).
TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure"})

#: The events tether answers: those it acts on (the tool events, a prompt, a session's start and end, a stop) and
#: those it only records, where an empty answer is "nothing to say" by the agent's hooks reference and never lets a
#: tool call through (a SubagentStop's lets the subagent stop; a PermissionRequest's shows the user the dialog; a
#: PreCompact's lets the context be compacted; SubagentStart and Notification cannot be refused). Any other event
#: is refused: there an empty answer means what that event says (a PermissionDenied hook may tell the model to
#: retry, a WorktreeCreate hook makes the worktree), and tether does not say what it has not chosen to.
EVENTS = TOOL_EVENTS | {
    "UserPromptSubmit",
    "SessionStart",
    "SessionEnd",
    "Stop",
    "SubagentStop",
    "SubagentStart",
    "Notification",
    "PreCompact",
    "PermissionRequest",
}

#: The fields refused whole for a lone surrogate: what names the session, the event, the call and its arguments (the
#: gate judges them by their text, and the store keys runs and calls by them). Free text (a prompt, a tool's output
#: or error) is recorded escaped instead (hooks/session.py ``escaped``): a pasted binary must not block the user.
JUDGED = ("hook_event_name", "session_id", "cwd", "tool_name", "tool_use_id", "tool_input", "agent_id", "agent_type")

#: Who acted, when not the session's main thread (Claude Code's common input fields): ``agent_id`` only from inside a
#: subagent, ``agent_type`` from a subagent or a session started with ``--agent``. Absent is the main thread; present,
#: each must be a non-empty string, or the call is refused: the log attributes the call to what they say.
ATTRIBUTION = ("agent_id", "agent_type")


class HookInputError(ValueError):
    """The hook input is not what the agent's documented schema says; the answer fails closed."""


class Outcome:
    """tether's answer to one hook call, before it is put in the agent's format.

    ``verdict``: ALLOW | ASK | DENY for a tool call, or DEFER (Claude Code's own permission flow decides: no
    decision is sent); BLOCK (the stop or prompt is refused) or PASS (recorded, nothing to say) otherwise.
    ``rule`` names what decided; ``note`` is shown to the user without blocking; ``approve`` is an ASK's approval
    id (for Codex, the command that lets the retried call through).
    (Plain classes, not dataclasses: importing ``dataclasses`` costs the hook client milliseconds.)
    """

    __slots__ = ("approve", "note", "reason", "rule", "verdict")

    def __init__(self, verdict: str, reason: str = "", rule: str = "", note: str = "", approve: str = "") -> None:
        self.verdict, self.reason, self.rule, self.note, self.approve = verdict, reason, rule, note, approve

    def __repr__(self) -> str:
        return f"Outcome({self.verdict!r}, {self.reason!r}, {self.rule!r})"


class Reply:
    """What the hook process writes and how it exits."""

    __slots__ = ("exit", "stderr", "stdout")

    def __init__(self, stdout: str = "", stderr: str = "", exit: int = 0) -> None:
        self.stdout, self.stderr, self.exit = stdout, stderr, exit

    def __repr__(self) -> str:
        return f"Reply(stdout={self.stdout!r}, stderr={self.stderr!r}, exit={self.exit})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Reply) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash((self.stdout, self.stderr, self.exit))

    def to_dict(self) -> dict[str, object]:
        return {"stdout": self.stdout, "stderr": self.stderr, "exit": self.exit}


def parse(raw: bytes) -> dict[str, object]:
    """The hook input as a dict, checked for what every event carries; :class:`HookInputError` otherwise."""
    from tether import jsonc  # here, not at the top: the client that a daemon answers never parses

    if len(raw) > MAX_INPUT_BYTES:
        raise HookInputError(f"hook input is {len(raw)} bytes, over tether's limit of {MAX_INPUT_BYTES}")
    try:
        data = jsonc.loads(raw)
    except (UnicodeDecodeError, ValueError) as e:
        raise HookInputError(f"hook input is not JSON ({e}); truncated?") from e
    return _checked(data, b"\\u" in raw)


def parse_receipt(raw: bytes) -> dict[str, object]:
    """Hook input over :data:`MAX_INPUT_BYTES`, read as :func:`parse` reads but streamed (``ijson``): what a receipt
    needs is kept whole, its tool's long texts only at their ends (:data:`RECEIPT_TEXT`). Only a tool's receipt is
    answered so; any other event that large is refused as before: a decision is taken on its whole input."""
    over = f"hook input is {len(raw)} bytes, over tether's limit of {MAX_INPUT_BYTES}"
    if len(raw) > MAX_RECEIPT_BYTES:
        raise HookInputError(f"{over}, and of {MAX_RECEIPT_BYTES} for a tool's receipt")
    try:
        data = _streamed(raw)
    except HookInputError as e:
        raise HookInputError(f"{over} (a tool's receipt may be larger; {e})") from e
    if data.get("hook_event_name") not in ("PostToolUse", "PostToolUseFailure"):
        raise HookInputError(f"{over} (a tool's receipt may be larger; this is a {data.get('hook_event_name')!r})")
    return _checked(data, True)


def _streamed(raw: bytes) -> dict[str, object]:
    """The top-level object of ``raw``, each field built as it streams by; a text longer than :data:`RECEIPT_TEXT`
    is kept as its ends (:func:`_ends`), but in the fields that name the call and its input (:data:`JUDGED`) and
    :data:`_WHOLE`."""
    import io

    import ijson
    from ijson.common import ObjectBuilder

    #: Not yajl's C backend, which reads an escaped lone surrogate as "?": the call's input would then match one
    #: judged with a "?" where :func:`_checked` refuses it. The Python one reads texts as json does.
    stream = ijson.get_backend("python")
    data: dict[str, object] = {}
    key, field, values, depth = None, ObjectBuilder(), 0, 0  # depth 1: in the top-level object, between its fields
    try:
        for prefix, event, value in stream.parse(io.BytesIO(raw)):  # numbers: int, or Decimal where json gives float
            if depth == 0:  # by depth, not prefix: a field named "" gives its own fields the top level's prefix
                if event != "start_map":
                    raise HookInputError(f"hook input must be a JSON object, got a JSON {event}")
                depth = 1
                continue
            if depth == 1 and event in ("map_key", "end_map"):
                if key is not None:
                    data[key] = field.value
                key, field = (value, ObjectBuilder()) if event == "map_key" else (None, field)
                depth -= event == "end_map"
                continue
            values += 1
            if values > RECEIPT_VALUES:
                raise HookInputError(f"hook input holds over {RECEIPT_VALUES} values; not read")
            depth += event in ("start_map", "start_array")
            depth -= event in ("end_map", "end_array")
            if depth > RECEIPT_DEPTH:
                raise HookInputError(f"hook input nests deeper than {RECEIPT_DEPTH} levels; not read")
            if event == "string" and len(value) > RECEIPT_TEXT and key not in JUDGED and prefix not in _WHOLE:
                value = _ends(value)
            elif event == "number" and type(value) is not int:
                value = float(value)
            field.event(event, value)
    except (ijson.JSONError, ValueError) as e:  # a HookInputError is a ValueError: raised as it is
        if isinstance(e, HookInputError):
            raise
        raise HookInputError(f"hook input is not JSON ({e}); truncated?") from e
    return data


def _ends(text: str) -> str:
    """A long text of a streamed receipt as the log keeps a tool's output: its head and its tail (where a failing
    command says why), and how much between them was not kept."""
    half = RECEIPT_TEXT // 2
    cut = len(text) - 2 * half
    why = f"{cut} characters not kept: the hook input was over {MAX_INPUT_BYTES} bytes"
    return f"{text[:half]}\n... ({why}) ...\n{text[-half:]}"


def _checked(data: object, escaped: bool) -> dict[str, object]:
    """``data`` when it is a hook input as every event carries it; :class:`HookInputError` otherwise. ``escaped``:
    the input spelled a ``\\u`` escape (only one spells a lone surrogate)."""
    if not isinstance(data, dict):
        raise HookInputError(f"hook input must be a JSON object, got {type(data).__name__}")
    if escaped:
        field = _lone_surrogate({k: data[k] for k in JUDGED if k in data})  # free text (a tool's output) is recorded
        if field is not None:
            raise HookInputError(
                f"hook input field {field!r}: holds half of a UTF-16 surrogate pair (a lone \\ud800-\\udfff "
                "escape), which is not Unicode text; expected a string that UTF-8 can encode"
            )
    for field in ("hook_event_name", "session_id", "cwd"):
        if not isinstance(data.get(field), str) or not data[field]:
            raise HookInputError(f"hook input field {field!r}: expected a non-empty string, got {data.get(field)!r}")
    if data["hook_event_name"] not in EVENTS:
        raise HookInputError(
            f"hook input field 'hook_event_name': {data['hook_event_name']!r} is not an event tether answers"
            f" (expected one of {', '.join(sorted(EVENTS))}); remove tether's entry for it from the hook settings"
        )
    _named(data)
    if data["hook_event_name"] in TOOL_EVENTS:
        if not isinstance(data.get("tool_name"), str) or not data["tool_name"]:
            raise HookInputError(
                f"hook input field 'tool_name': expected a non-empty string, got {data.get('tool_name')!r}"
            )
        if not isinstance(data.get("tool_input"), dict):
            raise HookInputError(f"hook input field 'tool_input': expected an object, got {data.get('tool_input')!r}")
    return data


def _named(data: dict[str, object]) -> None:
    """The fields that name something, optional but a non-empty string when present: who acted
    (:data:`ATTRIBUTION`) and a PreToolUse's ``tool_use_id``, the id the call is judged under and its receipt found
    by (a number or an object was made a text and judged under it; absent, the call gets an id of tether's). A
    receipt's is not refused: refusing a receipt would only drop what ran from the log."""
    fields = (*ATTRIBUTION, "tool_use_id") if data["hook_event_name"] == "PreToolUse" else ATTRIBUTION
    for field in fields:
        if field in data and (not isinstance(data[field], str) or not data[field]):
            what = "naming the call" if field == "tool_use_id" else "naming the subagent"
            raise HookInputError(f"hook input field {field!r}: expected a non-empty string {what}, got {data[field]!r}")


def _lone_surrogate(data: dict[str, object]) -> str | None:
    """The dotted name of the first field of ``data`` whose text (or key) holds a lone surrogate, else None. JSON
    may spell one; no UTF-8 text holds one, so a call's arguments holding one could be neither judged by their text
    nor logged (a tool's output may: the receipt records it escaped). A loop, not a recursion: the parser accepted
    the input's depth, a recursion on top of it might not."""
    stack: list[tuple[str, object]] = [("", data)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return where
        elif isinstance(value, dict):
            for key, item in value.items():
                name = key.encode("utf-8", "backslashreplace").decode("utf-8")  # shown, so encodable itself
                name = f"{where}.{name}" if where else name
                stack += [(name, item), (f"{name} (its name)", key)]
        elif isinstance(value, list):
            stack += [(f"{where}[{i}]", item) for i, item in enumerate(value)]
    return None


def reply(agent: str, event: str, outcome: Outcome) -> Reply:
    """``outcome`` in ``agent``'s format for ``event``."""
    from tether import jsonc

    text = f"tether {outcome.verdict} ({outcome.rule}): {outcome.reason}" if outcome.rule else outcome.reason
    if not text.strip():  # Codex reads a block, or an exit 2, without a reason as a hook that failed: it goes on
        text = f"tether {outcome.verdict} (no reason given)"
    if event == "PreToolUse":
        if agent == "codex":
            return _codex_pre_tool_use(outcome, text)
        if outcome.verdict == "DEFER":
            return Reply()
        decision = {"ALLOW": "allow", "ASK": "ask"}.get(outcome.verdict, "deny")  # anything else fails closed
        out = {"hookEventName": "PreToolUse", "permissionDecision": decision, "permissionDecisionReason": text}
        return Reply(jsonc.dumps({"hookSpecificOutput": out}))
    if outcome.verdict == "BLOCK":
        return Reply(jsonc.dumps({"decision": "block", "reason": text}))
    if outcome.note:
        return Reply(jsonc.dumps({"systemMessage": outcome.note}))
    return Reply()


def _codex_pre_tool_use(outcome: Outcome, text: str) -> Reply:
    if outcome.verdict == "ALLOW":
        return Reply()
    if outcome.verdict == "ASK":
        text += (
            f"\nA human must approve this exact call: `tether approve {outcome.approve}`, then retry it."
            if outcome.approve
            else "\nA human must approve this call; Codex hooks cannot ask, so it is refused."
        )
    return Reply(stderr=text + "\n", exit=2)


def refuse(reason: str) -> Reply:
    """The fail-closed answer when tether cannot even tell what was asked: exit 2 blocks any event."""
    return Reply(stderr=f"tether refused (fail closed): {reason}\n", exit=2)
