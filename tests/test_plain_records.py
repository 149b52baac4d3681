"""Plain records (tether/plainrecord.py) against pydantic: the same dumps, or Unsure — never another answer.

Three ways: classes declared from one class statement on both bases, fed random values (hypothesis); every
registered payload kind's sample (tests/test_event_payloads.py) and a few hundred of its mutations (a field
dropped, added, given another type), validated in a plain process; and envelopes pickled by pydantic, read in a
plain process (and the other way). A plain answer must be pydantic's exactly; where pydantic refuses, plain must be
unsure (the hook then runs the call on the full path); and a sample tether writes must not leave plain unsure.
"""

import base64
import copy
import enum
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal

import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_event_payloads import SAMPLES

from tether import plainrecord
from tether.envelope.load import load_envelope
from tether.envelope.schema import Envelope
from tether.events import REGISTRY
from tether.hooks.calls import hook_envelope
from tether.plainrecord import Unsure

REPO = Path(__file__).resolve().parents[1]


class Colour(enum.StrEnum):
    RED = "red"
    BLUE = "blue"


def declare(base: Any, field: Any, validator: Any) -> tuple[Any, Any]:
    """The same class statements on ``base`` (pydantic's or plainrecord's module): a nested record and a record
    holding one of each kind of field the payloads and the envelope use."""
    config = base.ConfigDict(extra="forbid", frozen=True)

    class Inner(base.BaseModel):
        model_config = config
        name: str
        n: int = 0

    class Outer(base.BaseModel):
        model_config = config
        s: str = ""
        i: int | None = base.Field(None, ge=0)
        f: float = 0.0
        b: bool = False
        lit: Literal["a", "b"] = "a"
        colour: Colour | None = None
        num: float | int | None = None
        items: list[str] = base.Field(default_factory=list, min_length=0)
        table: dict[str, Any] = base.Field(default_factory=dict)
        scores: dict[str, float] = base.Field(default_factory=dict)
        inner: Inner | None = None
        inners: list[Inner] = base.Field(default_factory=list)
        either: Literal["failing", "none"] | list[str] = "failing"
        word: str = base.Field("w", pattern=r"^[a-z]+$")

        @validator("s")
        @classmethod
        def _no_x(cls, value: str) -> str:
            if "x" in value:
                raise ValueError("no x")
            return value

    return Inner, Outer


P_INNER, P_OUTER = declare(pydantic, pydantic.Field, pydantic.field_validator)
R_INNER, R_OUTER = declare(plainrecord, plainrecord.Field, plainrecord.field_validator)

#: Values a field may be given that JSON has not: drawn as "special:N" and put in by :func:`special` (hypothesis
#: replays drawn values by their type, and has no type for an enum member).
SPECIAL = [Colour.RED, "red", "a", "b", "failing", 1.0, (1, 2), ("x",)]
json_leaf = st.none() | st.booleans() | st.integers(-(2**60), 2**60) | st.floats(allow_nan=False) | st.text(max_size=6)
values = st.recursive(
    json_leaf | st.sampled_from([f"special:{i}" for i in range(len(SPECIAL))]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["name", "n", "k", "z"]), inner, max_size=3)
    ),
    max_leaves=8,
)
FIELDS = list(P_OUTER.model_fields)


def special(value: Any) -> Any:
    if type(value) is str and value.startswith("special:"):
        return SPECIAL[int(value.removeprefix("special:"))]
    if type(value) is list:
        return [special(v) for v in value]
    if type(value) is dict:
        return {k: special(v) for k, v in value.items()}
    return value


def outcome(make: Any) -> tuple[str, Any]:
    try:
        made = make()
        return "made", (made.model_dump(mode="json"), repr(made.model_dump()))
    except Unsure:  # made, or dumped: a value it holds that pydantic's dump may write otherwise (inf in an Any)
        return "unsure", None
    except pydantic.ValidationError:
        return "refused", None


