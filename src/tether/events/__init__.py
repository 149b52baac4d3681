"""Events: typed payloads and their kinds, the hash chain, the store protocol, its stores and :func:`open_store`.

Importing the package imports the kind modules every run reads; the registry imports the rest
(:data:`.payload.LATER`) the first time it is asked for a kind it does not hold, so it is complete for any
reader or writer (the kind modules import only :mod:`.payload`, never each other).
"""

from tether.exports import lazy

from . import (  # noqa: F401  (each registers its kinds)
    kinds_calls,
)
from .backends import StoreSpec, default_spec, open_store
from .payload import REGISTRY, Emitted, Payload, register
from .store import Event, EventStore, RunInfo

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing (tether/typeless.py)
if TYPE_CHECKING:
    from .protocol import Store

#: :class:`.protocol.Store` is imported on first use (PEP 562): it is only a type (a ``Protocol``) and the modules
#: that name it import it for the type checker, so a hook call, which imports this package, does without it.
__getattr__ = lazy(globals(), {"Store": ".protocol"})

__all__ = [
    "REGISTRY",
    "Emitted",
    "Event",
    "EventStore",
    "Payload",
    "RunInfo",
    "Store",
    "StoreSpec",
    "default_spec",
    "open_store",
    "register",
]
