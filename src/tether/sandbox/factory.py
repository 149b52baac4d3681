"""Choosing a sandbox from the envelope: fail closed when required, visible fallback when not."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tether.envelope.schema import Network
from tether.envelope.schema import Sandbox as SandboxSpec
from tether.errors import SandboxUnavailable

from .base import Sandbox
from .bwrap import BwrapSandbox, bwrap_available, probe
from .egress import Egress, Resolver
from .egress_policy import EgressPolicy
from .local import LocalSandbox


def make_sandbox(
    spec: SandboxSpec,
    workspace: Path,
    *,
    env_allow: Sequence[str] = (),
    deny: Sequence[str] = (),
    secrets: Sequence[str] = (),
    network: Network | None = None,
    resolver: Resolver | None = None,
) -> Sandbox:
    """The sandbox the envelope asks for.

    ``bwrap`` that cannot start raises :class:`SandboxUnavailable` (with the fix) when ``spec.required``;
    otherwise a :class:`LocalSandbox` whose ``fallback_reason`` says why. Never a silent fallback.
    ``deny`` globs are covered inside bwrap. An envelope that declares ``secrets`` never gets ``local``,
    asked for or as a fallback: it isolates nothing, so the secrets would be one ``cat`` away.
    A ``network`` that lists hosts gives each bwrap command the egress proxy (``resolver``: tests' names);
    none, or an empty list, leaves it without any network.
    """
    if spec.backend == "local":
        refuse_secrets(secrets, "the local sandbox was asked for")
        return LocalSandbox(env_allow=env_allow)
    error = probe()
    if error is None:
        egress = Egress(EgressPolicy.of(network), resolver) if network is not None and network.allow else None
        return BwrapSandbox(workspace, env_allow=env_allow, deny=deny, egress=egress)
    if spec.required:
        raise SandboxUnavailable(
            f"the envelope requires the bwrap sandbox and it cannot start; the command was not run. {error}",
            fix=error.fix,
        ) from error
    refuse_secrets(secrets, f"bwrap cannot start ({error}) and the fallback would be local")
    return LocalSandbox(env_allow=env_allow, fallback_reason=str(error))


def refuse_secrets(secrets: Sequence[str], why: str) -> None:
    if secrets:
        raise SandboxUnavailable(
            f"the envelope declares secrets ({', '.join(secrets)}) and {why}; the local sandbox does not hide the "
            "user's files, network or other processes' environments from a command, so nothing was run.",
            fix="run with the bwrap sandbox (tether doctor shows why it cannot start), or remove the secrets",
        )


__all__ = ["bwrap_available", "make_sandbox"]
