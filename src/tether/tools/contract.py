"""Tool contracts: the ``@tool`` decorator and the ``Tool`` it builds.

A tool is a narrow system call with a contract (DESIGN.md principle 5): purpose, input
schema, effects, timeout, idempotency, failure path, evidence, rollback. The decorator
derives the input schema from the function's type hints (``Annotated[..., Field(...)]``
for bounds and descriptions; ``Args:`` docstring lines for descriptions) and builds a
``ToolContract`` that strict envelope validation accepts.

Errors, by family (see ``tether.errors``)::

    ToolArgsError (InputError)   the model's arguments do not fit the schema: raised by
                                 validate()/invoke()/preview(); .to_result() is the
                                 structured ok=False result to show the model
    ToolFailure                  raised *inside* a tool body; becomes ok=False data
    RuntimeFailure               the world failed (e.g. SandboxUnavailable): propagates
    any other exception          a bug in a tool body: becomes ok=False, failure_class
                                 "tool_error" (a failing operation is data)

Example::

    @tool(effects=["read"], idempotent=True)
    def word_count(ctx: ToolContext, path: str) -> str:
        \"\"\"Count the words in a workspace file.\"\"\"
        ...
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, get_type_hints

from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from pydantic.fields import FieldInfo

from tether.envelope.schema import Effect, OnFailure, ToolContract, Trust
from tether.errors import InputError, Problem, RuntimeFailure

from ._paths import clip
from .context import ToolContext
from .result import ToolFailure, ToolResult

#: Hard bound on what any tool shows the model (built-ins bound themselves far tighter).
MAX_CONTENT_CHARS = 40_000

PreviewFn = Callable[..., str]


class ToolArgsError(InputError):
    """Arguments that do not fit a tool's input schema; names every bad field and what was expected."""

    def __init__(self, tool: str, problems: list[Problem]) -> None:
        self.tool = tool
        self.problems = problems
        lines = "; ".join(str(p) for p in problems)
        super().__init__(f"invalid arguments for tool {tool!r}: {lines}")

    def to_dict(self) -> dict[str, Any]:
        return {"tool": self.tool, "problems": [p.to_dict() for p in self.problems]}

    def to_result(self) -> ToolResult:
        """The structured error the model is shown instead of executing the call."""
        lines = [f"invalid arguments for tool {self.tool!r}; nothing was executed:"]
        lines += [f"- {p.path}: found {p.found}; expected {p.expected}" for p in self.problems]
        return ToolResult(ok=False, content="\n".join(lines), data=self.to_dict(), failure_class="invalid_args")


def _json_path(loc: Sequence[int | str]) -> str:
    out = "$"
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _problems(error: ValidationError, fields: Mapping[str, FieldInfo]) -> list[Problem]:
    problems = []
    for err in error.errors():
        loc = tuple(err["loc"])
        if err["type"] == "missing":
            found, expected = "missing", "a value (this argument is required)"
        elif err["type"] == "extra_forbidden":
            found, expected = "an unknown argument", f"only these arguments: {', '.join(fields) or '(none)'}"
        else:
            found = f"{json.dumps(err.get('input'), default=repr)[:80]}"
            expected = err["msg"]
        problems.append(Problem(_json_path(loc), found, expected))
    return problems


_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$")
_ARG_LINE = re.compile(r"^\s*(\w+)\s*(?:\([^)]*\))?\s*:\s*(.+)$")


