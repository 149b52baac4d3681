"""Retrying transient provider failures, outside the adapters.

Adapters make exactly one attempt (the SDKs' own retries are switched off) and
classify failures as transient or not; this loop owns the policy, so every
provider retries the same way, the envelope's limits apply, and each retry is
visible to the host (``on_retry``) for the log instead of hidden in an SDK.

A :class:`ContextOverflow` is not an outage and is never retried as-is: when the provider's
error says how much room there is (or else at half the output budget), the call is retried once
with the smaller ``max_tokens`` that fits (:func:`tether.models.window.shrink`); otherwise it is
raised at once. So one logical call makes at most ``max_attempts + 1`` requests, and the error
that ends it carries how many it made (``attempts``).

Backoff is exponential with *full jitter*: before retry ``n`` (1-based) we
sleep ``uniform(0, min(backoff_max_s, backoff_s * 2**(n-1)))``, which spreads
clients that failed together. ``sleep`` and ``rand`` are injectable so tests
run instantly and deterministically.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence

from tether.errors import ContextOverflow, ProviderError
from tether.models.base import Message, Model, ModelResponse, ToolSpec
from tether.models.window import shrink

OnRetry = Callable[[int, ProviderError, int], None]
"""``on_retry(attempt that failed, its error, max_tokens of the next attempt)``."""


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
    on_retry: OnRetry | None = None,
    rand: Callable[[], float] = random.random,
    time_left: Callable[[], float | None] | None = None,
) -> tuple[ModelResponse, int]:
    """Call ``model.complete`` up to ``max_attempts`` times; return ``(response, attempts)``.

    A non-transient :class:`ProviderError` is raised at once. A transient one is
    retried; ``on_retry`` is called with the attempt that failed before sleeping.
    After ``max_attempts`` the last transient error is re-raised. An overflow is
    retried once, without sleeping, with a smaller output budget when one fits.

    ``time_left`` says how many seconds the run has left (its ``budgets.wall_s``; None: no limit): a retry whose
    wait would not end before then is not made, and the error says so. The retries are the host's time too.
    """
    if max_attempts < 1:
        raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
    attempt, failures, shrunk = 1, 0, False
    while True:
        try:
            return model.complete(messages, tools, max_tokens=max_tokens), attempt
        except ContextOverflow as err:
            smaller = None if shrunk else shrink(err, max_tokens)
            err.attempts = attempt
            if smaller is None:
                raise
            if on_retry is not None:
                on_retry(attempt, err, smaller)
            max_tokens, shrunk = smaller, True
        except ProviderError as err:
            failures += 1
            err.attempts = attempt
            if not err.transient or failures >= max_attempts:
                raise
            delay = backoff_delay(failures, backoff_s=backoff_s, backoff_max_s=backoff_max_s, rand=rand)
            left = time_left() if time_left is not None else None
            if left is not None and delay >= left:
                raise out_of_time(err, left) from err
            if on_retry is not None:
                on_retry(attempt, err, max_tokens)
            sleep(delay)
        attempt += 1


def out_of_time(err: ProviderError, left: float) -> ProviderError:
    """``err``, saying it was not retried because the run's time is spent."""
    late = ProviderError(
        f"{err}; not retried: the run has {max(left, 0.0):g} s left of budgets.wall_s",
        transient=err.transient,
        status=err.status,
        malformed=err.malformed,
    )
    late.attempts = err.attempts
    return late


def is_transient_status(status: int) -> bool:
    """HTTP statuses worth retrying: timeout, conflict/lock, rate limit, any server error (incl. 529 overloaded)."""
    return status in (408, 409, 429) or status >= 500
