"""The environment a sandboxed command sees: an allowlist, never the host's secrets, plus non-interactive guards."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
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


BASH_STARTS: frozenset[str] = frozenset({"BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4"})
BASH_STARTS_PREFIXES = ("BASH_FUNC_", "LD_")
"""Variables that make bash run code as it starts, before its first line: a file it sources (``BASH_ENV``), options
(``SHELLOPTS=xtrace`` expands ``PS4``, command substitutions included), functions it imports (one named ``read``
replaces the builtin), a library the loader injects. A held command (:class:`.process.Hold`) waits on its first
line: with any of these in its environment it is not held, and what it waits for runs first."""


def starts_code(names: Iterable[str]) -> bool:
    """Would an environment holding ``names`` make bash run code before its first line (:data:`BASH_STARTS`)?"""
    return any(n in BASH_STARTS or n.startswith(BASH_STARTS_PREFIXES) for n in names)


def build_env(
    host: Mapping[str, str],
    *,
    env_allow: Sequence[str] = (),
    extra: Mapping[str, str] | None = None,
    overrides: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Allowlisted host variables, then the caller's ``extra``, then backend ``overrides``, then the guards."""
    env = host_values(host, (*BASE_ALLOW, *env_allow))
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.setdefault("LANG", "C.UTF-8")
    env.update(extra or {})
    env.update(overrides or {})
    env.update(GUARDS)
    return env


def host_values(host: Mapping[str, str], names: tuple[str, ...]) -> dict[str, str]:
    """The variables among ``names`` that ``host`` sets, read when asked (a change between commands is seen).

    For the process's own ``os.environ`` (every command's case), through the encoded dict CPython keeps behind it
    (``os.environ._data``: the same store ``os.environ[...] =``, ``del`` and ``monkeypatch.setenv`` change): one C
    lookup per name, and the values decoded once per distinct set of raw values. ``os.environ.get`` is five Python
    calls per name (encode the key, look up, decode the value), about 70,000 instructions for the nine base
    names of every command. Any other mapping, or an ``os.environ`` without that dict, is read name by name."""
    data = getattr(host, "_data", None) if host is os.environ else None
    if isinstance(data, dict):
        return dict(_decoded(names, tuple(map(data.get, _encoded(names)))))
    # One lookup per name (``os.environ`` encodes the key for ``in`` and again for ``[]``); None is never a value.
    return {name: value for name in names if (value := host.get(name)) is not None}


@lru_cache(maxsize=16)
def _encoded(names: tuple[str, ...]) -> tuple[bytes, ...]:
    return tuple(map(os.fsencode, names))  # os.environ's own key encoding on POSIX


@lru_cache(maxsize=16)
def _decoded(names: tuple[str, ...], raws: tuple[bytes | None, ...]) -> tuple[tuple[str, str], ...]:
    return tuple((name, os.fsdecode(raw)) for name, raw in zip(names, raws, strict=True) if raw is not None)


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