def _doc_parts(fn: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    """First docstring line, and per-argument descriptions from a Google-style ``Args:`` block."""
    doc = inspect.getdoc(fn) or ""
    lines = doc.splitlines()
    summary = lines[0].strip() if lines else ""
    descriptions: dict[str, str] = {}
    in_args = False
    current: str | None = None
    for line in lines[1:]:
        if _ARGS_HEADER.match(line):
            in_args = True
            continue
        if not in_args:
            continue
        if not line.strip():
            current = None
            continue
        if line.strip().endswith(":") and not line.startswith((" ", "\t")):
            break  # next section (Returns:, Raises:, ...)
        m = _ARG_LINE.match(line)
        if m and (line.startswith((" ", "\t")) and len(line) - len(line.lstrip()) <= 4):
            current = m.group(1)
            descriptions[current] = m.group(2).strip()
        elif current is not None:
            descriptions[current] += " " + line.strip()
    return summary, descriptions


def _is_context_param(param: inspect.Parameter, hint: Any) -> bool:
    return hint is ToolContext or param.name == "ctx"


class Tool:
    """A host-owned tool: a contract plus the function that implements it."""

    def __init__(
        self,
        fn: Callable[..., Any],
        contract: ToolContract,
        args_model: type[BaseModel],
        *,
        takes_context: bool,
        preview_fn: PreviewFn | None = None,
    ) -> None:
        self.fn = fn
        self.contract = contract
        self.args_model = args_model
        self.takes_context = takes_context
        self.preview_fn = preview_fn

    @property
    def name(self) -> str:
        return self.contract.name

    def __repr__(self) -> str:
        effects = ",".join(e.value for e in self.contract.effects)
        return f"Tool({self.name!r}, effects=[{effects}])"

    def _model(self, args: Mapping[str, Any]) -> BaseModel:
        if not isinstance(args, Mapping):
            raise ToolArgsError(
                self.name, [Problem("$", type(args).__name__, "an object mapping argument names to values")]
            )
        try:
            return self.args_model.model_validate(dict(args))
        except ValidationError as e:
            raise ToolArgsError(self.name, _problems(e, self.args_model.model_fields)) from e

    def validate(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """The arguments, checked against the schema and normalised (defaults filled in, JSON-able).

        Raises ``ToolArgsError`` naming every bad field.
        """
        return self._model(args).model_dump(mode="json")

    def _call(self, target: Callable[..., Any], args: Mapping[str, Any], ctx: ToolContext) -> Any:
        model = self._model(args)
        kwargs = {name: getattr(model, name) for name in type(model).model_fields}
        return target(ctx, **kwargs) if self.takes_context else target(**kwargs)

    def invoke(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        """Run the tool. A failing operation is an ``ok=False`` result, never an exception.

        Exceptions that do escape: ``ToolArgsError`` (bad arguments; nothing ran) and
        ``RuntimeFailure`` (e.g. the sandbox is unavailable — the world failed, not the call).
        """
        try:
            value = self._call(self.fn, args, ctx)
        except (ToolArgsError, RuntimeFailure):
            raise
        except ToolFailure as failure:
            return _bounded(failure.to_result())
        except OSError as e:
            return ToolResult.failure("os_error", f"{self.name}: {e.__class__.__name__}: {e}", exception=repr(e))
        except Exception as e:
            return ToolResult.failure(
                "tool_error", f"{self.name} failed: {e.__class__.__name__}: {e}", exception=repr(e)
            )
        return _bounded(_as_result(value))

    def preview(self, args: Mapping[str, Any], ctx: ToolContext) -> str:
        """What a human approving this call should see. Never performs the effect."""
        normalised = self.validate(args)
        if self.preview_fn is not None:
            try:
                text = self._call(self.preview_fn, args, ctx)
            except (ToolArgsError, RuntimeFailure):
                raise
            except ToolFailure as failure:
                return f"{self.name} would fail: [{failure.failure_class}] {failure.message}"
            except Exception as e:  # a broken preview must not hide the arguments
                return f"{_pretty_args(self.name, normalised)}\n(preview unavailable: {e.__class__.__name__}: {e})"
            return str(text)
        return _pretty_args(self.name, normalised)


def _pretty_args(name: str, args: Mapping[str, Any]) -> str:
    return f"{name}\n{json.dumps(dict(args), indent=2, sort_keys=True, ensure_ascii=False, default=repr)}"


def _as_result(value: Any) -> ToolResult:
    if isinstance(value, ToolResult):
        return value
    if value is None:
        return ToolResult(ok=True, content="ok")
    if isinstance(value, str):
        return ToolResult(ok=True, content=value)
    if isinstance(value, Mapping):
        data = json.loads(json.dumps(dict(value), default=str))
        return ToolResult(ok=True, content=json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False), data=data)
    return ToolResult(ok=True, content=str(value))


def _bounded(result: ToolResult) -> ToolResult:
    if len(result.content) <= MAX_CONTENT_CHARS:
        return result
    return ToolResult(
        ok=result.ok,
        content=clip(result.content, MAX_CONTENT_CHARS),
        data=result.data,
        changed_files=result.changed_files,
        failure_class=result.failure_class,
        whole=result.content,
    )


def tool(
    *,
    effects: Sequence[Effect | str],
    purpose: str | None = None,
    name: str | None = None,
    timeout_s: float = 30,
    idempotent: bool | None = None,
    on_failure: OnFailure | str = "return_error",
    evidence: Sequence[str] = ("the tool's returned content",),
    rollback: str = "none",
    preview: PreviewFn | None = None,
    trust: Trust | str | None = None,
) -> Callable[[Callable[..., Any]], Tool]:
    """Turn a typed function into a ``Tool`` with a complete contract.

    The function's parameters (after an optional first ``ctx: ToolContext``) become the
    input schema; every one needs a type annotation. Unknown arguments are rejected. The
    function returns a ``ToolResult``, or a ``str``/``dict``/``None`` (wrapped as ``ok=True``),
    and may raise ``ToolFailure`` for an ``ok=False`` outcome. ``preview`` has the same
    signature as the function and returns the text a human approver sees. ``idempotent`` defaults to
    true for a tool that only reads (see :attr:`ToolContract.retry_safe`). ``trust`` says whether the output
    carries third-party content; unset, the default table decides (``tether.envelope.trust``).
    """
    effect_list = [Effect(e) for e in effects]
    failure_path = OnFailure(on_failure)

    def decorate(fn: Callable[..., Any]) -> Tool:
        summary, arg_docs = _doc_parts(fn)
        tool_name = name or fn.__name__
        tool_purpose = purpose or summary
        if not tool_purpose:
            raise TypeError(f"tool {tool_name!r}: give purpose= or a docstring whose first line states the purpose")
        takes_context, fields = _parameters(tool_name, fn, arg_docs)
        args_model = _args_model(tool_name, fields)
        contract = ToolContract(
            name=tool_name,
            purpose=tool_purpose,
            effects=effect_list,
            input_schema=_input_schema(args_model),
            timeout_s=timeout_s,
            idempotent=idempotent if idempotent is not None else set(effect_list) == {Effect.READ},
            on_failure=failure_path,
            evidence=list(evidence),
            rollback=rollback,
            trust=Trust(trust) if trust is not None else None,
        )
        return Tool(fn, contract, args_model, takes_context=takes_context, preview_fn=preview)

    return decorate


def _parameters(
    tool_name: str, fn: Callable[..., Any], arg_docs: dict[str, str]
) -> tuple[bool, dict[str, tuple[Any, FieldInfo]]]:
    """Whether ``fn`` takes a ``ToolContext`` first, and its other parameters as the arguments model's fields."""
    hints = get_type_hints(fn, include_extras=True)
    params = list(inspect.signature(fn).parameters.values())
    takes_context = bool(params) and _is_context_param(params[0], hints.get(params[0].name))
    if takes_context:
        params = params[1:]
    return takes_context, {p.name: _field(tool_name, p, hints, arg_docs) for p in params}


def _field(
    tool_name: str, p: inspect.Parameter, hints: dict[str, Any], arg_docs: dict[str, str]
) -> tuple[Any, FieldInfo]:
    """A tool function's parameter as a field of its arguments' model: its type, default and description
    (the docstring's, unless the default already gives one); a ``TypeError`` for one a tool cannot take."""
    if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.POSITIONAL_ONLY):
        raise TypeError(f"tool {tool_name!r}: parameter {p.name!r} must be a plain named parameter")
    if p.name not in hints:
        raise TypeError(f"tool {tool_name!r}: parameter {p.name!r} needs a type annotation")
    default: Any = ... if p.default is inspect.Parameter.empty else p.default
    info = default if isinstance(default, FieldInfo) else FieldInfo.from_annotated_attribute(hints[p.name], default)
    if info.description is None and p.name in arg_docs:
        info.description = arg_docs[p.name]
    return (info.annotation if info.annotation is not None else hints[p.name], info)


def _args_model(tool_name: str, fields: dict[str, Any]) -> type[BaseModel]:
    """The model that validates a call's arguments: ``fields`` and nothing else (``ReadFileArgs`` for ``read_file``)."""
    model_name = "".join(part.capitalize() for part in re.split(r"[^A-Za-z0-9]", tool_name)) + "Args"
    model: type[BaseModel] = create_model(model_name, __config__=ConfigDict(extra="forbid"), **fields)
    return model


def _input_schema(args_model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema a model is shown, without pydantic's titles."""
    schema = args_model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    return schema
