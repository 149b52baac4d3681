"""Events: typed payloads and their kinds, the hash chain, the store protocol, its stores and :func:`open_store`.

Importing the package imports the kind modules every run reads; the registry imports the rest
(:data:`.payload.LATER`) the first time it is asked for a kind it does not hold, so it is complete for any
reader or writer (the kind modules import only :mod:`.payload`, never each other).
"""

from . import (  # noqa: F401  (each registers its kinds)
    kinds_calls,
)
from .backends import StoreSpec, default_spec, open_store
from .payload import REGISTRY, Emitted, Payload, register
from .protocol import Store
from .store import Event, EventStore, RunInfo

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
