"""One replica fetcher: a task that fetches a set of partitions from one leader (Kafka's
AbstractFetcherThread and ReplicaFetcherThread).

Each round sends one Fetch (replica_id and broker epoch in replica_state, each partition's current
leader epoch and last fetched epoch) and applies the answer partition by partition:
- records, high watermark and log start go to partition/ (`FollowerAppends.append_fetched`, Kafka's
  Partition.appendRecordsToFollowerOrFutureReplica), which appends them as they are, moves the
  follower's high watermark and log start and raises the append event; the lag and the quota stay here;
- DivergingEpoch truncates the log where it stops agreeing with the leader (KIP-101/279), then the
  fetch goes on from the new log end;
- OFFSET_OUT_OF_RANGE: ask the leader's log end (ListOffsets as a replica); below ours, truncate to
  it (an unclean leader); else, when the leader's log start is past our end, start over empty there;
- other partition errors (a leadership on the move) retry that partition after
  `replica.fetch.backoff.ms`; a lost connection backs off the whole fetcher as long.
A partition removed (or moved to a new epoch) while its fetch is in flight ignores that fetch's answer,
and so does one removed while that answer's handling waits (a flush, a ListOffsets, the checkpoint
after a truncation): Kafka holds partitionMapLock across it, here the handling asks again after each
wait (`_follows`, which partition/ asks too). After a truncation (done by partition/) nothing is appended
until the lowered recovery point is on disk (truncation_checkpoints.py): the next fetch goes out at once,
its answer waits for the write if need be; a partition whose write failed (offline until restart) leaves
the fetcher, as Kafka's markPartitionFailed.
Fetches run in a fetch session with the leader (fetch_session.py, KIP-227): after a full one, each
names only the partitions whose position moved, and the leader answers only those with news. The Fetch
and the ListOffsets it sends are built in fetch_requests.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from odradek.cluster.replication.fetch_requests import (
    EARLIEST_TIMESTAMP,
    FETCH_VERSION_BY_NAME,
    LATEST_TIMESTAMP,
    fetch_request,
    leader_offset,
)
from odradek.cluster.replication.fetch_session import (
    SESSION_ERRORS,
    FollowerFetchSession,
)
from odradek.cluster.replication.fetch_state import FetcherContext, FetcherSettings, FetchState, position
from odradek.cluster.replication.leader_connection import LeaderConnection
from odradek.partition.hosted_partition import PartitionKey
from odradek.protocol.codec_error import CodecError
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.fetch import (
    FetchRequest,
    FetchResponse,
    PartitionData,
)
from odradek.storage.errors import LogStorageError, StorageError

log = logging.getLogger("odradek.cluster.replication.fetcher")


class ReplicaFetcher:
    def __init__(
        self,
        name: str,
        leader_id: int,
        settings: FetcherSettings,
        context: FetcherContext,
        on_partition_failed: Callable[[PartitionKey], None] | None = None,
    ) -> None:
        self.name = name
        self.leader_id = leader_id
        self.settings = settings
        self.context = context
        #: Told of each partition this fetcher stopped fetching because its storage failed (the
        #: fetcher manager, as Kafka's failedPartitions).
        self.on_partition_failed = on_partition_failed
        self.partitions: dict[PartitionKey, FetchState] = {}
        self._changed = asyncio.Event()
        #: The partitions of the fetch in flight, and what abandons it (see `add`).
        self._in_flight: dict[PartitionKey, FetchState] = {}
        self._abandon: asyncio.Future[None] | None = None
        self._connection: LeaderConnection | None = None
        #: This fetcher's fetch session with the leader (KIP-227).
        self.session: FollowerFetchSession[FetchState] = FollowerFetchSession()
        self.task: asyncio.Task[None] = asyncio.get_running_loop().create_task(self._run(), name=name)

    def add(self, state: FetchState) -> None:
        self.partitions[state.key] = state
        self._changed.set()
        abandon = self._abandon
        if abandon is not None and not abandon.done() and self._in_flight.get(state.key) is not state:
            # The fetch in flight does not ask for this partition (or asks at its old epoch) and may be
            # parked at the leader for replica.fetch.wait.max.ms while the partition's high watermark,
            # and the acks=all produces behind it, wait for this follower: fetch again at once.
            abandon.set_result(None)

    def remove(self, key: PartitionKey) -> FetchState | None:
        return self.partitions.pop(key, None)

    def _follows(self, state: FetchState) -> bool:
        """Whether this fetcher still follows the partition as `state` (same leader epoch: a
        LeaderAndIsr replaces the FetchState, or takes it away when this broker leads). Kafka holds
        partitionMapLock while it applies an answer; here the answer's handling awaits (a flush, the
        ListOffsets of an out-of-range offset), so it asks again after each wait before it truncates
        or moves the high watermark or the log start."""
        return self.partitions.get(state.key) is state

    def close_connection(self) -> None:
        # Also after a failed or abandoned fetch: the leader may or may not have taken its epoch.
        self.session.restart()
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    # ----- the loop -----------------------------------------------------------------------------------

    async def _run(self) -> None:
        try:
            while True:
                ready = self._ready()
                if not ready:
                    await self._idle()
                    continue
                ready = self._unthrottled(ready)
                if not ready:
                    await self._throttled_backoff()
                    continue
                try:
                    await self._fetch_once(ready)
                except (OSError, asyncio.IncompleteReadError, TimeoutError, CodecError) as error:
                    log.info("%s: fetch from broker %d failed: %s", self.name, self.leader_id, error)
                    self.close_connection()
                    await asyncio.sleep(self.settings.fetch_backoff_ms / 1000)
        finally:
            self.close_connection()

    def _ready(self) -> list[FetchState]:
        now = time.monotonic()
        return [s for s in self.partitions.values() if s.delayed_until <= now]

    def _unthrottled(self, ready: list[FetchState]) -> list[FetchState]:
        """The partitions the follower's replication quota lets this fetch ask for (Kafka's
        shouldFollowerThrottle): over follower.replication.throttled.rate, the partitions the topic's
        follower.replication.throttled.replicas names for this broker are left out, unless in sync."""
        quota = self.context.quota
        kept: list[FetchState] = []
        held = 0
        for state in ready:
            if state.lag != 0 and quota.is_throttled(
                state.log.config.follower_replication_throttled_replicas, state.partition
            ):
                held += 1
            else:
                kept.append(state)
        if not held or not quota.is_quota_exceeded():
            return ready
        quota.count_throttled(held)
        return kept

    async def _throttled_backoff(self) -> None:
        """Every partition ready is throttled: as Kafka's fetcher with no fetch to send, wait
        replica.fetch.backoff.ms (or until a partition is added) and ask the quota again."""
        self._changed.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), self.settings.fetch_backoff_ms / 1000)

    async def _idle(self) -> None:
        """Wait for a partition to be added or for the earliest backoff to end."""
        self._changed.clear()
        delays = [s.delayed_until for s in self.partitions.values()]
        timeout = max(min(delays) - time.monotonic(), 0.0) if delays else None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), timeout)

    async def _connect(self) -> LeaderConnection:
        if self._connection is not None and self._connection.connected:
            return self._connection
        endpoint = self.context.endpoint(self.leader_id)
        if endpoint is None:
            raise ConnectionError(f"broker {self.leader_id} is not live")
        connection = LeaderConnection(
            endpoint[0],
            endpoint[1],
            f"broker-{self.context.node_id}-{self.name}",
            self.settings.socket_timeout_ms,
            self.settings.socket_receive_buffer_bytes,
            self.context.local_host,
            self.context.security,
        )
        await connection.connect()
        self._connection = connection
        return connection

    async def _fetch_once(self, ready: list[FetchState]) -> None:
        connection = await self._connect()
        by_id = self.settings.fetch_version > FETCH_VERSION_BY_NAME and all(
            s.topic_id is not None for s in ready
        )
        version = self.settings.fetch_version if by_id else FETCH_VERSION_BY_NAME
        sent = {s.key: (s, s.leader_epoch, s.log.log_end_offset) for s in ready}
        plan = self.session.plan([(s, position(s)) for s in ready], version)
        request = fetch_request(
            plan, version, self.settings, self.context.node_id, self.context.broker_epoch()
        )
        response = await self._send_unless_abandoned(connection, request, version, sent)
        if response is None:
            return
        self.session.answered(plan, response.error_code, response.session_id)
        if response.error_code in SESSION_ERRORS:
            log.info(
                "%s: broker %d answered %s: fetching in a new session",
                self.name,
                self.leader_id,
                ErrorCode(response.error_code).name,
            )
            return
        if response.error_code != ErrorCode.NONE:
            raise ConnectionError(f"leader answered {ErrorCode(response.error_code).name}")
        names = {s.topic_id: s.topic for s in ready}
        for topic in response.responses:
            name = topic.topic if version < 13 else names.get(topic.topic_id, "")
            for data in topic.partitions:
                entry = sent.get((name, data.partition_index))
                if entry is None:
                    continue
                state, epoch, offset = entry
                current = self.partitions.get(state.key)
                if current is not state or state.leader_epoch != epoch or state.log.log_end_offset != offset:
                    # removed, moved to another epoch, or truncated meanwhile: what the leader's session
                    # believes it sent is not what this log has, so start a new one
                    self.session.restart()
                    continue
                await self._apply(connection, state, data)

    async def _send_unless_abandoned(
        self,
        connection: LeaderConnection,
        request: FetchRequest,
        version: int,
        sent: dict[PartitionKey, tuple[FetchState, int, int]],
    ) -> FetchResponse | None:
        """The leader's answer, or None when a partition added meanwhile abandoned the fetch (its
        connection is closed: the answer may be half read; nothing of it was applied)."""
        abandon = self._abandon = asyncio.get_running_loop().create_future()
        self._in_flight = {key: entry[0] for key, entry in sent.items()}
        send = asyncio.ensure_future(connection.send(request, version))
        try:
            await asyncio.wait((send, abandon), return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._abandon, self._in_flight = None, {}
            if not send.done():
                send.cancel()
        if send.done() and not send.cancelled():
            response: FetchResponse = send.result()
            return response
        log.debug(
            "%s: fetch from broker %d abandoned for partitions added meanwhile", self.name, self.leader_id
        )
        self.close_connection()
        return None

    # ----- one partition's answer ---------------------------------------------------------------------

    async def _apply(self, connection: LeaderConnection, state: FetchState, data: PartitionData) -> None:
        code = data.error_code
        try:
            if code == ErrorCode.NONE:
                diverging = data.diverging_epoch
                if diverging is not None and (diverging.epoch >= 0 or diverging.end_offset >= 0):
                    self._truncate_on_divergence(state, diverging.epoch, diverging.end_offset)
                else:
                    await self._append(state, data)
            elif code == ErrorCode.OFFSET_OUT_OF_RANGE:
                await self._handle_out_of_range(connection, state)
            else:
                log.info(
                    "%s: %s-%d answered %s by broker %d: retrying after %d ms",
                    self.name,
                    state.topic,
                    state.partition,
                    ErrorCode(code).name,
                    self.leader_id,
                    self.settings.fetch_backoff_ms,
                )
                self._delay(state)
        except LogStorageError as error:
            if self._follows(state):  # else not this fetcher's any more: whoever took it over decides
                self._mark_failed(state, error)
        except StorageError as error:
            log.error("%s: %s-%d: storage failed", self.name, state.topic, state.partition, exc_info=error)
            self._delay(state)

    async def _append(self, state: FetchState, data: PartitionData) -> None:
        """The answer's records, high watermark and log start, applied by partition/ (Kafka's
        processPartitionData); the lag and the follower's replication quota are the fetcher's."""
        appended = await self.context.followers.append_fetched(
            state.key, state.leader_epoch, state.log, data, lambda: self._follows(state)
        )
        if appended is None:
            return  # led here, followed at a newer epoch, or truncated again, since
        state.lag = max(0, data.high_watermark - state.log.log_end_offset)
        quota = self.context.quota
        if appended and quota.is_throttled(
            state.log.config.follower_replication_throttled_replicas, state.partition
        ):
            quota.record(appended)  # in sync or not, as Kafka's

    def _truncate_on_divergence(self, state: FetchState, leader_epoch: int, leader_end: int) -> None:
        """Kafka's getOffsetTruncationState, for the leader's DivergingEpoch answer."""
        replica_log = state.log
        own_end = replica_log.log_end_offset
        if leader_end < 0:
            offset = min(replica_log.high_watermark, own_end)
        elif leader_epoch < 0:
            offset = min(leader_end, own_end)
        else:
            epoch, end = replica_log.end_offset_for_epoch(leader_epoch)
            if epoch < 0:
                offset = min(leader_end, own_end)
            elif epoch != leader_epoch:
                offset = min(end, own_end)  # the next fetch asks about the earlier epoch
            else:
                offset = min(leader_end, end)
        self._truncate(state, offset, f"diverging at epoch {leader_epoch}, leader's end {leader_end}")

    async def _handle_out_of_range(self, connection: LeaderConnection, state: FetchState) -> None:
        """Kafka's fetchOffsetAndTruncate."""
        replica_log = state.log
        leader_end = await leader_offset(
            connection, self.context.node_id, state, LATEST_TIMESTAMP, self.settings
        )
        if not self._follows(state):
            return  # led here, or followed at a newer epoch, since: nothing of the old one to act on
        if leader_end is None:
            self._delay(state)
            return
        if leader_end < replica_log.log_end_offset:
            self._truncate(state, leader_end, f"out of range: the leader's log ends at {leader_end}")
            return
        leader_start = await leader_offset(
            connection, self.context.node_id, state, EARLIEST_TIMESTAMP, self.settings
        )
        if not self._follows(state):
            return
        if leader_start is None:
            self._delay(state)
            return
        if leader_start > replica_log.log_end_offset:
            log.warning(
                "%s: %s-%d: the leader's log starts at %d, past this log's end %d: starting over there",
                self.name,
                state.topic,
                state.partition,
                leader_start,
                replica_log.log_end_offset,
            )
            self.context.followers.truncate_fully_and_start_at(replica_log, leader_start)

    def _truncate(self, state: FetchState, offset: int, why: str) -> None:
        self.context.followers.truncate(state.log, offset, why)

    def _mark_failed(self, state: FetchState, error: LogStorageError) -> None:
        """Kafka's markPartitionFailed: a partition whose log failed (offline until the broker restarts,
        truncation_checkpoints.py) is fetched no more; fetched again after each backoff, the leader
        would read and send it every time, and each answer fail again."""
        self.partitions.pop(state.key, None)
        log.error("%s: %s-%d is no longer fetched: %s", self.name, state.topic, state.partition, error)
        if self.on_partition_failed is not None:
            self.on_partition_failed(state.key)

    def _delay(self, state: FetchState) -> None:
        state.delayed_until = time.monotonic() + self.settings.fetch_backoff_ms / 1000
        # The leader's session keeps the partition as it failed (a topic id it did not know yet, say):
        # the next fetch of it is a full one. Without other partitions to fetch meanwhile, the session
        # would otherwise look unchanged and ask it again incrementally, for the same error.
        self.session.restart()
