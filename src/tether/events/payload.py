"""Typed payloads: the base model, the registry of event kinds, and the checks on both ways in.

Every fact in a run's log is a :class:`Payload` subclass registered under its kind (``run.finished``
-> :class:`~tether.events.kinds.RunFinished`). Code emits payload objects — the class knows its kind
(``RunFinished.KIND``) — and folds read them back as objects (``Event.data``), so neither side spells
a kind or a field as a string. The stored JSON is the model's ``model_dump(mode="json")``, exactly
what the ``(kind, dict)`` form wrote before, so old logs hash and read the same.

The kind modules (``kinds``, ``kinds_context``, ``kinds_control``, ``kinds_distributed``, ``kinds_egress``,
``kinds_graph``, ``kinds_guard``, ``kinds_mcp``, ``kinds_verify``, …) import this one and nothing of each
other. ``tether.events`` imports the ones every run reads; the kinds only graphs, schedules, workers, egress
and MCP servers write (:data:`LATER`) are imported by the code that writes them, or by the registry itself the
first time it is asked for a kind it does not hold (or iterated): so the registry is complete whenever it is
read, and a hook deciding one tool call in a fresh process does not build ~25 payload classes it never reads.
"""

import _thread
import sys
from _collections_abc import Callable, Iterator, Mapping  # collections.abc's, without the collections package

from tether import plain
from tether.errors import InputError
from tether.plain import Any, BaseModel, ClassVar, ConfigDict, PydanticSerializationError, ValidationError  # typing's
from tether.typeless import TypeVar, overload

#: Whether this module's models are plain records: fixed by the time this module is imported (:func:`plain.choose`
#: refuses once a model module is), so asked once here, not per payload (8 to 10 a step: issue 18).
PLAIN = plain.active()

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing (tether/typeless.py)
if TYPE_CHECKING:
    from _collections_abc import dict_items, dict_keys, dict_values


def new_list() -> list[Any]:
    """A fresh ``[]``, as a field's default factory: see :func:`new_dict`."""
    return []


def new_dict() -> dict[Any, Any]:
    """A fresh ``{}``, as a field's default factory. Not ``dict`` (or ``list``) itself: pydantic reads each
    factory's signature when it builds a model's validator, and for a builtin type that means parsing a text
    signature that then fails (~0.15 ms each: ~6 ms of a cold hook call, which builds the envelope's and a
    few payloads' validators); a Python function's signature is read at once. ``tests/hooks/test_cold_path.py``
    fails on a model that takes a builtin factory again."""
    return {}


class Payload(BaseModel):
    """The payload of one event kind. ``KIND`` is set by :func:`register`; an unregistered class has none."""

    #: revalidate_instances: a payload nested in another (``rules=[RuleHit(...)]``) is validated again as the outer is
    #: built, not taken as it is (pydantic's default): one made by ``model_construct`` (or changed since) cannot pass
    #: as validated, so an outer one marked :func:`fresh` holds only validated values.
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True, revalidate_instances="always")
    KIND: ClassVar[str] = ""


class UnknownEventKind(InputError):
    pass


class InvalidPayload(InputError):
    pass


