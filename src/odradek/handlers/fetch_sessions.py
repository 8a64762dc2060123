"""Incremental fetch sessions (KIP-227): the broker remembers what a consumer fetches.

A client opens a session with a full fetch (session id 0, epoch 0); afterwards it sends only the
partitions whose fetch position changed, and the broker answers only partitions with something new
(records, a moved high watermark / last stable offset / log start offset, or an error). Epoch -1 asks
for a sessionless full fetch (and closes the session named, if any).
"""

from __future__ import annotations

import itertools
import random
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Final

from odradek.protocol.error_codes import ErrorCode, KafkaError

INITIAL_EPOCH: Final = 0
FINAL_EPOCH: Final = -1
_MAX_EPOCH: Final = 0x7FFFFFFF

#: A partition in a session: the name (or "" before v13) and the topic id identify it.
PartitionKey = tuple[str, object, int]


def next_epoch(epoch: int) -> int:
    """The epoch after `epoch` (Kafka's FetchMetadata.nextEpoch): past Int32 max clients go on at 1."""
    return 1 if epoch >= _MAX_EPOCH else epoch + 1


@dataclass(slots=True)
class CachedPartition:
    topic: str
    topic_id: object
    partition: int
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1
    # What the client was last told; -1 means never, so the first answer always includes the partition.
    sent_high_watermark: int = -1
    sent_last_stable_offset: int = -1
    sent_log_start_offset: int = -1


@dataclass(slots=True)
class FetchSession:
    session_id: int
    epoch: int  # the epoch the next request must carry
    partitions: OrderedDict[PartitionKey, CachedPartition] = field(default_factory=OrderedDict)


class FetchSessionCache:
    def __init__(self, max_sessions: int = 1000) -> None:
        self.max_sessions = max_sessions
        self.sessions: OrderedDict[int, FetchSession] = OrderedDict()
        self._ids = itertools.count(random.randint(1, 1 << 20))

    def create(self) -> FetchSession | None:
        """A new session, evicting the least recently used one when full (None if sessions are off)."""
        if self.max_sessions <= 0:
            return None
        while len(self.sessions) >= self.max_sessions:
            self.sessions.popitem(last=False)
        session_id = next(self._ids) & 0x7FFFFFFF or next(self._ids)
        session = FetchSession(session_id=session_id, epoch=1)
        self.sessions[session_id] = session
        return session

    def lookup(self, session_id: int, epoch: int) -> FetchSession:
        """The session for an incremental fetch; raises KafkaError with the code Kafka answers."""
        session = self.sessions.get(session_id)
        if session is None:
            raise KafkaError(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            raise KafkaError(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        self.sessions.move_to_end(session_id)
        return session

    def close(self, session_id: int) -> None:
        self.sessions.pop(session_id, None)