@settings(max_examples=400, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from([*FIELDS, "unknown"]), values, max_size=4))
def test_a_plain_record_takes_what_pydantic_takes_unchanged_or_is_unsure(data: dict[str, Any]) -> None:
    data = special(data)
    theirs = outcome(lambda: P_OUTER(**data))
    mine = outcome(lambda: R_OUTER(**data))
    assert mine[0] in ("made", "unsure"), mine  # a plain record never refuses with a message of its own
    if mine[0] == "made":
        assert theirs == mine, (data, theirs, mine)
        text = json.dumps(mine[1][0])
        back = outcome(lambda: R_OUTER.model_validate_json(text))  # and back from its JSON: the same JSON dump
        assert back[0] == "made" and back[1][0] == theirs[1][0]


def test_what_tether_writes_is_not_left_unsure() -> None:
    given_ = {"s": "ok", "i": 3, "f": 2, "colour": Colour.RED, "num": 1, "items": ("a",), "inner": {"name": "n"}}
    theirs, mine = P_OUTER(**given_), R_OUTER(**given_)
    assert mine.model_dump(mode="json") == theirs.model_dump(mode="json")
    assert type(mine.f) is float and mine.colour is Colour.RED and isinstance(mine.inner, R_INNER)
    assert mine == R_OUTER(**given_) and hash(R_INNER(name="a")) == hash(R_INNER(name="a"))
    assert repr(R_INNER(name="a")) == repr(P_INNER(name="a"))
    with pytest.raises(Unsure):
        mine.s = "changed"  # type: ignore[misc]  # frozen
    with pytest.raises(Unsure):
        mine.model_dump_json()  # pydantic's API a plain record does not mirror: the full path's
    with pytest.raises(Unsure):
        R_OUTER.model_json_schema()
    for owner in (mine, R_OUTER):  # pydantic's API missing is Unsure, even to hasattr; any other name is absent
        for name in ("model_extra", "__pydantic_core_schema__", "__get_pydantic_json_schema__"):
            with pytest.raises(Unsure, match=f"Outer.{name}: pydantic"):
                hasattr(owner, name)
        assert getattr(owner, "models", "absent") == "absent" and not hasattr(owner, "_model_extra")

    class Wider(R_INNER):  # pydantic keeps a subclass's instance and dumps it as the declared class: not mirrored
        more: int = 1

    with pytest.raises(Unsure):
        R_OUTER(inner=Wider(name="n"))


def test_a_pickle_moves_between_pydantic_and_plain_records() -> None:
    """Both write pydantic's state, so a checkpoint or a kept envelope written on one side reads on the other."""
    theirs = P_OUTER(s="a", inner={"name": "n"}, inners=[{"name": "m", "n": 2}])
    mine = R_OUTER(s="a", inner={"name": "n"}, inners=[{"name": "m", "n": 2}])
    assert theirs.__getstate__()["__dict__"].keys() == mine.__getstate__()["__dict__"].keys()
    assert mine.__reduce_ex__(5)[2]["__pydantic_fields_set__"] == theirs.__reduce_ex__(5)[2]["__pydantic_fields_set__"]
    back = copy.deepcopy(mine)  # through __reduce_ex__, as pickle goes
    assert back == mine and back.model_dump(mode="json") == theirs.model_dump(mode="json")
    plain_from_theirs = R_INNER.__new__(R_INNER)  # (a pickle names the plain classes for the nested ones too)
    plain_from_theirs.__setstate__(theirs.inner.__getstate__())
    assert plain_from_theirs == R_INNER(name="n") and plain_from_theirs.__pydantic_fields_set__ == {"name"}
    for copied in (copy.copy(mine), copy.deepcopy(mine)):  # each with a __dict__ of its own, as pydantic's copies
        assert copied == mine and copied.__dict__ is not mine.__dict__
        assert copied.__pydantic_fields_set__ == mine.__pydantic_fields_set__
    assert copy.deepcopy(mine).inner is not mine.inner and copy.copy(mine).inner is mine.inner
    for records_ in ([theirs, theirs, theirs.inner], [mine, mine, mine.inner]):  # one memo through the whole copy
        twice = copy.deepcopy(records_)
        assert twice[0] is twice[1] and twice[2] is twice[0].inner and twice[0] is not records_[0]
    theirs_from_plain = P_OUTER.__new__(P_OUTER)
    theirs_from_plain.__setstate__(mine.__getstate__())
    assert theirs_from_plain.model_dump(mode="json") == theirs.model_dump(mode="json")