D = TypeVar("D")
#: Kind modules imported on the registry's first miss, not with the package (see the module docstring), each with
#: the kinds it registers: ``in`` answers from this list without importing the module (a fold asks whether a kind
#: it does not handle is registered at all). ``tests/test_event_kinds_lazy.py`` fails unless it is exactly what
#: each module registers.
LATER: dict[str, tuple[str, ...]] = {
    "kinds": (
        "action.invalid",
        "approval.denied",
        "approval.expired",
        "approval.granted",
        "approval.mismatch",
        "approval.requested",
        "budget.exceeded",
        "model.context_full",
        "model.failed",
        "model.responded",
        "model.retried",
        "model.unaffordable",
        "run.checkpoint",
        "run.continued",
        "run.finished",
        "run.forked",
        "run.resumed",
        "run.waiting",
        "sandbox.failed",
    ),
    "kinds_baseline": ("tests.baseline",),
    "kinds_context": ("context.compacted",),
    "kinds_control": (
        "belief.recorded",
        "completion.accepted",
        "completion.refused",
        "contradiction.detected",
        "control.changed",
        "hypothesis.recorded",
        "noop.checked",
        "plan.updated",
        "recovery.switched",
        "review.finding",
        "review.model_called",
        "sensor.result",
        "stuck.detected",
        "verify.completed",
    ),
    "kinds_delegate": ("delegate.finished", "delegate.started"),
    "kinds_distributed": ("run.hosted",),
    "kinds_egress": ("egress.attempt",),
    "kinds_files": ("action.rollback", "hook.preimage", "run.undone"),
    "kinds_graph": (
        "graph.finished",
        "graph.node",
        "graph.started",
        "node.compensated",
        "node.completed",
        "node.failed",
        "node.leased",
        "node.renewed",
        "node.started",
        "node.waiting",
    ),
    "kinds_guard": ("session.ended",),
    "kinds_hooks": ("hook.bypassed", "hook.input_changed", "hook.stop"),
    "kinds_kernel": (
        "completion.claimed",
        "context.section",
        "memory.recalled",
        "memory.remembered",
        "model.requested",
        "model.truncated",
        "skills.bound",
    ),
    "kinds_knowledge": ("plan.carried",),
    "kinds_mcp": ("mcp.failed", "mcp.started"),
    "kinds_schedule": (
        "eligibility.checked",
        "firing.finished",
        "schedule.added",
        "schedule.alert",
        "schedule.firing",
        "schedule.paused",
        "schedule.removed",
        "schedule.resumed",
        "trigger.fired",
        "trigger.missed",
    ),
    "kinds_verify": ("preflight.completed",),
}


class Registry(dict[str, type[Payload]]):
    """Kind -> payload class. A lookup that misses imports the :data:`LATER` module that registers the kind (only
    that one), and a miss for a kind none of them lists, or any iteration, imports all of them not imported yet
    (each once; under a lock, so a thread never reads a module's kinds half-registered)."""

    def __init__(self, later: Mapping[str, tuple[str, ...]]) -> None:
        super().__init__()
        self._later = tuple(later)
        self._later_kinds = frozenset(kind for kinds in later.values() for kind in kinds)
        self._module_of = {kind: module for module, kinds in later.items() for kind in kinds}
        self._lock = _thread.RLock()

    def _load_later(self, kind: object = None) -> None:
        """Import the later module registering ``kind`` (all of them for None, or a kind none lists), once each; a
        thread that comes while another imports them waits for it."""
        module = self._module_of.get(kind) if isinstance(kind, str) else None
        self._import((module,) if module is not None else None)

    def import_later(self, module: str) -> None:
        """Import ``tether.events.<module>`` if it is one of the :data:`LATER` modules not imported yet (else
        nothing): a reader of a pickled fold (guard/checkpoint.py), which finds only classes already imported, imports
        the module of a payload class it meets, a module of tether's own, and no other."""
        self._import((module,))

    def _import(self, names: tuple[str, ...] | None) -> None:
        """Import those of ``names`` (None: all) that are later modules not imported yet, under the lock."""
        if not self._later:
            return
        with self._lock:
            for name in self._later if names is None else names:
                if name in self._later:
                    __import__(f"{__package__}.{name}")  # importlib's package imports warnings
                    self._later = tuple(n for n in self._later if n != name)

    def complete(self) -> None:
        """Import every later kind module now: a long-lived process (the hooks' daemon) builds them at its start,
        with its other imports, rather than in the first request that meets one of their kinds."""
        self._load_later()

    def loaded(self, kind: str) -> type[Payload] | None:
        """``kind``'s class if its module is imported already, else None (never imports the later modules)."""
        return dict.get(self, kind)

    @overload  # type: ignore[override]
    def get(self, kind: str, /) -> type[Payload] | None: ...
    @overload
    def get(self, kind: str, default: D, /) -> type[Payload] | D: ...
    def get(self, kind: str, default: Any = None, /) -> Any:
        found = dict.get(self, kind)
        if found is None:
            self._load_later(kind)  # (or waits for the thread loading it): then read again
            found = dict.get(self, kind)
        return default if found is None else found

    def __contains__(self, kind: object) -> bool:
        if dict.__contains__(self, kind) or kind in self._later_kinds:  # a later kind: registered, not imported
            return True
        self._load_later()
        return dict.__contains__(self, kind)

    def __missing__(self, kind: str) -> type[Payload]:
        self._load_later(kind)
        found = dict.get(self, kind)
        if found is None:
            raise KeyError(kind)
        return found

    def __iter__(self) -> Iterator[str]:
        self._load_later()
        return dict.__iter__(self)

    def __reversed__(self) -> Iterator[str]:
        self._load_later()
        return dict.__reversed__(self)

    def __len__(self) -> int:
        self._load_later()
        return dict.__len__(self)

    def keys(self) -> "dict_keys[str, type[Payload]]":
        self._load_later()
        return dict.keys(self)

    def values(self) -> "dict_values[str, type[Payload]]":
        self._load_later()
        return dict.values(self)

    def items(self) -> "dict_items[str, type[Payload]]":
        self._load_later()
        return dict.items(self)


