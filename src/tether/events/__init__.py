"""Events: kinds, the hash chain and the SQLite store."""

from .kinds import REGISTRY, Payload, register
from .store import Event, EventStore, RunInfo, default_db_path

__all__ = ["REGISTRY", "Event", "EventStore", "Payload", "RunInfo", "default_db_path", "register"]
