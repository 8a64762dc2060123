"""The memory pool that bounds request bodies held by the broker (Kafka's `queued.max.request.bytes`).

As Kafka's non-strict SimpleMemoryPool: a request's declared size is reserved when its size prefix has
been read and released once the request has been handled (or its connection closed). A reservation
succeeds while anything at all is free, so one request may take the pool below zero, by at most
`socket.request.max.bytes`; while nothing is free, connections stop reading until memory is released.
"""

from __future__ import annotations

from odradek.config.broker import BrokerConfig
from odradek.server.read_waiters import ReadWaiters


class MemoryPool(ReadWaiters):
    """Bytes available for request bodies on one event loop, and the connections waiting for some."""

    def __init__(self, capacity: int) -> None:
        super().__init__()
        self.capacity = capacity
        self.available = capacity

    @property
    def exhausted(self) -> bool:
        return self.available <= 0

    def try_reserve(self, size: int) -> bool:
        """Reserve `size` bytes if anything is free (the reservation may go over; see the module doc)."""
        if size > 0 and self.available <= 0:
            return False
        self.available -= size
        return True

    def take(self, size: int) -> None:
        """Account for `size` bytes already read (a small frame complete in one read): never refused."""
        self.available -= size

    def release(self, size: int) -> None:
        self.available += size
        if self.available > 0:
            self._resume_all()


def memory_pool_for(config: BrokerConfig) -> MemoryPool | None:
    """The pool `queued.max.request.bytes` asks for; none when it is 0 or less (Kafka: no limit).
    BrokerConfig has already checked that it is at least `socket.request.max.bytes`."""
    capacity = config.queued_max_request_bytes
    return MemoryPool(capacity) if capacity > 0 else None
