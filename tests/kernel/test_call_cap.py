"""The cap on one model call's output: its worst case must fit the money and tokens left (pure)."""

from __future__ import annotations

import pytest

from tether.envelope.schema import Price
from tether.kernel.budgets import cap_call
from tether.models.window import MIN_OUTPUT_TOKENS
from tether.state import RunState

OPUS = Price(input_per_mtok=15.0, output_per_mtok=75.0)


def state(*, usd: float | None = None, tokens: int | None = None, spent: float = 0.0, used: int = 0) -> RunState:
    s = RunState(limits={"usd": usd, "tokens": tokens})
    s.used.usd, s.used.tokens = spent, used
    return s


def test_nothing_to_cap_without_budgets() -> None:
    cap = cap_call(32_000, 5_000, OPUS, state())
    assert (cap.max_tokens, cap.capped_by, cap.short) == (32_000, None, None)
    assert cap.worst_case_usd == pytest.approx((5_000 * 15 + 32_000 * 75) / 1e6)


def test_usd_caps_the_output_so_the_worst_case_fits() -> None:
    cap = cap_call(32_000, 1_000, OPUS, state(usd=0.5, spent=0.2))  # $0.30 left; the prompt costs $0.015
    assert cap.capped_by == "usd" and cap.max_tokens == 3_800  # (0.30 - 0.015) / 0.000075
    assert cap.worst_case_usd is not None and cap.worst_case_usd <= 0.30 + 1e-12


def test_tokens_cap_the_output_and_the_tighter_budget_wins() -> None:
    cap = cap_call(32_000, 1_000, OPUS, state(usd=100.0, tokens=10_000, used=4_000))
    assert (cap.capped_by, cap.max_tokens) == ("tokens", 5_000)


def test_not_even_a_minimal_call_fits_is_a_short_budget_naming_it() -> None:
    cap = cap_call(32_000, 2_000, OPUS, state(usd=0.001))  # the prompt alone costs $0.03
    assert cap.short is not None and cap.max_tokens == 0
    assert (cap.short.budget, cap.short.limit) == ("usd", 0.001)
    assert "budgets.usd cannot pay" in cap.reason and f"({MIN_OUTPUT_TOKENS} tokens)" in cap.reason
    short = cap_call(32_000, 9_900, None, state(tokens=10_000))
    assert short.short is not None and short.capped_by == "tokens" and "tokens" in short.reason


def test_a_budget_already_overspent_is_short() -> None:
    cap = cap_call(4_000, 10, OPUS, state(usd=0.01, spent=0.02))
    assert cap.short is not None and cap.short.used == 0.02


def test_an_unpriced_model_is_capped_by_tokens_only_and_a_free_input_price_by_output() -> None:
    assert cap_call(8_000, 100, None, state(usd=0.000001)).short is None  # no price: cannot be capped by money
    free_out = Price(input_per_mtok=1.0, output_per_mtok=0.0)
    assert cap_call(8_000, 100, free_out, state(usd=1.0)).capped_by is None
    assert cap_call(8_000, 2_000_000, free_out, state(usd=1.0)).short is not None  # the prompt alone is $2


def test_a_model_limit_below_the_minimum_is_the_minimum() -> None:
    """A call whose own limit is small (max_output_tokens: 100) is not refused for being below 256."""
    cap = cap_call(100, 10, OPUS, state(usd=1.0))
    assert (cap.max_tokens, cap.short) == (100, None)
