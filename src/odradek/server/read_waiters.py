"""Connections that stopped reading at a bound, resumed together once it allows reading again.

The memory pool of `queued.max.request.bytes` and the request queue of `queued.max.requests` both stop
a connection's reading when full, and both wake every waiting connection at once when room is made:
each retries, and may wait again (neither bound is strict, as Kafka's are not).
"""

from __future__ import annotations

from collections.abc import Callable


class ReadWaiters:
    """The connections waiting on one bound, each with what resumes its reading."""

    def __init__(self) -> None:
        self._waiting: dict[object, Callable[[], None]] = {}

    def wait(self, owner: object, resume: Callable[[], None]) -> None:
        """Call `resume` once the bound allows reading again (the owner then retries)."""
        self._waiting[owner] = resume

    def stop_waiting(self, owner: object) -> None:
        self._waiting.pop(owner, None)

    def _resume_all(self) -> None:
        if self._waiting:
            waiting, self._waiting = self._waiting, {}
            for resume in waiting.values():
                resume()