# ---- the real classes, in a plain process ------------------------------------------------------------------------

PLAIN = """
import base64, json, pickle, sys
from tether import plain
assert plain.choose()
from tether.events import REGISTRY
from tether.envelope.schema import Envelope
from tether.plainrecord import Unsure
job = json.load(sys.stdin)
def attempt(make):
    try:
        return ["made", make().model_dump(mode="json")]
    except Unsure:
        return ["unsure", None]
out = {"payloads": [], "envelopes": [], "pickled": []}
for kind, data, text in job["payloads"]:
    model = REGISTRY[kind]
    validated = attempt(lambda: model.model_validate(data))
    out["payloads"].append([validated, attempt(lambda: model.model_validate_json(text))])
for body in job["envelopes"]:
    env = pickle.loads(base64.b64decode(body))
    assert type(env) is Envelope
    dumped = env.model_dump(mode="json")
    out["envelopes"].append([dumped, attempt(lambda: Envelope.model_validate(dumped))])
    out["pickled"].append(base64.b64encode(pickle.dumps(env, protocol=5)).decode())
out["pydantic"] = sorted(m for m in sys.modules if m.startswith("pydantic"))
print(json.dumps(out))
"""


def in_plain(job: dict[str, Any], script: str = PLAIN) -> dict[str, Any]:
    """``script`` run in a plain process on ``job`` (its stdin, JSON): what it printed (JSON), which must say
    (``pydantic``) that no module of pydantic was imported."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run(
        [sys.executable, "-c", script], input=json.dumps(job), capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout)
    assert result["pydantic"] == [], "a plain process imported pydantic"
    return result


def mutations(data: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    """The sample itself, then each field dropped, each field given other kinds of value, and a field too many."""
    out = [data, {**data, "unexpected": 1}]
    for name in data:
        out.append({k: v for k, v in data.items() if k != name})
        for other in (None, "1", 1, 1.5, True, [], {}, ["x"], {"k": "v"}, "NORMAL", "claude-code"):
            out.append({**data, name: other})
    return out


#: Kinds whose every payload a plain process leaves to pydantic, none of them a hook session's: ``status:
#: RunStatus | FiringStatus`` read from its value (which member pydantic's smart union picks is not mirrored).
UNSURE_KINDS = ["firing.finished"]


def test_every_payload_kind_dumps_as_pydantic_dumps_or_is_unsure() -> None:
    cases: list[list[Any]] = []
    expected: list[Any] = []
    samples: list[int] = []  # the indices of the samples themselves (what tether writes)
    for sample in SAMPLES:
        kind, model = sample.KIND, type(sample)
        samples.append(len(cases))
        for data in mutations(sample.model_dump(mode="json"), kind):
            try:
                expected.append(model.model_validate(data).model_dump(mode="json"))
            except pydantic.ValidationError:
                expected.append(None)
            cases.append([kind, data, json.dumps(data)])
    assert {c[0] for c in cases} == set(REGISTRY), "a registered kind without a sample"
    got = in_plain({"payloads": cases, "envelopes": []})["payloads"]
    for (kind, data, _), want, (validated, parsed) in zip(cases, expected, got, strict=True):
        assert validated == parsed, (kind, data)  # from a mapping and from its JSON text alike
        if validated[0] != "unsure":
            assert want is not None, f"{kind}: plain took what pydantic refuses: {data}"
            assert validated[1] == want, (kind, data)
    unsure = [cases[i][0] for i in samples if got[i][0][0] == "unsure"]
    assert unsure == UNSURE_KINDS, f"kinds tether writes that a plain process cannot check: {unsure}"
    refused = sum(want is None for want in expected)
    assert refused > len(cases) // 4  # the mutations did reach what pydantic refuses (and plain was unsure of)


def envelopes() -> list[Envelope]:
    found = [hook_envelope(), load_envelope(REPO / "examples" / "bugfix" / "envelope.yaml")]
    found.append(load_envelope(REPO / "examples" / "guarded" / "envelope.yaml"))
    return found


def test_an_envelope_pickled_by_pydantic_reads_plain_and_back() -> None:
    """What the kept envelope (guard/envcache.py) and a fold checkpoint rely on: a pickle pydantic wrote loads
    into plain records that dump the same JSON, and a pickle of those loads into pydantic's models, equal."""
    originals = envelopes()
    bodies = [base64.b64encode(pickle.dumps(e, protocol=5)).decode() for e in originals]
    result = in_plain({"payloads": [], "envelopes": bodies})
    for original, (dumped, again), body in zip(originals, result["envelopes"], result["pickled"], strict=True):
        assert dumped == original.model_dump(mode="json")
        assert again[0] == "unsure" or again[1] == dumped
        back = pickle.loads(base64.b64decode(body))
        assert type(back) is Envelope and back == original
        assert back.model_dump(mode="json") == original.model_dump(mode="json")


