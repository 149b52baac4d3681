"""Turning a model spec string (envelope ``agent.model`` or ``--model``) into a :class:`Model`.

Specs are ``PROVIDER:REST``:

* ``scripted:FILE``   — a YAML trajectory; ``FILE`` is relative to ``base_dir`` (the envelope's folder).
``timeout_s`` (the envelope's ``agent.request_timeout_s``) bounds each request as a whole;
``profile`` (``agent.provider_profile``) names the server kind, else it is detected from the
base URL (:mod:`tether.models.profiles`).

* ``openai:MODEL``    — ``base_url`` or ``OPENAI_BASE_URL`` for compatible servers; key from
  ``api_key`` or ``OPENAI_API_KEY`` (a custom server that needs no key gets a placeholder).
* ``anthropic:MODEL`` — ``base_url`` or ``ANTHROPIC_BASE_URL``; key from ``api_key``,
  ``ANTHROPIC_API_KEY`` or ``ANTHROPIC_AUTH_TOKEN``.

Everything that can be checked before the first call is checked here, so a bad
spec or a missing key is an :class:`InputError` at load time, not a failed run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tether.envelope.schema import ProviderProfile
from tether.errors import InputError
from tether.models.base import Model
from tether.models.profiles import Profile, detect
from tether.models.scripted import ScriptedModel

if TYPE_CHECKING:  # the SDKs are slow to import; only a spec that names one pays for it
    from tether.models.anthropic_adapter import AnthropicModel
    from tether.models.openai_adapter import OpenAIModel

PROVIDERS = ("scripted", "openai", "anthropic")
EXPECTED = "one of scripted:FILE, openai:MODEL, anthropic:MODEL"
NO_KEY_PLACEHOLDER = "not-needed"


def load_model(
    spec: str,
    *,
    base_dir: Path,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout_s: float = 120.0,
    profile: ProviderProfile | None = None,
) -> Model:
    """Build the model named by ``spec``; raise :class:`InputError` saying what was expected."""
    provider, sep, rest = spec.partition(":")
    rest = rest.strip()
    if not sep or provider not in PROVIDERS:
        raise InputError(f"model {spec!r}: unknown model spec; expected {EXPECTED}")
    if not rest:
        raise InputError(f"model {spec!r}: missing {'FILE' if provider == 'scripted' else 'MODEL'} after '{provider}:'")
    if provider == "scripted":
        return ScriptedModel.from_file(base_dir / rest, name=spec)
    url = base_url or _env("OPENAI_BASE_URL" if provider == "openai" else "ANTHROPIC_BASE_URL")
    settings = Settings(url, api_key, timeout_s, detect(provider, url, profile))
    return _openai(spec, rest, settings) if provider == "openai" else _anthropic(spec, rest, settings)


@dataclass(frozen=True)
class Settings:
    base_url: str | None
    api_key: str | None
    timeout_s: float
    profile: Profile


def _env(name: str) -> str | None:
    return os.environ.get(name) or None


def _openai(spec: str, model: str, settings: Settings) -> OpenAIModel:
    from tether.models.openai_adapter import OpenAIModel

    key = settings.api_key or _env("OPENAI_API_KEY")
    if key is None:
        if settings.base_url is None:
            raise InputError(
                f"model {spec!r}: no API key; expected OPENAI_API_KEY to be set (or --base-url to a keyless server)"
            )
        key = NO_KEY_PLACEHOLDER  # local servers (Ollama, vLLM, llama.cpp) ignore it but the SDK insists
    return OpenAIModel(
        model, api_key=key, base_url=settings.base_url, timeout_s=settings.timeout_s, profile=settings.profile
    )


def _anthropic(spec: str, model: str, settings: Settings) -> AnthropicModel:
    from tether.models.anthropic_adapter import AnthropicModel

    key = settings.api_key or _env("ANTHROPIC_API_KEY")
    token = None if key else _env("ANTHROPIC_AUTH_TOKEN")
    if key is None and token is None:
        raise InputError(f"model {spec!r}: no API key; expected ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) to be set")
    return AnthropicModel(
        model,
        api_key=key,
        auth_token=token,
        base_url=settings.base_url,
        timeout_s=settings.timeout_s,
        profile=settings.profile,
    )
