"""The retry policy and the price table, without any network."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from tether.envelope.schema import Price
from tether.errors import EnvelopeInvalid, ProviderError
from tether.models.base import Message, ModelResponse, ToolSpec, Usage
from tether.models.catalog import load_catalog, run_catalog
from tether.models.function import FunctionModel
from tether.models.pricing import cost_usd, price_for, price_known
from tether.models.retry import backoff_delay, complete_with_retries, is_transient_status
from tether.policy.defaults import default_envelope
from tether.policy.strict import price_file_problems


def failing(*errors: BaseException) -> tuple[FunctionModel, list[int]]:
    """A model that raises ``errors`` in turn, then answers "ok"; also returns its call counter."""
    calls: list[int] = []

    def fn(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelResponse | str:
        calls.append(1)
        if len(calls) <= len(errors):
            raise errors[len(calls) - 1]
        return "ok"

    return FunctionModel(fn), calls


def run(
    model: FunctionModel,
    *,
    max_attempts: int = 4,
    sleep: Callable[[float], None] = lambda s: None,
    on_retry: Callable[[int, ProviderError, int], None] | None = None,
    rand: Callable[[], float] = random.random,
) -> tuple[ModelResponse, int]:
    return complete_with_retries(
        model,
        [],
        [],
        max_tokens=10,
        max_attempts=max_attempts,
        backoff_s=1.0,
        backoff_max_s=3.0,
        sleep=sleep,
        on_retry=on_retry,
        rand=rand,
    )


def test_backoff_is_exponential_capped_and_fully_jittered() -> None:
    sleeps: list[float] = []
    model, _ = failing(*[ProviderError("busy", transient=True, status=503)] * 4)
    with pytest.raises(ProviderError):
        run(model, sleep=sleeps.append, rand=lambda: 1.0)
    assert sleeps == [1.0, 2.0, 3.0]
    assert backoff_delay(3, backoff_s=1.0, backoff_max_s=10.0, rand=lambda: 0.25) == 1.0
    assert backoff_delay(1, backoff_s=1.0, backoff_max_s=10.0, rand=lambda: 0.0) == 0.0


def test_transient_errors_are_retried_until_success() -> None:
    retried: list[int] = []
    model, calls = failing(ProviderError("a", transient=True), ProviderError("b", transient=True, status=429))
    r, attempts = run(model, on_retry=lambda n, e, _: retried.append(n))
    assert (r.text, attempts, len(calls), retried) == ("ok", 3, 3, [1, 2])


def test_the_last_transient_error_is_raised_after_max_attempts() -> None:
    errors = [ProviderError(f"e{i}", transient=True, status=500) for i in range(4)]
    model, calls = failing(*errors)
    with pytest.raises(ProviderError) as info:
        run(model)
    assert info.value is errors[3] and len(calls) == 4


def test_non_transient_errors_and_foreign_exceptions_are_not_retried() -> None:
    model, calls = failing(ProviderError("bad request", transient=False, status=400))
    with pytest.raises(ProviderError, match="bad request"):
        run(model)
    assert len(calls) == 1
    model, calls = failing(KeyError("bug in a callable"))
    with pytest.raises(KeyError):
        run(model)
    assert len(calls) == 1


def test_one_attempt_means_no_retry() -> None:
    model, calls = failing(ProviderError("x", transient=True))
    with pytest.raises(ProviderError):
        run(model, max_attempts=1)
    assert len(calls) == 1
    with pytest.raises(ValueError):
        run(model, max_attempts=0)


@pytest.mark.parametrize(
    ("status", "transient"),
    [(400, False), (401, False), (404, False), (408, True), (429, True), (500, True), (503, True), (529, True)],
)
def test_transient_statuses(status: int, transient: bool) -> None:
    assert is_transient_status(status) is transient


def test_cost_of_known_models_with_and_without_provider_prefix() -> None:
    usage = Usage(input_tokens=1_000_000, output_tokens=500_000)
    assert cost_usd("gpt-4.1", usage) == pytest.approx(2.0 + 4.0)
    assert cost_usd("openai:gpt-4.1", usage) == pytest.approx(6.0)
    assert cost_usd("anthropic:claude-sonnet-4-5", usage) == pytest.approx(3.0 + 7.5)


def test_dated_snapshots_use_the_longest_listed_prefix() -> None:
    usage = Usage(1_000_000, 0)
    assert cost_usd("claude-sonnet-4-5-20250929", usage) == pytest.approx(3.0)
    assert cost_usd("gpt-4.1-mini-2025-04-14", usage) == pytest.approx(0.40)  # not gpt-4.1's price
    assert cost_usd("gpt-4.1-2025-04-14", usage) == pytest.approx(2.0)


def test_envelope_overrides_win() -> None:
    overrides = {
        "gpt-4.1": Price(input_per_mtok=1.0, output_per_mtok=1.0),
        "my-local": Price(input_per_mtok=0.0, output_per_mtok=0.0),
    }
    assert cost_usd("openai:gpt-4.1", Usage(1_000_000, 1_000_000), overrides) == pytest.approx(2.0)
    assert price_known("openai:my-local", overrides)


def test_unknown_models_cost_nothing_but_say_so() -> None:
    assert cost_usd("openai:llama3.1:8b", Usage(10**6, 10**6)) == 0.0
    assert not price_known("openai:llama3.1:8b")
    assert price_known("scripted:trajectory.yaml") and price_known("function:echo")
    assert cost_usd("scripted:trajectory.yaml", Usage(10**6, 10**6)) == 0.0


def test_current_models_are_priced_and_a_dated_snapshot_of_a_new_one_is_not_its_elder() -> None:
    assert price_for("openai:gpt-5.1-2025-11-13") == price_for("gpt-5.1")
    assert price_for("gpt-5-pro") != price_for("gpt-5")  # not the cheaper model's price by prefix
    assert all(price_known(m) for m in ("o3-mini", "o1", "claude-3-haiku-20240307", "claude-opus-4-5-20251101"))


def test_a_price_file_overrides_the_table_and_the_envelope_overrides_the_file(tmp_path: Path) -> None:
    (tmp_path / "prices.yaml").write_text(
        "gpt-4.1: {input_per_mtok: 1.0, output_per_mtok: 4.0}\nmy-local: {input_per_mtok: 0.1, output_per_mtok: 0.2}\n"
    )
    env = default_envelope().model_copy(
        update={"pricing_file": "prices.yaml", "pricing": {"my-local": Price(input_per_mtok=0, output_per_mtok=0)}}
    )
    prices = run_catalog(env, tmp_path)
    assert price_for("openai:gpt-4.1", prices) == Price(input_per_mtok=1.0, output_per_mtok=4.0)
    assert price_for("openai:my-local", prices) == Price(input_per_mtok=0, output_per_mtok=0)
    assert price_for("gpt-4o", prices) == price_for("gpt-4o")  # the rest of the table stands


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("gpt-4.1: {input_per_mtok: 1.0, output_per_mtok: -4}\n", "$.gpt-4.1.output_per_mtok"),
        ("gpt-4.1: {input_per_mtok: 1.0}\n", "$.gpt-4.1.output_per_mtok"),
        ("gpt-4.1: {input_per_mtok: cheap, output_per_mtok: 1}\n", "$.gpt-4.1.input_per_mtok"),
        ("gpt-4.1: {input_per_mtok: 1, output_per_mtok: 1, cached: 0.1}\n", "$.gpt-4.1.cached"),
        ("- gpt-4.1\n", "$"),
    ],
)
def test_a_malformed_price_file_names_the_file_and_the_field(tmp_path: Path, text: str, where: str) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text(text)
    with pytest.raises(EnvelopeInvalid) as err:
        load_catalog(path)
    assert [p.path for p in err.value.problems] == [where]
    assert str(path) in str(err.value)
    problems = price_file_problems(
        default_envelope().model_copy(update={"pricing_file": "prices.yaml"}), tmp_path / "e.yaml"
    )
    assert [p.path for p in problems] == [where]  # `tether validate --strict` says the same before any run
    missing = price_file_problems(
        default_envelope().model_copy(update={"pricing_file": "nope.yaml"}), tmp_path / "e.yaml"
    )
    assert [p.path for p in missing] == ["$.pricing_file"] and "nope.yaml" in str(missing[0])


def test_no_retry_waits_past_the_time_the_run_has_left() -> None:
    """``time_left`` (the run's wall-time budget): a retry whose wait would reach past it is not made; the error
    says why. Without it a call went on retrying after the run's time was spent."""
    left = [10.0, 2.5, 0.5]
    sleeps: list[float] = []
    model, calls = failing(*[ProviderError(f"e{i}", transient=True, status=503) for i in range(4)])
    with pytest.raises(ProviderError) as info:
        complete_with_retries(
            model, [], [], max_tokens=10, max_attempts=4, backoff_s=1.0, backoff_max_s=3.0,
            sleep=sleeps.append, rand=lambda: 1.0, time_left=lambda: left.pop(0),
        )  # fmt: skip
    assert len(calls) == 3 and sleeps == [1.0, 2.0]  # the third wait (3 s) is past the 0.5 s left
    err = info.value
    assert err.transient and err.status == 503 and err.attempts == 3
    assert str(err).startswith("e2") and "budgets.wall_s" in str(err) and "0.5 s left" in str(err)


def test_a_run_with_no_time_limit_retries_as_before() -> None:
    model, calls = failing(*[ProviderError("busy", transient=True)] * 2)
    r, attempts = complete_with_retries(
        model, [], [], max_tokens=10, max_attempts=4, backoff_s=1.0, backoff_max_s=3.0,
        sleep=lambda s: None, time_left=lambda: None,
    )  # fmt: skip
    assert (r.text, attempts, len(calls)) == ("ok", 3, 3)
