"""A share partition's records in flight (KIP-932): their state, what an acquisition hands a member, what
an acknowledgement names, the limits a share group sets, and the state batches written to the share
coordinator. ``share_partition.py`` changes them; this module only describes them."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

from odradek.partition.share.persister import DeliveryState, StateBatch


class AcknowledgeType(enum.IntEnum):
    """ShareFetch/ShareAcknowledge's acknowledge types (0 is a gap: offsets with no record)."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    #: KIP-1222 (ShareFetch/ShareAcknowledge v2): keep the record, under a fresh lock.
    RENEW = 4


@dataclass(slots=True)
class InFlight:
    state: DeliveryState
    delivery_count: int
    member_id: str | None = None
    #: Which acquisition holds it (its lock's id): a lock that times out releases only its own records.
    acquisition: int = 0


@dataclass(frozen=True, slots=True)
class Acquired:
    """Records first_offset..last_offset acquired for a member, delivered `delivery_count` times."""

    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class AcknowledgementBatch:
    first_offset: int
    last_offset: int
    #: One type for the whole range, or one per offset.
    types: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ShareLimits:
    record_lock_duration_ms: int
    delivery_count_limit: int
    max_record_locks: int


#: The states of records nobody will be given again.
DELIVERY_COMPLETE = (DeliveryState.ACKNOWLEDGED, DeliveryState.ARCHIVED)


def delivery_complete_count(batches: Iterable[StateBatch], start_offset: int) -> int:
    """How many records of a share partition's state batches, from `start_offset` on, are acknowledged
    or archived (what a leader that loads the state writes with a start offset it moved)."""
    return sum(
        b.last_offset - max(b.first_offset, start_offset) + 1
        for b in batches
        if b.delivery_state in DELIVERY_COMPLETE and b.last_offset >= start_offset
    )


def extend_acquired(acquired: list[Acquired], offset: int, delivery_count: int) -> None:
    """Add ``offset`` to the last range acquired when it continues it, else start a new one."""
    last = acquired[-1] if acquired else None
    if last is not None and last.last_offset + 1 == offset and last.delivery_count == delivery_count:
        acquired[-1] = Acquired(last.first_offset, offset, delivery_count)
    else:
        acquired.append(Acquired(offset, offset, delivery_count))


def state_batches(states: dict[int, tuple[DeliveryState, int]]) -> tuple[StateBatch, ...]:
    """Runs of consecutive offsets in one state and delivery count (acquired ones as available)."""
    batches: list[StateBatch] = []
    for offset in sorted(states):
        state, count = states[offset]
        if state is DeliveryState.ACQUIRED:
            state = DeliveryState.AVAILABLE
        last = batches[-1] if batches else None
        if (
            last is not None
            and last.last_offset + 1 == offset
            and (last.delivery_state, last.delivery_count) == (state, count)
        ):
            batches[-1] = StateBatch(last.first_offset, offset, state, count)
        else:
            batches.append(StateBatch(offset, offset, state, count))
    return tuple(batches)