# ---- holes found by the red team (redteam5): each was a value pydantic refuses that a plain record took -----------


class Letter(enum.Enum):  # not a str: pydantic's Literal["a"] refuses it, whatever its value
    A = "a"


def test_a_literal_takes_an_enum_member_only_where_pydantic_does() -> None:
    """A plain (not str) enum member whose value is the literal's was taken as the literal; pydantic refuses it.
    A str enum's member is the literal's value on both sides."""
    assert outcome(lambda: P_OUTER(lit=Letter.A))[0] == "refused"
    assert outcome(lambda: R_OUTER(lit=Letter.A))[0] == "unsure"
    assert outcome(lambda: R_OUTER(either=Letter.A))[0] == "unsure"

    class Hue(enum.StrEnum):
        A = "a"

    assert outcome(lambda: R_OUTER(lit=Hue.A)) == outcome(lambda: P_OUTER(lit=Hue.A)) != ("unsure", None)


@pytest.mark.parametrize(
    "text",
    [
        '{"s": "\\ud800"}',  # a lone high surrogate, escaped: pydantic's parser refuses it, Python's json took it
        '{"s": "x\\udc00"}',  # a lone low one
        '{"s": "\\ude00\\ud83d"}',  # a pair in the wrong order
        '{"table": {"k": ["\\uDBFF"]}}',  # upper-case hex, deep in an Any
        '{"s": "\ud800"}',  # a raw lone surrogate in the text itself
        '{"s": "x"}'.encode("utf-16"),  # bytes that are not UTF-8 (Python's json detects UTF-16 and -32)
        '{"s": "x"}'.encode("utf-8-sig"),  # a byte order mark (Python's json skips it in bytes)
        b'{"s": "\xff"}',
        '\ufeff{"s": "x"}',  # a byte order mark in a str (Python's json refuses it too, before it decodes)
    ],
)
def test_json_that_pydantic_refuses_leaves_a_plain_record_unsure(text: str | bytes) -> None:
    assert outcome(lambda: P_OUTER.model_validate_json(text))[0] == "refused"
    assert outcome(lambda: R_OUTER.model_validate_json(text))[0] == "unsure"


def test_the_one_decoder_carries_nothing_from_one_text_to_the_next() -> None:
    """plainrecord reads every text with one decoder: a text it gave up on midway (a key twice, NaN) leaves nothing
    behind for the next, which reads as pydantic reads it."""
    good = '{"s": "after", "items": ["a", "b"]}'
    for bad in ('{"s": "y", "table": {"k": 1, "k": 2}}', '{"s": "y", "f": NaN}', '{"s": '):
        assert outcome(lambda bad=bad: R_OUTER.model_validate_json(bad))[0] == "unsure"
        assert outcome(lambda: R_OUTER.model_validate_json(good)) == outcome(lambda: P_OUTER.model_validate_json(good))
        assert outcome(lambda: R_OUTER.model_validate_json(good))[0] == "made"


def test_a_surrogate_pair_escaped_reads_as_pydantic_reads_it() -> None:
    text = '{"s": "\\ud83d\\ude00 ok", "items": ["\\u00e9"]}'
    assert outcome(lambda: R_OUTER.model_validate_json(text)) == outcome(lambda: P_OUTER.model_validate_json(text))
    assert outcome(lambda: R_OUTER.model_validate_json(text))[0] == "made"


