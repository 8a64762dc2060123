"""Share sessions (KIP-932's ShareSessionCache): the partitions a member fetches, by session epoch.

A member opens its session with epoch 0 (a full list of partitions), then sends each next epoch with
only what changed (partitions added, or forgotten); epoch -1 closes it. A request with another epoch
gets INVALID_SHARE_SESSION_EPOCH, one for a session the broker does not hold SHARE_SESSION_NOT_FOUND.
The cache is bounded (`group.share.max.share.sessions`): when it is full, a session idle for longer
than a share member's session timeout (its member died without closing it) makes room, else the new
session gets SHARE_SESSION_LIMIT_REACHED. Without that, members that crash would fill it for good.
A session belongs to the connection it was opened on: when that connection closes, the session goes
and its member's records are released (Kafka 4.4's disconnect listener; a session opened again on
another connection since is no longer the first connection's).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from odradek.protocol.error_codes import ErrorCode, KafkaError

INITIAL_EPOCH: Final = 0
#: The connection id of a session opened on no connection (the broker numbers its connections from 1).
NO_CONNECTION: Final = 0
FINAL_EPOCH: Final = -1
#: A partition of a share session: (topic id, partition).
SessionPartition = tuple[uuid.UUID, int]


@dataclass(slots=True)
class ShareSession:
    group_id: str
    member_id: str
    #: The epoch the member's next request must carry.
    epoch: int = 1
    partitions: set[SessionPartition] = field(default_factory=set)
    #: When its member last used it.
    last_used_ms: int = 0
    #: The connection it was opened on.
    connection_id: int = NO_CONNECTION


class ShareSessionCache:
    def __init__(self, max_sessions: int, *, idle_ms: int, now_ms: Callable[[], int]) -> None:
        self.max_sessions = max_sessions
        self.idle_ms = idle_ms
        self.now_ms = now_ms
        self.sessions: dict[tuple[str, str], ShareSession] = {}
        #: The sessions opened on each connection, by (group id, member id).
        self._by_connection: dict[int, set[tuple[str, str]]] = {}

    def open(
        self,
        group_id: str,
        member_id: str,
        partitions: set[SessionPartition],
        connection_id: int = NO_CONNECTION,
    ) -> ShareSession:
        """A new session (epoch 0) on `connection_id`, replacing the member's earlier one."""
        key = (group_id, member_id)
        now = self.now_ms()
        if key not in self.sessions and len(self.sessions) >= self.max_sessions:
            idlest = min(self.sessions.values(), key=lambda s: s.last_used_ms)
            if now - idlest.last_used_ms <= self.idle_ms:
                raise KafkaError(ErrorCode.SHARE_SESSION_LIMIT_REACHED)
            self.close(idlest.group_id, idlest.member_id)
        self.close(group_id, member_id)
        session = ShareSession(group_id, member_id, 1, set(partitions), now, connection_id)
        self.sessions[key] = session
        if connection_id != NO_CONNECTION:
            self._by_connection.setdefault(connection_id, set()).add(key)
        return session

    def get(self, group_id: str, member_id: str, epoch: int) -> ShareSession:
        """The session a request at `epoch` (not 0) continues; its epoch moves on unless it is final."""
        session = self.sessions.get((group_id, member_id))
        if session is None:
            raise KafkaError(ErrorCode.SHARE_SESSION_NOT_FOUND)
        if epoch != FINAL_EPOCH:
            if epoch != session.epoch:
                raise KafkaError(ErrorCode.INVALID_SHARE_SESSION_EPOCH)
            session.epoch = 1 if session.epoch == 2**31 - 1 else session.epoch + 1
        session.last_used_ms = self.now_ms()
        return session

    def close(self, group_id: str, member_id: str) -> ShareSession | None:
        key = (group_id, member_id)
        session = self.sessions.pop(key, None)
        if session is not None:
            opened_there = self._by_connection.get(session.connection_id)
            if opened_there is not None:
                opened_there.discard(key)
                if not opened_there:
                    del self._by_connection[session.connection_id]
        return session

    def connection_closed(self, connection_id: int) -> list[ShareSession]:
        """Close the sessions opened on a connection that has closed; they are returned."""
        keys = self._by_connection.pop(connection_id, set())
        return [session for session in (self.sessions.pop(key, None) for key in sorted(keys)) if session]

    def connections(self) -> int:
        """How many connections have sessions open."""
        return len(self._by_connection)
