"""Both SDKs' errors read the same way (tether.models.sdk), whichever adapter made the request."""

from __future__ import annotations

from types import ModuleType

import anthropic
import httpx
import openai
import pytest

from tether.errors import ContextOverflow, ProviderError
from tether.models.sdk import failure, json_body

REQUEST = httpx.Request("POST", "http://127.0.0.1:9/v1")
SDKS = [anthropic, openai]


def status_error(sdk: ModuleType, status: int, message: str) -> Exception:
    response = httpx.Response(status, request=REQUEST, json={"error": {"message": message}})
    error: Exception = sdk.APIStatusError(message, response=response, body={"error": {"message": message}})
    return error


@pytest.mark.parametrize("sdk", SDKS, ids=lambda m: m.__name__)
@pytest.mark.parametrize(("status", "transient"), [(400, False), (401, False), (408, True), (429, True), (529, True)])
def test_a_status_is_transient_as_its_code_says(sdk: ModuleType, status: int, transient: bool) -> None:
    err = failure(status_error(sdk, status, "no"), sdk, "m", 5.0)
    assert type(err) is ProviderError
    assert (err.status, err.transient, str(err)) == (status, transient, f"m: HTTP {status}: no")


@pytest.mark.parametrize("sdk", SDKS, ids=lambda m: m.__name__)
def test_a_prompt_that_did_not_fit_is_an_overflow_not_a_status(sdk: ModuleType) -> None:
    err = failure(status_error(sdk, 400, "prompt is too long: 210000 tokens > 200000 maximum"), sdk, "m", 5.0)
    assert isinstance(err, ContextOverflow) and not err.transient
    assert err.prompt_tokens == 210000


@pytest.mark.parametrize("sdk", SDKS, ids=lambda m: m.__name__)
def test_timeout_connection_and_other_errors(sdk: ModuleType) -> None:
    timeout = failure(sdk.APITimeoutError(request=REQUEST), sdk, "m", 2.5)
    assert timeout.transient and timeout.status is None
    assert str(timeout) == "m: no answer within 2.5 s (agent.request_timeout_s); the request was abandoned"
    lost = failure(sdk.APIConnectionError(message="reset", request=REQUEST), sdk, "m", 2.5)
    assert (lost.transient, str(lost)) == (True, "m: reset")
    other = failure(sdk.APIResponseValidationError(httpx.Response(200, request=REQUEST), None), sdk, "m", 2.5)
    assert not other.transient and other.status is None


def test_a_body_that_is_not_json_is_malformed() -> None:
    assert json_body('{"a": 1}', "m") == {"a": 1}
    with pytest.raises(ProviderError) as info:
        json_body("<html>" + "x" * 500, "m")
    assert info.value.malformed and len(str(info.value)) < 260