def test_a_pickled_record_without_a_field_is_unsure_not_a_crash() -> None:
    """A state (a kept envelope, a checkpoint: whoever can write beside the database can forge one) whose ``__dict__``
    lacks a field: pydantic hashes it and dumps what it has; a plain record raised KeyError from its dump and its
    hash, an ordinary exception that the readers' ``except Exception`` take for a bad file (a checkpoint's trial then
    removes the file the full path would keep). Now it is Unsure: the full path's."""
    theirs = P_INNER(name="n")
    state = {**theirs.__getstate__(), "__dict__": {"name": "n"} | {}}
    state["__dict__"].pop("name")
    mine = R_INNER.__new__(R_INNER)
    mine.__setstate__(state)
    for use in (hash, lambda r: r.model_dump(), lambda r: r.model_dump(mode="json"), repr, list):
        with pytest.raises(Unsure):
            use(mine)


@pytest.mark.parametrize("depth", [201, 300, 900])
def test_json_nested_deeper_than_pydantics_parser_goes_leaves_a_plain_record_unsure(depth: int) -> None:
    """pydantic's JSON parser refuses nesting past its recursion limit (an object of 201 arrays deep); Python's
    json reads ~1,000 levels. Texts nested as deep as pydantic reads are read alike."""
    deep = '{"table": {"k": ' + "[" * depth + "]" * depth + "}}"
    assert outcome(lambda: P_OUTER.model_validate_json(deep))[0] == "refused"
    assert outcome(lambda: R_OUTER.model_validate_json(deep))[0] == "unsure"
    within = '{"table": {"k": ' + "[" * 150 + "]" * 150 + '}, "items": ["[[[[{{{{"]}'
    assert outcome(lambda: R_OUTER.model_validate_json(within)) == outcome(lambda: P_OUTER.model_validate_json(within))
    assert outcome(lambda: R_OUTER.model_validate_json(within))[0] == "made"


# ---- typing's forms and the plain stand-ins --------------------------------------------------------------------

#: The stand-ins a plain process's model modules get for typing's ``Any`` and ``Literal`` (tether.plain).
S_ANY, S_LITERAL = plainrecord.TYPING_NAMES["Any"], plainrecord.TYPING_NAMES["Literal"]
#: Each kind of annotation the model modules write; each made with typing's forms and with the stand-ins.
ANNOTATIONS = [
    "Any",
    "Literal['a', 'b']",
    "Literal[1]",
    "Literal['failing', 'none'] | list[str]",
    "Literal['a'] | None",
    "None | Literal['a']",
    "dict[str, Any]",
    "dict[str, Any] | None",
    "dict[str, Any] | str",
    "list[Any]",
    "str | None | Literal[3]",
    "list[Literal['x', 'y']] | None",
    "Colour | None",
]
FORMS = [
    (
        eval(text, {"Any": Any, "Literal": Literal, "Colour": Colour}),
        eval(text, {**plainrecord.TYPING_NAMES, "Colour": Colour}),
    )
    for text in ANNOTATIONS
] + [("Literal['a', 'b'] | None", "Literal['a', 'b'] | None")]  # a string: evaluated by the checker


def checked(annotation: Any, value: Any, exact: bool) -> tuple[str, Any]:
    try:
        return "made", repr(plainrecord.checker(annotation, {"Colour": Colour})(value, exact))
    except Unsure:
        return "unsure", None


@settings(max_examples=300, deadline=None, database=None)
@given(st.sampled_from(range(len(FORMS))), values, st.booleans())
def test_the_stand_ins_check_as_typings_forms(form: int, value: Any, exact: bool) -> None:
    """A field annotated with the stand-ins takes, changes and refuses exactly what the same annotation with
    typing's forms does (which :func:`test_a_plain_record_takes_what_pydantic_takes_unchanged_or_is_unsure` holds
    to pydantic)."""
    theirs, mine = FORMS[form]
    value = special(value)
    assert checked(mine, value, exact) == checked(theirs, value, exact), (theirs, value)


