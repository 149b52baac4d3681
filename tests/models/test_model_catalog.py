"""The model table: one entry per model with its price and limits, overridden in one place, in a stated order."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.envelope.hashing import contract_hash
from tether.envelope.schema import Envelope, Price
from tether.errors import EnvelopeInvalid
from tether.models.catalog import CATALOG, _catalog_key, _key_in, entries_for, load_catalog, run_catalog, split_provider
from tether.models.pricing import price_for
from tether.models.window import Limits, limits_for
from tether.policy.defaults import default_envelope
from tether.policy.strict import price_file_problems


def entry(price: float = 1.0, window: int | None = None, output: int | None = None) -> Price:
    return Price(input_per_mtok=price, output_per_mtok=price, context_window=window, max_output_tokens=output)


def with_pricing(tmp_path: Path, file_text: str, pricing: dict[str, Price]) -> Envelope:
    (tmp_path / "prices.yaml").write_text(file_text)
    return default_envelope().model_copy(update={"pricing_file": "prices.yaml", "pricing": pricing})


def test_every_built_in_entry_has_a_price_a_window_and_an_output_limit() -> None:
    for name, e in CATALOG.items():
        assert e.context_window and e.max_output_tokens and e.max_output_tokens <= e.context_window, name


def test_flag_over_agent_settings_over_envelope_entry_over_price_file_over_the_built_in_table(tmp_path: Path) -> None:
    env = with_pricing(
        tmp_path,
        "gpt-4.1: {input_per_mtok: 1, output_per_mtok: 4, context_window: 50000, max_output_tokens: 900}\n"
        "my-local: {input_per_mtok: 0, output_per_mtok: 0, context_window: 8192}\n",
        {"gpt-4.1": entry(2.0, window=40_000)},
    )
    table = run_catalog(env, tmp_path)
    assert limits_for("gpt-4o", table) == Limits(128_000, 16_384)  # built-in
    assert limits_for("openai:my-local", table) == Limits(8_192, None)  # price file; output unknown
    # the envelope's entry wins field by field: its window and price, the file's output limit beneath it
    assert limits_for("openai:gpt-4.1", table) == Limits(40_000, 900)
    assert price_for("openai:gpt-4.1", table) == entry(2.0, window=40_000, output=900)
    # agent.* (and the run's --context-window, which the runtime passes the same way) win over every table
    assert limits_for("openai:gpt-4.1", table, window=6_000, max_output=300) == Limits(6_000, 300)
    assert limits_for("openai:gpt-4.1", table, window=6_000) == Limits(6_000, 900)


def test_an_entry_that_restates_a_price_keeps_the_built_in_limits() -> None:
    assert limits_for("gpt-4o", {"gpt-4o": entry(9.0)}) == Limits(128_000, 16_384)
    assert limits_for("gpt-4o", {"gpt-4o": entry(9.0, output=1_000)}) == Limits(128_000, 1_000)


def test_a_dated_snapshot_takes_its_prefix_s_entry_in_every_table() -> None:
    assert limits_for("anthropic:claude-sonnet-4-5-20250929") == Limits(200_000, 64_000)
    assert limits_for("openai:gpt-4.1-2025-04-14", {"gpt-4.1": entry(window=9_000)}) == Limits(9_000, 32_768)
    assert limits_for("my-model-2026-01-01", {"my-model": entry(window=4_096)}) == Limits(4_096, None)
    # a longer listed name is its own model, not a snapshot of the shorter one
    assert limits_for("gpt-5-pro") == Limits(400_000, 272_000) != limits_for("gpt-5")
    assert limits_for("openai:smollm2") == Limits(None, None)  # a local model nobody declared


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("gpt-4.1: {input_per_mtok: 1, output_per_mtok: 1, context_window: 0}\n", "$.gpt-4.1.context_window"),
        ("gpt-4.1: {input_per_mtok: 1, output_per_mtok: 1, context_window: big}\n", "$.gpt-4.1.context_window"),
        ("m: {input_per_mtok: 1, output_per_mtok: 1, max_output_tokens: -5}\n", "$.m.max_output_tokens"),
        ("m: {input_per_mtok: 1, output_per_mtok: 1, max_output_tokens: 1.5}\n", "$.m.max_output_tokens"),
        ("m: {input_per_mtok: 1, output_per_mtok: 1, window: 8192}\n", "$.m.window"),
        ("m: {context_window: 8192}\n", "$.m.input_per_mtok"),
    ],
)
def test_a_bad_limit_in_a_price_file_is_named_by_file_and_field(tmp_path: Path, text: str, where: str) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text(text)
    with pytest.raises(EnvelopeInvalid) as err:
        load_catalog(path)
    assert where in [p.path for p in err.value.problems]
    assert str(path) in str(err.value)
    problems = price_file_problems(
        default_envelope().model_copy(update={"pricing_file": "prices.yaml"}), tmp_path / "e.yaml"
    )
    assert where in [p.path for p in problems]  # `tether validate --strict` says so before any run


def test_a_bad_limit_in_the_envelope_is_named_by_its_field() -> None:
    data = default_envelope().model_dump(mode="json")
    data["pricing"] = {"m": {"input_per_mtok": 1, "output_per_mtok": 1, "context_window": -1}}
    with pytest.raises(ValueError, match=r"pricing\.m\.context_window"):
        Envelope.model_validate(data)


def test_unset_limits_leave_a_priced_envelope_s_hash_as_it_was_and_set_ones_are_hashed() -> None:
    env = default_envelope().model_copy(update={"pricing": {"gpt-4.1": entry(1.0)}})
    before = env.model_dump(mode="json")
    before["pricing"] = {"gpt-4.1": {"input_per_mtok": 1.0, "output_per_mtok": 1.0}}  # as sealed before limits existed
    sealed = contract_hash(env)
    assert contract_hash(before) == sealed
    assert contract_hash(env.model_copy(update={"pricing": {"gpt-4.1": entry(1.0, window=8_000)}})) != sealed


def test_the_built_in_tables_key_is_looked_up_once_and_overrides_are_read_every_time() -> None:
    """The catalog's lookup is cached by name (the table never changes); the overrides are never cached."""

    names = [*CATALOG, *(f"{k}-2030-01-01" for k in CATALOG), *(f"openai:{k}" for k in CATALOG), "nope", "x:nope"]
    for name in names * 2:
        bare = split_provider(name)[1]
        assert _catalog_key(name, bare) == _key_in(name, bare, CATALOG)
        assert entries_for(name) == ([CATALOG[k]] if (k := _key_in(name, bare, CATALOG)) else [])
    cheap = Price(input_per_mtok=0.5, output_per_mtok=1.0)
    assert entries_for("nope", {"nope": cheap}) == [cheap]
    dearer = Price(input_per_mtok=5.0, output_per_mtok=10.0)
    assert entries_for("nope", {"nope": dearer}) == [dearer]
