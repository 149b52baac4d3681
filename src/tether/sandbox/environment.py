"""The environment a sandboxed command sees: an allowlist, never the host's secrets, plus non-interactive guards."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

BASE_ALLOW: tuple[str, ...] = ("PATH", "HOME", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TZ", "USER", "LOGNAME")
"""Host variables passed through by default (only if set). Anything else needs ``env_allow``."""

GUARDS: Mapping[str, str] = {
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "CI": "true",
    "TERM": "dumb",
    "DEBIAN_FRONTEND": "noninteractive",
    "GIT_TERMINAL_PROMPT": "0",
}
"""Always set, and set last: nothing may turn a command interactive."""


def build_env(
    host: Mapping[str, str],
    *,
    env_allow: Sequence[str] = (),
    extra: Mapping[str, str] | None = None,
    overrides: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Allowlisted host variables, then the caller's ``extra``, then backend ``overrides``, then the guards."""
    # One lookup per name (``os.environ`` encodes the key for ``in`` and again for ``[]``); None is never a value.
    env = {name: value for name in (*BASE_ALLOW, *env_allow) if (value := host.get(name)) is not None}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.setdefault("LANG", "C.UTF-8")
    env.update(extra or {})
    env.update(overrides or {})
    env.update(GUARDS)
    return env


MIN_MASKED = 6
"""Shorter values are not masked: they would match ordinary text everywhere."""


def passed_values(
    host: Mapping[str, str], env_allow: Sequence[str] = (), secret_sources: Sequence[str] = ()
) -> dict[str, str]:
    """Host values handed to commands beyond the base allowlist (``env_allow``, ``env:NAME`` secret sources).

    Why: a command may print what it was given, and whatever a tool returns is logged and shown to the
    model; these values are masked there (:func:`mask`) and kept out of episode packages.
    """
    names = [*env_allow, *(s[4:] for s in secret_sources if s.startswith("env:"))]
    return {name: host[name] for name in names if len(host.get(name, "")) >= MIN_MASKED}


def mask(value: Any, values: Mapping[str, str]) -> Any:
    """``value`` with every occurrence of a passed value replaced by ``[$NAME]``, in every string it holds."""
    if not values:
        return value
    if isinstance(value, str):
        for name, secret in values.items():
            value = value.replace(secret, f"[${name}]")
        return value
    if isinstance(value, dict):
        return {k: mask(v, values) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [mask(v, values) for v in value]
    return value
