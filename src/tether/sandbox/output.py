"""Bounded output capture: a fixed cap, head and tail kept, the total counted.

Pipes are read incrementally in chunks; memory per stream never exceeds ``head + tail`` plus one chunk,
however much the command writes.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_HEAD = 32 * 1024
DEFAULT_TAIL = 32 * 1024


@dataclass(frozen=True)
class OutputCap:
    """Bytes kept per stream: the first ``head`` and the last ``tail``."""

    head: int = DEFAULT_HEAD
    tail: int = DEFAULT_TAIL

    def __post_init__(self) -> None:
        if self.head < 0 or self.tail < 0:
            raise ValueError("output caps must be >= 0")


class BoundedBuffer:
    """Keeps the head and a sliding tail of a byte stream and counts every byte fed to it."""

    def __init__(self, cap: OutputCap) -> None:
        self.cap = cap
        self.total = 0
        self._head = bytearray()
        self._tail = bytearray()

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self.cap.head - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if not data or self.cap.tail == 0:
            return
        if len(data) >= self.cap.tail:
            self._tail = bytearray(data[-self.cap.tail :])
        else:
            self._tail += data
            excess = len(self._tail) - self.cap.tail
            if excess > 0:
                del self._tail[:excess]

    @property
    def truncated(self) -> bool:
        return self.total > len(self._head) + len(self._tail)

    @property
    def omitted(self) -> int:
        return self.total - len(self._head) - len(self._tail)

    def text(self) -> str:
        """The kept bytes as text (UTF-8, undecodable bytes replaced), with a marker where bytes were dropped."""
        head = self._head.decode("utf-8", errors="replace")
        if not self.truncated:
            return head + self._tail.decode("utf-8", errors="replace")
        marker = f"\n[... {self.omitted} bytes omitted by tether (kept first {len(self._head)}"
        marker += f" and last {len(self._tail)} of {self.total}) ...]\n"
        return head + marker + self._tail.decode("utf-8", errors="replace")
