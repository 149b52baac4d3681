"""What the official ``anthropic`` and ``openai`` SDKs raise, as tether's errors.

Both SDKs are generated alike and raise the same tree of exceptions, each under its own names, so
both adapters read a failure the same way:

    a status that says the prompt did not fit (413, …) → ContextOverflow (never retried as-is)
    a redirect (3xx), never followed                  → ProviderError(transient=False, status)
    APIStatusError 408/409/429/5xx                    → ProviderError(transient=True, status)
    APIStatusError other                              → ProviderError(transient=False, status)
    a reply refused as too large or compressed       → ProviderError(malformed=True), not retried
    APITimeoutError / APIConnectionError              → ProviderError(transient=True)
    any other error of the SDK                        → ProviderError(transient=False)

and a response body that is not JSON is a malformed :class:`ProviderError`.

The client the SDKs are given (:mod:`tether.models.httpclient`) follows no redirect and refuses replies too large,
compressed or too slow; a refusal comes back as the SDK's connection error, caused by a
:class:`~tether.models.httpclient.ReplyRefused`, and is read as a malformed reply.
"""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

from tether.errors import ProviderError
from tether.models.httpclient import ReplyRefused
from tether.models.retry import is_transient_status
from tether.models.window import overflow_from


def failure(exc: Exception, sdk: ModuleType, who: str, timeout_s: float) -> ProviderError:
    """The error to raise for ``exc``, an error of ``sdk`` (the ``anthropic`` or ``openai`` module)
    that a request of ``who``, bounded by ``timeout_s``, raised."""
    if isinstance(exc, sdk.APIStatusError):
        if 300 <= exc.status_code < 400:
            return ProviderError(
                f"{who}: HTTP {exc.status_code}, a redirect to {exc.response.headers.get('location')!r}: not "
                "followed, a request goes to the configured base URL only (set it to the final address)",
                transient=False,
                status=exc.status_code,
            )
        overflow = overflow_from(exc.status_code, exc.message, exc.body, who=who)
        if overflow is not None:
            return overflow
        return ProviderError(
            f"{who}: HTTP {exc.status_code}: {exc.message}",
            transient=is_transient_status(exc.status_code),
            status=exc.status_code,
        )
    if isinstance(exc, sdk.APITimeoutError):
        return ProviderError(
            f"{who}: no answer within {timeout_s:g} s (agent.request_timeout_s); the request was abandoned",
            transient=True,
        )
    if isinstance(exc, sdk.APIConnectionError) and isinstance(exc.__cause__, ReplyRefused):
        return ProviderError(f"{who}: {exc.__cause__}", malformed=True)
    if isinstance(exc, sdk.APIConnectionError):
        return ProviderError(f"{who}: {exc.message}", transient=True)
    return ProviderError(f"{who}: {exc}", transient=False)


def json_body(text: str, who: str) -> Any:
    """A response's body read as JSON; a malformed :class:`ProviderError` when it is not."""
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ProviderError(f"{who}: response is not JSON: {text[:200]!r}", malformed=True) from exc
