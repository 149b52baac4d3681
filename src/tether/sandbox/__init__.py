"""tether.sandbox: where an allowed command runs.

``local`` is a guarded subprocess; ``bwrap`` is the bubblewrap sandbox (see :mod:`tether.sandbox.bwrap`
for what it enforces and why the command runs as an unprivileged uid). Both return a :class:`Receipt`
for anything the command does; a sandbox that cannot start raises
:class:`tether.errors.SandboxUnavailable`. ``tether doctor`` (:mod:`tether.sandbox.doctor`) proves the
enforcement on this machine.
"""

from .base import Sandbox
from .bwrap import BwrapSandbox
from .factory import bwrap_available, make_sandbox
from .limits import Limits
from .local import LocalSandbox
from .output import OutputCap
from .receipt import TIMEOUT_EXIT_CODE, Receipt

__all__ = [
    "TIMEOUT_EXIT_CODE",
    "BwrapSandbox",
    "Limits",
    "LocalSandbox",
    "OutputCap",
    "Receipt",
    "Sandbox",
    "bwrap_available",
    "make_sandbox",
]
