"""Every provider stop word maps to one normalised termination; the unknown fails closed."""

from __future__ import annotations

from typing import get_args

import pytest

from tether.models.base import TERMINATIONS, Termination
from tether.models.termination import ANTHROPIC_STOP, OPENAI_FINISH, anthropic_termination, openai_termination


@pytest.mark.parametrize(
    ("finish", "expected"),
    [
        ("stop", "complete"),
        ("tool_calls", "tool_request"),
        ("length", "truncated"),
        ("content_filter", "refusal"),
        (None, "unknown"),
        ("something_new", "unknown"),
    ],
)
def test_openai_finish_reasons(finish: str | None, expected: Termination) -> None:
    assert openai_termination(finish, refused=False, has_tool_calls=expected == "tool_request") == expected


@pytest.mark.parametrize(
    ("stop", "expected"),
    [
        ("end_turn", "complete"),
        ("stop_sequence", "complete"),
        ("tool_use", "tool_request"),
        ("max_tokens", "truncated"),
        ("model_context_window_exceeded", "truncated"),
        ("refusal", "refusal"),
        ("pause_turn", "unknown"),
        (None, "unknown"),
    ],
)
def test_anthropic_stop_reasons(stop: str | None, expected: Termination) -> None:
    assert anthropic_termination(stop, has_tool_calls=expected == "tool_request") == expected


def test_refusal_wins_and_claims_are_reconciled_with_what_came_back() -> None:
    assert openai_termination("tool_calls", refused=True, has_tool_calls=True) == "refusal"
    assert openai_termination("stop", refused=False, has_tool_calls=True) == "tool_request"
    assert openai_termination("tool_calls", refused=False, has_tool_calls=False) == "unknown"
    assert anthropic_termination("tool_use", has_tool_calls=False) == "unknown"
    assert anthropic_termination("max_tokens", has_tool_calls=True) == "truncated"


def test_tables_only_produce_known_terminations() -> None:
    assert set(get_args(Termination)) == set(TERMINATIONS)
    assert set(OPENAI_FINISH.values()) | set(ANTHROPIC_STOP.values()) <= set(TERMINATIONS)


def test_no_stop_word_means_the_calls_are_meant_and_an_unknown_one_does_not() -> None:
    """Local servers that send no finish reason keep working; a word tether does not know leaves the calls unknown."""
    assert openai_termination(None, refused=False, has_tool_calls=True) == "tool_request"
    assert openai_termination(None, refused=False, has_tool_calls=False) == "unknown"
    assert anthropic_termination(None, has_tool_calls=True) == "tool_request"
    for word in ("abort", "error", "MALFORMED_FUNCTION_CALL", "", "TOOL_CALLS"):
        assert openai_termination(word, refused=False, has_tool_calls=True) == "unknown"
    assert anthropic_termination("pause_turn", has_tool_calls=True) == "unknown"
