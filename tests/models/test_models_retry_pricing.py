"""The retry policy and the price table, without any network."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

import pytest

from tether.envelope.schema import Price
from tether.errors import ProviderError
from tether.models.base import Message, ModelResponse, ToolSpec, Usage
from tether.models.function import FunctionModel
from tether.models.pricing import cost_usd, price_known
from tether.models.retry import backoff_delay, complete_with_retries, is_transient_status


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
