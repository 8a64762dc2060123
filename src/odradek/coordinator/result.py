"""A coordinator step's outcome, as Kafka's CoordinatorResult: the records to append and the response.

Offsets and consumer (KIP-848) groups change only by replaying their records once they are appended
(`replay=True`), so their state is always what the log says. Classic groups change in memory as the
protocol runs (joins and syncs wait on each other) and write a GroupMetadata record at the points
Kafka does; their records are replayed only when the partition is loaded (`replay=False`), and
`on_appended` hears whether the write worked (None) or failed (the error), to answer or roll back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from odradek.coordinator.records import CoordinatorRecord
from odradek.protocol.error_codes import ErrorCode

T = TypeVar("T")

AppendCallback = Callable[[ErrorCode | None], None]


@dataclass(slots=True)
class CoordinatorResult(Generic[T]):
    records: list[CoordinatorRecord] = field(default_factory=list)
    response: T | None = None
    replay: bool = True
    on_appended: AppendCallback | None = None

    def then(self, other: CoordinatorResult[Any] | None) -> CoordinatorResult[T]:
        """This result followed by `other`'s records (both must replay, or neither)."""
        if other is None or (not other.records and other.on_appended is None):
            return self
        if self.records and other.records and self.replay != other.replay:
            raise ValueError("cannot merge replayed and non-replayed records into one write")
        callbacks = [c for c in (self.on_appended, other.on_appended) if c is not None]

        def both(error: ErrorCode | None) -> None:
            for callback in callbacks:
                callback(error)

        return CoordinatorResult(
            [*self.records, *other.records],
            self.response,
            self.replay if self.records else other.replay,
            both if callbacks else None,
        )


def records_only(records: list[CoordinatorRecord], *, replay: bool = False) -> CoordinatorResult[None]:
    return CoordinatorResult(records, None, replay)
