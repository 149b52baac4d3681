"""The environment a sandboxed command sees: an allowlist, never the host's secrets, plus non-interactive guards."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

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
    env = {name: host[name] for name in (*BASE_ALLOW, *env_allow) if name in host}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.setdefault("LANG", "C.UTF-8")
    env.update(extra or {})
    env.update(overrides or {})
    env.update(GUARDS)
    return env
