"""Incremental fetch sessions (KIP-227): the broker remembers what a consumer fetches.

A client opens a session with a full fetch (session id 0, epoch 0); afterwards it sends only the
partitions whose fetch position changed, and the broker answers only partitions with something new
(records, a moved high watermark / last stable offset / log start offset, or an error). Epoch -1 asks
for a sessionless full fetch (and closes the session named, if any).

The cache holds `max.incremental.fetch.session.cache.slots` sessions. When it is full a new session
takes the place of one unused for two minutes, else of the least valuable session older than two
minutes if the newcomer is worth more (a follower's over a consumer's, then more partitions); a
follower may also take a young consumer's place. Otherwise the newcomer is answered without a session
(session id 0), as Kafka does: recent sessions are never thrown out by a crowd of new ones.

Session ids are drawn at random (31 bits, never 0, unique among live sessions), as Kafka's
FetchSessionCache.newSessionId, but from `secrets`: an id is the only thing naming a session. Beyond
Kafka, a session belongs to the principal that opened it: to any other principal its id is
FETCH_SESSION_ID_NOT_FOUND, so another client can neither read its partitions (topic names, records)
nor close it, even knowing the id.
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from odradek.protocol.error_codes import ErrorCode, KafkaError

#: Kafka's fetch session eviction time (not configurable there either): younger sessions are kept.
EVICTION_SECONDS: Final = 120.0

#: A partition in a session: the name (or "" before v13) and the topic id identify it.
PartitionKey = tuple[str, object, int]


@dataclass(slots=True)
class CachedPartition:
    topic: str
    topic_id: object
    partition: int
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1
    #: The fetcher's own log start (a follower's, v5+; -1 unknown).
    log_start_offset: int = -1
    # What the client was last told; -1 means never, so the first answer always includes the partition.
    sent_high_watermark: int = -1
    sent_last_stable_offset: int = -1
    sent_log_start_offset: int = -1
    #: A follower's (fetch offset, last fetched epoch) last read with nothing to send: fetched again at
    #: it, with the leader's log end, high watermark and log start as last sent, it has nothing new.
    idle_position: tuple[int, int] | None = None


@dataclass(slots=True)
class FetchSession:
    session_id: int
    epoch: int  # the epoch the next request must carry
    partitions: OrderedDict[PartitionKey, CachedPartition] = field(default_factory=OrderedDict)
    privileged: bool = False  # a follower's (replica) session
    #: Who opened it (the connection's principal): no one else may use or close it.
    principal: str = ""
    created: float = 0.0  # on the cache's clock, seconds
    #: Whether a partition joined under a topic id this broker did not know (its name is "").
    unknown_names: bool = False

    def add(self, key: PartitionKey, entry: CachedPartition) -> None:
        self.partitions[key] = entry
        self.unknown_names = self.unknown_names or not key[0]

    def value(self) -> tuple[bool, int, int]:
        """What eviction weighs, least valuable first (Kafka's EvictableKey)."""
        return (self.privileged, len(self.partitions), self.session_id)


class FetchSessionCache:
    def __init__(self, max_sessions: int = 1000, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_sessions = max_sessions
        self.clock = clock
        #: Least recently used first; `last_used` holds when each was last used.
        self.sessions: OrderedDict[int, FetchSession] = OrderedDict()
        self.last_used: dict[int, float] = {}

    def create(self, size: int, privileged: bool = False, principal: str = "") -> FetchSession | None:
        """A new session for `size` partitions, or None when sessions are off or the cache is full of
        sessions worth keeping (see the module docstring)."""
        if self.max_sessions <= 0:
            return None
        now = self.clock()
        while len(self.sessions) >= self.max_sessions:
            if not self._evict_one(size, privileged, now):
                return None
        session_id = _random_session_id()
        while session_id in self.sessions:
            session_id = _random_session_id()
        session = FetchSession(
            session_id=session_id, epoch=1, privileged=privileged, principal=principal, created=now
        )
        self.sessions[session_id] = session
        self.last_used[session_id] = now
        return session

    def _evict_one(self, size: int, privileged: bool, now: float) -> bool:
        oldest_id = next(iter(self.sessions))
        if now - self.last_used[oldest_id] > EVICTION_SECONDS:
            self.close(oldest_id)
            return True
        evictable = [
            s
            for s in self.sessions.values()
            if now - s.created > EVICTION_SECONDS or (privileged and not s.privileged)
        ]
        if not evictable:
            return False
        victim = min(evictable, key=FetchSession.value)
        if (privileged, size, 0) < victim.value():  # the newcomer is worth less than any it could evict
            return False
        self.close(victim.session_id)
        return True

    def lookup(self, session_id: int, epoch: int, principal: str = "") -> FetchSession:
        """`principal`'s session for an incremental fetch; raises KafkaError with the code Kafka
        answers (another principal's session is not found, whatever its epoch)."""
        session = self.sessions.get(session_id)
        if session is None or session.principal != principal:
            raise KafkaError(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            raise KafkaError(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        self.sessions.move_to_end(session_id)
        self.last_used[session_id] = self.clock()
        return session

    def close(self, session_id: int, principal: str | None = None) -> None:
        """Remove the session; given a principal, only if the session is that principal's."""
        session = self.sessions.get(session_id)
        if session is None or (principal is not None and session.principal != principal):
            return
        del self.sessions[session_id]
        self.last_used.pop(session_id, None)


def _random_session_id() -> int:
    """A positive 31-bit id (1 to 2^31-1): 0 means "no session" on the wire."""
    return secrets.randbelow(0x7FFFFFFF) + 1