def test_the_stand_ins_are_what_a_plain_process_names_and_they_print_as_typings() -> None:
    assert repr(S_LITERAL["a", 1]) == "Literal['a', 1]" and repr(S_ANY) == "Any"
    assert S_LITERAL["a"] == S_LITERAL["a"] != S_LITERAL["b"] and hash(S_LITERAL["a"]) == hash(S_LITERAL["a"])
    kind = plainrecord.TYPING_NAMES["ClassVar"][str]  # payload.py's ``KIND: ClassVar[str]``: not a field
    record = type("K", (plainrecord.BaseModel,), {"__annotations__": {"KIND": kind, "n": int}, "KIND": "k"})
    assert list(record.model_fields) == ["n"] and record.KIND == "k" and record(n=1).n == 1
    with pytest.raises(TypeError):
        S_ANY["x"]  # only Literal and ClassVar are subscripted, once
    with pytest.raises(TypeError):
        S_LITERAL["a"]["b"]
    probe = (
        "import json, sys\nfrom tether import plain\nassert plain.choose()\nfrom tether.envelope import schema\n"
        "print(json.dumps([type(schema.Any).__name__, 'typing' in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    assert json.loads(out.stdout) == ["_Form", False]  # a plain process: the stand-ins, and no typing
    from tether.envelope import schema  # this process is not plain: typing's own

    assert vars(schema)["Any"] is Any and vars(schema)["Literal"] is Literal


def inherit(base: Any, validator: Any, after: Any, log: list[str]) -> Any:
    """A record two levels below the base model, each level adding fields, config and validators: a base's
    validators run for the subclass's objects too, the farthest base's first."""

    class Top(base.BaseModel):
        model_config = base.ConfigDict(frozen=True, extra="forbid")
        a: int = 0

        @validator("a")
        @classmethod
        def _top_a(cls, value: int) -> int:
            log.append("top a")
            if value > 10:
                raise ValueError("a over 10")
            return value

        @after(mode="after")
        def _top_after(self) -> Any:
            log.append("top after")
            return self

    class Middle(Top):
        model_config = base.ConfigDict(title="Middle")
        b: str = ""

    class Bottom(Middle):
        c: int = 1

        @validator("a")
        @classmethod
        def _bottom_a(cls, value: int) -> int:
            log.append("bottom a")
            if value == 3:
                raise ValueError("not 3")
            return value

        @validator("c")
        @classmethod
        def _bottom_c(cls, value: int) -> int:
            log.append("bottom c")
            return value

        @after(mode="after")
        def _bottom_after(self) -> Any:
            log.append("bottom after")
            return self

    class Left(Top):
        left: int = 0

        @validator("a", "left")
        @classmethod
        def _left(cls, value: int) -> int:
            log.append("left")
            return value

    class Right(Top):
        @validator("a")
        @classmethod
        def _top_a(cls, value: int) -> int:  # the base's validator of the same name, replaced
            log.append("right's top a")
            return value

    class Both(Left, Right):  # Top reached through both
        pass

    return {"Bottom": Bottom, "Left": Left, "Right": Right, "Both": Both}


@pytest.mark.parametrize("name", ["Bottom", "Left", "Right", "Both"])
def test_a_subclass_inherits_fields_config_and_validators_in_order(name: str) -> None:
    """Two levels down, a diamond, a validator replaced by name: each base's validators run once, in pydantic's
    order (a base reached twice ran its validators twice before)."""
    theirs_log: list[str] = []
    mine_log: list[str] = []
    theirs = inherit(pydantic, pydantic.field_validator, pydantic.model_validator, theirs_log)[name]
    mine = inherit(plainrecord, plainrecord.field_validator, plainrecord.model_validator, mine_log)[name]
    assert list(mine.model_fields) == list(theirs.model_fields)
    assert mine.model_config == theirs.model_config
    for given_ in ({}, {"a": 2}, {"a": 2, "b": "x", "c": 5}, {"a": 3}, {"a": 11}, {"d": 1}, {"a": 1, "left": 4}):
        theirs_log.clear()
        mine_log.clear()
        expected = outcome(lambda given_=given_: theirs(**given_))
        assert outcome(lambda given_=given_: mine(**given_)) == (
            expected if expected[0] == "made" else ("unsure", None)
        )
        assert mine_log == theirs_log or expected[0] != "made", given_
