"""Choosing a sandbox from the envelope: fail closed when required, visible fallback when not."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tether.envelope.schema import Sandbox as SandboxSpec
from tether.errors import SandboxUnavailable

from .base import Sandbox
from .bwrap import BwrapSandbox, bwrap_available, probe
from .local import LocalSandbox


def make_sandbox(spec: SandboxSpec, workspace: Path, *, env_allow: Sequence[str] = ()) -> Sandbox:
    """The sandbox the envelope asks for.

    ``bwrap`` that cannot start raises :class:`SandboxUnavailable` (with the fix) when ``spec.required``;
    otherwise a :class:`LocalSandbox` whose ``fallback_reason`` says why. Never a silent fallback.
    """
    if spec.backend == "local":
        return LocalSandbox(env_allow=env_allow)
    error = probe()
    if error is None:
        return BwrapSandbox(workspace, env_allow=env_allow)
    if spec.required:
        raise SandboxUnavailable(
            f"the envelope requires the bwrap sandbox and it cannot start; the command was not run. {error}",
            fix=error.fix,
        ) from error
    return LocalSandbox(env_allow=env_allow, fallback_reason=str(error))


__all__ = ["bwrap_available", "make_sandbox"]
