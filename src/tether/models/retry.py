"""Retrying transient provider failures, outside the adapters.

Adapters make exactly one attempt (the SDKs' own retries are switched off) and
classify failures as transient or not; this loop owns the policy, so every
provider retries the same way, the envelope's limits apply, and each retry is
visible to the host (``on_retry``) for the log instead of hidden in an SDK.

Backoff is exponential with *full jitter*: before retry ``n`` (1-based) we
sleep ``uniform(0, min(backoff_max_s, backoff_s * 2**(n-1)))``, which spreads
clients that failed together. ``sleep`` and ``rand`` are injectable so tests
run instantly and deterministically.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence

from tether.errors import ProviderError
from tether.models.base import Message, Model, ModelResponse, ToolSpec


def backoff_delay(retry: int, *, backoff_s: float, backoff_max_s: float, rand: Callable[[], float]) -> float:
    """Seconds to wait before retry number ``retry`` (1-based)."""
    cap = min(backoff_max_s, backoff_s * 2.0 ** (retry - 1))
    return cap * rand()


def complete_with_retries(
    model: Model,
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    *,
    max_tokens: int,
    max_attempts: int,
    backoff_s: float,
    backoff_max_s: float,
    sleep: Callable[[float], None] = time.sleep,
    on_retry: Callable[[int, ProviderError], None] | None = None,
    rand: Callable[[], float] = random.random,
) -> tuple[ModelResponse, int]:
    """Call ``model.complete`` up to ``max_attempts`` times; return ``(response, attempts)``.

    A non-transient :class:`ProviderError` is raised at once. A transient one is
    retried; ``on_retry(attempt, error)`` is called with the attempt that failed
    before sleeping. After ``max_attempts`` the last transient error is re-raised.
    """
    if max_attempts < 1:
        raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
    attempt = 1
    while True:
        try:
            return model.complete(messages, tools, max_tokens=max_tokens), attempt
        except ProviderError as err:
            if not err.transient or attempt >= max_attempts:
                raise
            if on_retry is not None:
                on_retry(attempt, err)
            sleep(backoff_delay(attempt, backoff_s=backoff_s, backoff_max_s=backoff_max_s, rand=rand))
            attempt += 1


def is_transient_status(status: int) -> bool:
    """HTTP statuses worth retrying: timeout, conflict/lock, rate limit, any server error (incl. 529 overloaded)."""
    return status in (408, 409, 429) or status >= 500
