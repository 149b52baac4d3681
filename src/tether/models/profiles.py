"""Provider profiles: what each kind of server is known to accept, so tether writes only that.

OpenAI-compatible servers differ in ways that break a run: llama.cpp turns a tool schema's
``maxLength: 2000000`` into a grammar and crashes; some only know ``max_tokens``; Ollama cuts an
over-long prompt silently instead of failing. A profile is the small set of facts tether acts on:

* ``token_param`` — how the output limit is sent (``max_tokens`` or ``max_completion_tokens``);
* ``strip_limits`` — drop length/size/pattern constraints from tool schemas before sending them.
  Safe because tool arguments are validated on the host against the full schema anyway; servers
  that compile schemas into grammars (llama.cpp, LM Studio, vLLM's guided decoding) choke on them;
* ``window_setting`` — where that server's context size is set, for messages that name it.

Readers are tolerant for every profile (a call sent both in ``tool_calls`` and the legacy
``function_call`` is one call; missing usage is "unknown"), writers conservative for every
profile (assistant content is ``""``, never null), so those are not profile switches.

The profile is ``agent.provider_profile`` in the envelope, or detected from the model spec and
``base_url`` by :func:`detect`: no base URL (or the provider's own host) is the hosted API; a
local URL is recognised by its server's default port (8080 llama.cpp server, 11434 Ollama, 1234
LM Studio, 4000 LiteLLM proxy); anything else is ``local``, the conservative generic profile.
Port 8000 is both vLLM's and llama-cpp-python's default, so it is ``local`` too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlparse

from tether.envelope.schema import ProviderProfile as ProfileName

TokenParam = Literal["max_tokens", "max_completion_tokens"]

LIMIT_KEYWORDS = frozenset({"maxLength", "minLength", "pattern", "maxItems", "minItems", "maxProperties"})


@dataclass(frozen=True)
class Profile:
    name: ProfileName
    token_param: TokenParam
    strip_limits: bool
    window_setting: str
    port: int | None = None


PROFILES: dict[ProfileName, Profile] = {
    p.name: p
    for p in (
        Profile("openai", "max_completion_tokens", False, "fixed by the model (see the model table)"),
        Profile("anthropic", "max_tokens", False, "fixed by the model (see the model table)"),
        Profile("llama.cpp", "max_tokens", True, "llama-server --ctx-size N (llama-cpp-python: --n_ctx N)", 8080),
        Profile("vllm", "max_tokens", True, "vllm serve --max-model-len N"),
        Profile("ollama", "max_tokens", True, "OLLAMA_CONTEXT_LENGTH=N or the model's num_ctx parameter", 11434),
        Profile("lmstudio", "max_tokens", True, "the model's context length in LM Studio's load settings", 1234),
        Profile("litellm", "max_tokens", True, "the upstream model's context size (the proxy passes it on)", 4000),
        Profile("local", "max_tokens", True, "the server's context size option (llama.cpp --ctx-size, vLLM ...)"),
    )
}

_HOSTED = {"api.openai.com": "openai", "api.anthropic.com": "anthropic"}


def detect(provider: str, base_url: str | None, chosen: ProfileName | None = None) -> Profile:
    """The profile named in the envelope, else the hosted API, else recognised by the server's default port."""
    if chosen:
        return PROFILES[chosen]
    hosted: ProfileName = "anthropic" if provider == "anthropic" else "openai"
    if not base_url:
        return PROFILES[hosted]
    url = urlparse(base_url)
    host = (url.hostname or "").lower()
    if host in _HOSTED:
        return PROFILES[hosted]
    return next((p for p in PROFILES.values() if p.port is not None and p.port == url.port), PROFILES["local"])


def simplify_schema(schema: dict[str, Any], profile: Profile) -> dict[str, Any]:
    """The tool schema as this profile's server can take it (constraints stripped where needed)."""
    return _strip(schema) if profile.strip_limits else schema


NAME_MAPS = frozenset({"properties", "$defs", "definitions", "patternProperties", "dependentSchemas"})
"""Keys whose value maps *names* to schemas: a property called ``pattern`` is not the keyword."""


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: ({name: _strip(s) for name, s in v.items()} if k in NAME_MAPS and isinstance(v, dict) else _strip(v))
            for k, v in value.items()
            if k not in LIMIT_KEYWORDS
        }
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value