REGISTRY = Registry(LATER)
P = TypeVar("P", bound=type[Payload])
#: What may be appended: a payload object, or the raw ``(kind, dict)`` form (validated to the same model).
Emitted = Payload | tuple[str, Mapping[str, Any]]


def register(kind: str) -> Callable[[P], P]:
    """Class decorator: ``cls`` is the payload of ``kind`` (one class per kind, one kind per class)."""

    def wrap(cls: P) -> P:
        if dict.__contains__(REGISTRY, kind) or cls.KIND:  # not `in`: that would import the later modules
            raise TypeError(f"event kind {kind!r}: {cls.__name__} is registered twice or the kind is taken")
        cls.KIND = kind
        REGISTRY[kind] = cls
        return cls

    return wrap


def model_of(kind: str) -> type[Payload]:
    model = REGISTRY.get(kind)
    if model is None:
        raise UnknownEventKind(f"unknown event kind {kind!r}; registered kinds: {sorted(REGISTRY)}")
    return model


def prepare(item: Emitted) -> tuple[str, dict[str, Any], Payload | None]:
    """Check one item to append; return its kind, the JSON-ready dict to store, and (for a payload
    object) the model a reader of the stored JSON gets back, so the appended event need not parse it again.

    A payload object is dumped and the dump validated again: an object built without validation
    (``model_construct``) cannot smuggle a shape the fold cannot read into the log. Not an object :func:`fresh`
    marked: its constructor validated it, and validating its dump again would give back an equal one.
    """
    if isinstance(item, Payload):
        kind = item.KIND
        if dict.get(REGISTRY, kind) is not type(item) and REGISTRY.get(kind) is not type(item):  # loaded, or load
            raise UnknownEventKind(f"{type(item).__name__} is not a registered event payload")
        if PLAIN:  # a plain record's dump and check (tether/plainrecord.py): what pydantic's give, or Unsure
            data = item.model_dump(mode="json")
            return kind, data, type(item).model_validate(data)
        try:  # ``model_dump(mode="json", warnings=False)`` and ``model_validate`` without their Python wrappers
            data = type(item).__pydantic_serializer__.to_python(item, mode="json", warnings=False)
            if _FRESH.pop(id(item), None) is item:  # validated as built, of an exact class: see fresh()
                return kind, data, item
            return kind, data, type(item).__pydantic_validator__.validate_python(data)  # 8 events a step: issue 18
        except (PydanticSerializationError, ValidationError) as e:
            raise InvalidPayload(f"invalid payload for event kind {kind!r}: {e}") from e
    kind, raw = item
    model = model_of(kind)
    if isinstance(raw, model):
        return kind, raw.model_dump(mode="json"), None
    return kind, _validated(kind, model, raw).model_dump(mode="json"), None


#: Payload objects handed to :func:`fresh`, by ``id`` (the object itself held, so that the id cannot be another's):
#: taken out by the :func:`prepare` of that object. Bounded: an object marked and never appended is dropped.
_FRESH: dict[int, Payload] = {}
FRESH_MAX = 64
F = TypeVar("F", bound=Payload)


def fresh(item: F) -> F:
    """``item``, which its class's validating constructor has just built and nothing has changed since
    (``fresh(Kind(...))``, or of a function that returns what it built so), marked so that :func:`prepare` folds it
    as it is instead of validating its dump again, when its class is :func:`exact`: then that validation gives back
    an equal object of the same types, so the event folded is still the one a reader parses. The stored bytes are
    the same either way (the dump is the same call). Five events a step, 10 to 36 k instructions each (issue 18,
    docs/step-cost.md). Not for an object made any other way (``model_construct``, ``model_copy(update=...)``, or
    one a caller could have changed): those are validated again, as every unmarked object is."""
    if not PLAIN and exact(type(item)):
        if len(_FRESH) >= FRESH_MAX:
            _FRESH.clear()
        _FRESH[id(item)] = item
    return item


