"""The secrets broker: a secret's value is read only for a call of a tool that may receive it, goes only into
that call's sandbox, and is registered for redaction before the sandbox starts.

Why a broker and not ``env_allow``: a variable in ``env_allow`` reaches every command in the clear, and what a
command prints reaches the log and the model. A brokered secret reaches only the calls of the tools its
handle names (``environment.secrets[].tools``), only inside bubblewrap (never the local backend, which hides
nothing), as an environment variable or a 0400 file on the sandbox's private tmpfs (``/run/secrets``); and
every form of its value is replaced by ``[secret:NAME]`` in whatever tether writes (:mod:`tether.events.redact`).

Resolution fails closed: a source that is missing, unreadable, inside the workspace (where the agent could
read it), mounted in the sandbox and readable by its user (any command could read it), shorter than
:data:`~tether.events.redact.MIN_SECRET` (it could not be redacted) or larger than :data:`MAX_SECRET` raises
:class:`SecretUnavailable` naming the secret and its source — never the value — and the call does not run.

Redaction does not wait for a call: :meth:`Broker.learn` registers every value that can be read when a driver
starts (a new run or a resume), so a value a secret-bearing call left in the workspace before a crash, or one
typed into the task, is redacted when a later call of any tool reads it back.

The egress proxy asks :meth:`Broker.secrets_for` which handles (and so which ``hosts``) a call carries.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

from tether.envelope.schema import SECRETS_DIR, Environment, Secret
from tether.errors import SandboxUnavailable, SecretUnavailable
from tether.events.redact import MIN_SECRET

from .base import Sandbox
from .bwrap import BwrapSandbox, Carried

MAX_SECRET = 60 * 1024
"""Bytes: a file secret travels to the sandbox through a pipe, which holds 64 KiB without a reader."""


class Broker:
    """Resolves and hands out one envelope's secrets. ``redact`` learns each value before any sandbox gets it."""

    def __init__(
        self,
        environment: Environment,
        redact: Callable[[Mapping[str, str]], None],
        *,
        workspace: Path,
        host: Mapping[str, str] | None = None,
    ) -> None:
        self.environment = environment
        self.redact = redact
        self.workspace = workspace.resolve()
        self.host = os.environ if host is None else host

    def secrets_for(self, tool: str) -> list[Secret]:
        """The handles a call of ``tool`` carries; empty for every tool no secret names."""
        return self.environment.secrets_for(tool)

    def sandbox_for(self, sandbox: Sandbox, tool: str) -> Sandbox:
        """``sandbox`` itself for a tool that carries no secret; else a bubblewrap sandbox carrying them.

        Any other backend is refused (the factory already refuses ``local`` for an envelope with secrets; this
        holds for a sandbox built some other way too)."""
        handles = self.secrets_for(tool)
        if not handles:
            return sandbox
        names = ", ".join(s.name for s in handles)
        if not isinstance(sandbox, BwrapSandbox):
            raise SandboxUnavailable(
                f"tool {tool!r} carries secrets ({names}) and the sandbox is {sandbox.name!r}, which does not hide "
                "them from the command; nothing was run",
                fix="run with the bwrap sandbox (tether doctor shows why it cannot start)",
            )
        for s in handles:  # a file every command could read anyway is no secret to broker
            if s.source_kind == "file" and sandbox.could_read(self._path(s)):
                raise SecretUnavailable(
                    f"secret {s.name!r} (source {s.source}): the file is mounted in the sandbox and readable by "
                    "its user, so any command could read it; move it out of /usr, /etc, /opt and the workspace, "
                    "or make it unreadable to others (chmod 600)"
                )
        read = {s.name: self._read(s) for s in handles}
        self.redact({name: value for name, (value, _) in read.items()})  # before any sandbox holds a value
        env = {s.delivery.env: read[s.name][0] for s in handles if s.delivery.env is not None}
        files = {s.delivery.file: read[s.name][1] for s in handles if s.delivery.file is not None}
        return sandbox.carrying(Carried(env=env, files=files))

    def learn(self) -> None:
        """Register every secret value that can be read now for redaction, handing none to any sandbox.

        A source that cannot be read is skipped here: it fails the call that needs it, closed, with its reason.
        """
        values: dict[str, str] = {}
        for s in self.environment.secrets or ():
            try:
                values[s.name] = self._read(s)[0]
            except SecretUnavailable:
                continue
        if values:
            self.redact(values)

    def resolve(self, handles: list[Secret]) -> dict[str, str]:
        """name -> value for ``handles``, each registered for redaction before it is returned."""
        values = {s.name: self._read(s)[0] for s in handles}
        self.redact(values)
        return values

    def _read(self, s: Secret) -> tuple[str, bytes]:
        """The value (what is redacted and put in a variable) and the bytes a file delivery holds: a file
        source's bytes as they are (a key file keeps its final newline), read once."""
        where = f"secret {s.name!r} (source {s.source})"
        if s.source_kind == "env":
            value = self.host.get(s.source_ref)
            if value is None:
                raise SecretUnavailable(f"{where}: the variable {s.source_ref} is not set in tether's environment")
            raw = value.encode()
        else:
            raw = self._read_file(s, where)
            try:
                value = raw.decode().rstrip("\r\n")
            except UnicodeDecodeError:
                raise SecretUnavailable(f"{where}: the file is not UTF-8 text (it could not be redacted)") from None
        if len(value) < MIN_SECRET:
            raise SecretUnavailable(
                f"{where}: the value is {len(value)} characters; under {MIN_SECRET} it cannot be told from "
                "ordinary text, so it could not be redacted"
            )
        if len(raw) > MAX_SECRET:
            raise SecretUnavailable(f"{where}: the value is larger than {MAX_SECRET} bytes")
        return value, raw

    @staticmethod
    def _path(s: Secret) -> Path:
        """A file source's path, resolved (a link is judged by its target); as written when it does not exist."""
        path = Path(os.path.expanduser(s.source_ref))
        try:
            return path.resolve(strict=True)
        except OSError:
            return path

    def _read_file(self, s: Secret, where: str) -> bytes:
        path = Path(os.path.expanduser(s.source_ref))
        try:
            real = path.resolve(strict=True)
            if real.is_relative_to(self.workspace):
                raise SecretUnavailable(f"{where}: the file is inside the workspace, where the agent can read it")
            with real.open("rb") as f:
                return f.read(MAX_SECRET + 1)
        except OSError as e:
            raise SecretUnavailable(f"{where}: cannot read {path}: {e.strerror or e}") from None


__all__ = ["MAX_SECRET", "SECRETS_DIR", "Broker"]
