"""The share partitions this broker leads, by share group (KIP-932's SharePartitionManager).

A share partition is made when a member of its group first fetches it from this leader: its state is
read from the share coordinator (`SharePersister.read`, which fences older leaders by the leader
epoch), and a start offset never resolved (-1) is resolved with `share.auto.offset.reset` ("latest",
Kafka's default: the high watermark; "earliest": the log start offset) and written back. A leader
epoch change makes it again from the coordinator's state (what the old leader had acquired but not
written is available again). The share sessions live here too.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from odradek.config.broker import BrokerConfig
from odradek.config.group_catalog import (
    GroupConfigLookup,
    ShareGroupSettings,
    no_group_configs,
    share_group_settings,
)
from odradek.partition.share.in_flight import ShareLimits, delivery_complete_count
from odradek.partition.share.log_reader import log_bounds
from odradek.partition.share.persister import SharePartitionKey, SharePersister, ShareState, ShareStateError
from odradek.partition.share.sessions import SessionPartition, ShareSessionCache
from odradek.partition.share.share_partition import SharePartition
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.storage.log import Log

log = logging.getLogger("odradek.partition.share")

#: The most records a share partition may have in flight under any setting (the upper bound of
#: group.share.partition.max.record.locks and of group.share.max.partition.max.record.locks).
MAX_RECORDS_IN_FLIGHT = 10_000
#: Where a share group starts reading a partition it never read (share.auto.offset.reset's default).
LATEST = "latest"
EARLIEST = "earliest"


class SharePartitionManager:
    def __init__(
        self,
        persister: SharePersister,
        limits: Callable[[], ShareLimits],
        max_sessions: int,
        auto_offset_reset: str = LATEST,
        read_committed: bool = False,
        *,
        session_idle_ms: int = 45_000,
        group_settings: Callable[[str], ShareGroupSettings] | None = None,
    ) -> None:
        self.persister = persister
        self.limits = limits
        #: share.auto.offset.reset and share.isolation.level for every group, unless `group_settings`
        #: gives a group's own (its GROUP configs, the broker's group.share.* else).
        self.auto_offset_reset = auto_offset_reset
        self.read_committed = read_committed
        self.group_settings = group_settings
        self.sessions = ShareSessionCache(max_sessions, idle_ms=session_idle_ms, now_ms=_monotonic_ms)
        self.partitions: dict[SharePartitionKey, SharePartition] = {}
        self._loading: dict[SharePartitionKey, _Loading] = {}
        #: Releases of the records of members whose connection closed, under way.
        self._releases: set[asyncio.Future[None]] = set()

    @classmethod
    def for_broker(
        cls,
        config: BrokerConfig,
        persister: SharePersister,
        group_configs: GroupConfigLookup = no_group_configs,
    ) -> SharePartitionManager:
        """The broker's share partitions, with each group's GROUP configs over the broker's
        `group.share.*` settings (read at each use, so that a change applies to the next share
        partition made)."""

        def limits() -> ShareLimits:
            return ShareLimits(
                record_lock_duration_ms=config.group_share_record_lock_duration_ms,
                delivery_count_limit=config.group_share_delivery_count_limit,
                max_record_locks=config.group_share_partition_max_record_locks,
            )

        return cls(
            persister,
            limits,
            config.group_share_max_share_sessions,
            session_idle_ms=config.group_share_session_timeout_ms,
            group_settings=lambda group_id: share_group_settings(group_configs(group_id), config),
        )

    async def partition(
        self, key: SharePartitionKey, partition_log: Log, leader_epoch: int
    ) -> SharePartition:
        """The share partition of `key` at `leader_epoch`, loaded from the share coordinator if needed;
        raises KafkaError with the coordinator's refusal."""
        current = self.partitions.get(key)
        if current is not None and current.leader_epoch == leader_epoch and not current.fenced:
            return current
        loading = self._loading.get(key)
        if loading is not None and loading.leader_epoch != leader_epoch:
            # a load at another epoch is under way (its read waits for a coordinator being moved, say):
            # its copy is not ours to serve; once it is done, load at ours (the later read fences it)
            await asyncio.wait([loading.task])  # its outcome is its own requests'; not cancelled with us
            if self._loading.get(key) is loading:
                del self._loading[key]
            return await self.partition(key, partition_log, leader_epoch)
        if loading is None:
            task = asyncio.ensure_future(self._load(key, partition_log, leader_epoch))
            loading = self._loading[key] = _Loading(leader_epoch, task)
            task.add_done_callback(lambda _: self._loading_done(key, task))
        try:
            return await asyncio.shield(loading.task)
        except asyncio.CancelledError:
            request = asyncio.current_task()
            if loading.task.cancelled() and (request is None or not request.cancelling()):
                # the load was stopped, not this request (its CancelledError would end the task that
                # serves the connection): the partition is no longer led here
                raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, "No longer the leader here.") from None
            raise

    def _loading_done(self, key: SharePartitionKey, task: asyncio.Task[SharePartition]) -> None:
        loading = self._loading.get(key)
        if loading is not None and loading.task is task:
            del self._loading[key]

    def existing(self, key: SharePartitionKey) -> SharePartition | None:
        return self.partitions.get(key)

    async def _load(self, key: SharePartitionKey, partition_log: Log, leader_epoch: int) -> SharePartition:
        limits, auto_offset_reset, read_committed = self.limits(), self.auto_offset_reset, self.read_committed
        if self.group_settings is not None:
            settings = self.group_settings(key.group_id)
            limits = ShareLimits(
                record_lock_duration_ms=settings.record_lock_duration_ms,
                delivery_count_limit=settings.delivery_count_limit,
                max_record_locks=settings.partition_max_record_locks,
            )
            auto_offset_reset, read_committed = settings.auto_offset_reset, settings.read_committed
        try:
            state = await self.persister.read(key, leader_epoch)
            log_start, high_watermark = log_bounds(partition_log)
            start = state.start_offset
            if start < 0:
                start = log_start if auto_offset_reset == EARLIEST else high_watermark
            start = max(start, log_start)  # records deleted from the log are gone for the group too
            if start != state.start_offset:
                complete = delivery_complete_count(state.batches, start)
                await self.persister.write(key, state.state_epoch, leader_epoch, start, (), complete)
                state = ShareState(state.state_epoch, leader_epoch, start, state.batches, complete)
        except ShareStateError as refused:
            raise KafkaError(refused.error_code, refused.message) from refused
        old = self.partitions.pop(key, None)
        if old is not None:
            old.close()
        made = SharePartition(
            key, self.persister, limits, leader_epoch, _in_flight_window(state), read_committed=read_committed
        )
        self.partitions[key] = made
        log.info(
            "share partition %s loaded at offset %d (leader epoch %d)",
            key.coordinator_key,
            start,
            leader_epoch,
        )
        return made

    def stopped_leading(self, partitions: Iterable[SessionPartition]) -> None:
        """This broker no longer leads these (topic id, partition)s: every group's share partition of
        them is dropped and fenced, its lock timers stopped (Kafka's onBecomingFollower / onDeleted).
        What it had acquired but not written is the next leader's to give again."""
        gone = set(partitions)
        for key in [k for k in self.partitions if (k.topic_id, k.partition) in gone]:
            dropped = self.partitions.pop(key)
            dropped.fenced = True
            dropped.close()
        for key, loading in list(self._loading.items()):
            if (key.topic_id, key.partition) in gone:
                loading.task.cancel()

    def topic_deleted(self, topic_id: uuid.UUID) -> None:
        """A topic was deleted: every group's share partitions of it go, fenced, their lock timers
        stopped, and no share session keeps its partitions (Kafka's onDeleted listener). A topic made
        again with the same name has another id, so it starts afresh."""
        self.stopped_leading([key for key in self._keys() if key[0] == topic_id])
        for session in self.sessions.sessions.values():
            session.partitions = {key for key in session.partitions if key[0] != topic_id}

    def _keys(self) -> set[SessionPartition]:
        return {(key.topic_id, key.partition) for key in [*self.partitions, *self._loading]}

    async def release_member(self, group_id: str, member_id: str) -> None:
        """What `member_id` holds in every share partition of its group here is available again."""
        for key, partition in list(self.partitions.items()):
            if key.group_id == group_id:
                try:
                    await partition.release_member(member_id)
                except KafkaError as error:
                    log.warning("share partition %s: %s's records not released: %s", key, member_id, error)

    def connection_closed(self, connection_id: int) -> asyncio.Future[None]:
        """A client connection closed: the share sessions opened on it close and what their members
        hold in their partitions is available again at once (Kafka 4.4's disconnect listener) rather
        than after the acquisition lock's timeout; the delivery counted at acquisition stays counted,
        as Kafka 4.4's release does (no change of the count). Returns the release under way (the
        broker does not wait for it)."""
        sessions = self.sessions.connection_closed(connection_id)
        # What each member holds in its session's partitions is taken now, as Kafka's listener releases
        # it at the disconnect: the releases are written one partition after another, and a member back
        # on another connection meanwhile keeps what it acquires (or renews) there.
        held = [
            (key, partition, session.member_id, acquisitions)
            for session in sessions
            for topic_id, index in session.partitions
            if (partition := self.partitions.get(key := SharePartitionKey(session.group_id, topic_id, index)))
            and (acquisitions := partition.acquisitions_of(session.member_id))
        ]
        release = asyncio.ensure_future(self._release_held(held))
        self._releases.add(release)
        release.add_done_callback(self._releases.discard)
        return release

    async def _release_held(
        self, held: list[tuple[SharePartitionKey, SharePartition, str, frozenset[int]]]
    ) -> None:
        for key, partition, member_id, acquisitions in held:
            if self.partitions.get(key) is not partition:
                continue  # no longer led here, or loaded again (its state read afresh)
            try:
                await partition.release_member(member_id, acquisitions)
            except KafkaError as error:
                log.warning("share partition %s: %s's records not released: %s", key, member_id, error)

    def close(self) -> None:
        for release in self._releases:
            release.cancel()
        for partition in self.partitions.values():
            partition.close()
        self.partitions.clear()
        for loading in self._loading.values():
            loading.task.cancel()


@dataclass(frozen=True, slots=True)
class _Loading:
    """A share partition being loaded, at the leader epoch it will serve."""

    leader_epoch: int
    task: asyncio.Task[SharePartition]


def _in_flight_window(state: ShareState) -> ShareState:
    """The state without what lies past the most records a share partition may have in flight: a share
    partition keeps its records offset by offset, and no leader writes a batch past that window (what it
    has in flight never spans more than its record-lock limit), but WriteShareGroupState takes any range,
    as Kafka's coordinator does (whose SharePartition keeps batches): 10**12 offsets must not be walked."""
    end = max(state.start_offset, 0) + MAX_RECORDS_IN_FLIGHT
    if all(batch.last_offset < end for batch in state.batches):
        return state
    batches = tuple(
        replace(batch, last_offset=min(batch.last_offset, end - 1))
        for batch in state.batches
        if batch.first_offset < end
    )
    log.warning("share partition state past offset %d ignored: no leader has that much in flight", end)
    return replace(state, batches=batches)


def _monotonic_ms() -> int:
    return int(time.monotonic() * 1000)