_EXACT: dict[type, bool] = {}
_SCALARS = (str, int, float, bool, type(None))


def exact(cls: type[BaseModel]) -> bool:
    """Whether validating the JSON-mode dump of any validated ``cls`` object gives back an equal object whose values
    have the same types: every field (and every nested model's) is a ``str``, ``int``, ``float``, ``bool`` or None,
    a ``Literal`` of those, a union, a list or a ``str``-keyed dict of such, or an exact model that validates an
    instance again (a :class:`Payload`: ``revalidate_instances``), with no alias, no
    exclusion and no validator or serializer of the class's own. ``Any`` is not (a tuple in it dumps as a list, a
    value of another type as its JSON form), nor is an enum, a date or a set. A float's inf or NaN is no exception:
    the canonical JSON refuses it before anything is stored, as it did."""
    known = _EXACT.get(cls)
    if known is None:
        known = _EXACT[cls] = _exact_model(cls)
    return known


def _exact_model(cls: type[BaseModel]) -> bool:
    import annotated_types  # pydantic's own dependency; here, not at import: a plain hook process never asks

    a = annotated_types
    bounds = (a.Ge, a.Gt, a.Le, a.Lt, a.Len, a.MinLen, a.MaxLen)
    decorators = cls.__pydantic_decorators__
    if any(
        (
            decorators.validators,
            decorators.field_validators,
            decorators.root_validators,
            decorators.field_serializers,
            decorators.model_serializers,
            decorators.model_validators,
            decorators.computed_fields,
        )
    ):
        return False
    if cls.model_post_init is not BaseModel.model_post_init:
        return False
    for field in cls.model_fields.values():
        if field.alias or field.serialization_alias or field.validation_alias or field.exclude:
            return False
        if not all(isinstance(m, bounds) for m in field.metadata):  # a bound refuses, it changes nothing
            return False
        if not _exact_type(field.annotation):
            return False
    return True


def _exact_type(t: Any) -> bool:
    import types

    # Only a pydantic process asks (fresh() checks PLAIN first), where pydantic has imported typing already, as
    # plainrecord reads typing's forms; where it has not, no answer is sure: not exact (validated again).
    typing = sys.modules.get("typing")
    if typing is None:
        return False
    Literal, Union, get_args, get_origin = typing.Literal, typing.Union, typing.get_args, typing.get_origin
    if t in _SCALARS:
        return True
    origin, args = get_origin(t), get_args(t)
    if origin is Literal:
        return all(type(a) in (str, int, bool) for a in args)
    if origin is Union or origin is types.UnionType:
        return all(_exact_type(a) for a in args)
    if origin is list and len(args) == 1:
        return _exact_type(args[0])
    if origin is dict and len(args) == 2:
        return args[0] is str and _exact_type(args[1])
    if isinstance(t, type) and issubclass(t, BaseModel):  # an instance is taken as it is unless revalidated
        return t.model_config.get("revalidate_instances") == "always" and exact(t)
    return False


def _validated(kind: str, model: type[Payload], data: Mapping[str, Any] | Any) -> Payload:
    if PLAIN:
        return model.model_validate(data)
    try:  # ``model.model_validate(data)``: the same call into pydantic-core, without the wrapper's keywords
        return model.__pydantic_validator__.validate_python(data)  # type: ignore[no-any-return]
    except ValidationError as e:
        raise InvalidPayload(f"invalid payload for event kind {kind!r}: {e}") from e


def validate_payload(kind: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    """Check a raw ``payload`` against ``kind``'s model; the JSON-ready dict the store would write."""
    return prepare((kind, payload))[1]


def parse(kind: str, payload: Mapping[str, Any]) -> Payload:
    """The stored ``payload`` as its kind's model. Raises ``ValueError`` naming the field that does not fit."""
    model = REGISTRY.get(kind)
    if model is None:
        raise ValueError(f"unknown event kind {kind!r}")
    try:
        return model.model_validate(payload)
    except ValidationError as e:
        raise ValueError(f"{kind} payload does not fit its model: {_fields(e)}") from e


def _fields(e: ValidationError) -> str:
    """Each problem as ``field a.b: message (found: value)``, shortened."""
    parts = []
    for err in e.errors()[:5]:
        where = ".".join(str(x) for x in err["loc"]) or "(payload)"
        found = repr(err.get("input"))
        parts.append(f"field {where}: {err['msg']} (found {found[:60]})")
    more = e.error_count() - 5
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")
