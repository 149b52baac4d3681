"""Project memory: facts the user stated, kept with their source across runs, and forgettable."""

from .extract import Stated, facts_in, stated
from .store import Fact, Forgotten, MemoryStore, memory_path

__all__ = ["Fact", "Forgotten", "MemoryStore", "Stated", "facts_in", "memory_path", "stated"]
