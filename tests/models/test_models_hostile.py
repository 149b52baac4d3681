"""Both adapters, through the real SDKs, against hostile or broken servers on 127.0.0.1 (never beyond it).

What a server sends is read tolerantly but never trusted: a redirect is refused, not followed (the transcript
goes to the configured base URL only), and whatever cannot be read is a typed failure, never a crash.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

from tether.envelope.schema import Price
from tether.errors import ProviderError
from tether.models.anthropic_adapter import AnthropicModel
from tether.models.base import Message
from tether.models.openai_adapter import OpenAIModel
from tether.models.pricing import cost_usd
from tether.models.testing import (
    PROXY_ENV_VARS,
    AnthropicWireServer,
    OpenAIWireServer,
    Reply,
    WireServer,
    anthropic_message,
    openai_chat,
)

SECRET = "the transcript: only the configured server may read it"
USER = [Message("user", SECRET)]
PRICE = Price(input_per_mtok=2.0, output_per_mtok=8.0)


@pytest.fixture(autouse=True)
def _offline_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in (*PROXY_ENV_VARS, "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


Kind = type[OpenAIWireServer] | type[AnthropicWireServer]


def model_for(server: WireServer, *, timeout_s: float = 10.0) -> OpenAIModel | AnthropicModel:
    if isinstance(server, AnthropicWireServer):
        return AnthropicModel("claude-test", api_key="sk-ant-test", base_url=server.base_url, timeout_s=timeout_s)
    return OpenAIModel("gpt-test", api_key="sk-test", base_url=server.base_url, timeout_s=timeout_s)


def answer(server: WireServer, text: str = "hi") -> Reply:
    return anthropic_message(text) if isinstance(server, AnthropicWireServer) else openai_chat(text)


@pytest.fixture(params=[OpenAIWireServer, AnthropicWireServer], ids=["openai", "anthropic"])
def servers(request: pytest.FixtureRequest) -> Iterator[tuple[WireServer, WireServer]]:
    kind: Kind = request.param
    with kind() as configured, kind() as elsewhere:
        yield configured, elsewhere


# ---- redirects ----------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_to_another_host_is_refused_and_nothing_is_sent_there(
    servers: tuple[WireServer, WireServer], status: int
) -> None:
    """``localhost`` is another host than ``127.0.0.1`` to an HTTP client: a loopback name proves the refusal."""
    configured, elsewhere = servers
    target = f"http://localhost:{elsewhere.port}{elsewhere.path}"
    configured.push(Reply(status, {}, {"location": target}))
    elsewhere.push(answer(elsewhere, "answered by another host"))

    with pytest.raises(ProviderError) as info:
        model_for(configured).complete(USER, [], max_tokens=10)

    assert elsewhere.requests == []  # neither the transcript nor a key left for the other host
    assert info.value.status == status and not info.value.transient and not info.value.malformed
    assert "redirect" in str(info.value) and target in str(info.value)


def test_a_redirect_on_the_same_server_is_refused_too(servers: tuple[WireServer, WireServer]) -> None:
    """Not followed even to the same origin: the configured base URL is the only address a request goes to."""
    configured, _ = servers
    configured.push(Reply(307, {}, {"location": configured.path}), answer(configured))

    with pytest.raises(ProviderError, match="redirect"):
        model_for(configured).complete(USER, [], max_tokens=10)
    assert len(configured.requests) == 1 and configured.pending == 1


# ---- usage --------------------------------------------------------------------------------------


def with_usage(server: WireServer, input_tokens: object, output_tokens: object) -> Reply:
    reply = answer(server)
    if isinstance(server, AnthropicWireServer):
        return Reply(body={**reply.body, "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens}})
    return Reply(body={**reply.body, "usage": {"prompt_tokens": input_tokens, "completion_tokens": output_tokens}})


@pytest.mark.parametrize(
    "counts",
    [(10**400, 1), (1, 10**400), (2**53 + 1, 1), (-1, 5), (5, -1), (1.5, 2), (True, 2), ("12", 2), (None, 2)],
    ids=["huge-in", "huge-out", "past-2^53", "negative-in", "negative-out", "float", "bool", "string", "null"],
)
def test_usage_that_cannot_be_a_count_is_unreported_and_prices_without_a_crash(
    servers: tuple[WireServer, WireServer], counts: tuple[object, object]
) -> None:
    """A count no server can have billed (past 2**53, where JSON's numbers stop being exact) is not a count: the host
    estimates, as for missing usage. 10**400 made the price an OverflowError after the reply had arrived."""
    configured, _ = servers
    configured.push(with_usage(configured, *counts))
    model = model_for(configured)
    r = model.complete(USER, [], max_tokens=10)
    assert not r.usage.reported and (r.usage.input_tokens, r.usage.output_tokens) == (0, 0)
    assert cost_usd(model.name, r.usage, {model.name: PRICE}) == 0.0


def test_a_large_real_count_is_reported(servers: tuple[WireServer, WireServer]) -> None:
    configured, _ = servers
    configured.push(with_usage(configured, 2**53, 7))
    model = model_for(configured)
    r = model.complete(USER, [], max_tokens=10)
    assert r.usage.reported and (r.usage.input_tokens, r.usage.output_tokens) == (2**53, 7)
    assert math.isfinite(cost_usd(model.name, r.usage, {model.name: PRICE}))
