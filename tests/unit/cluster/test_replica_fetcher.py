"""A follower's handling of its leader's answers (Kafka's AbstractFetcherThread), on a real log with
the leader's answers given by the test: records appended as they are, the follower's high watermark
min(leader's HW, own end), truncation on DivergingEpoch, and Kafka's out-of-range rules."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import uuid
from typing import Any

import pytest

from odradek.cluster.inter_broker_versions import InterBrokerVersions
from odradek.cluster.replication.fetch_state import FetcherContext, FetcherSettings, FetchState
from odradek.cluster.replication.replica_fetcher import ReplicaFetcher
from odradek.cluster.replication.truncation_checkpoints import TruncationCheckpoints
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.frames import decode_response, encode_response
from odradek.protocol.messages.fetch import (
    EpochEndOffset,
    FetchableTopicResponse,
    FetchRequest,
    FetchResponse,
    PartitionData,
)
from odradek.protocol.messages.list_offsets import (
    ListOffsetsPartitionResponse,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
)
from odradek.protocol.records import RecordBatch, RecordBatchBuilder
from odradek.protocol.records import record as record_module
from odradek.storage.flush import FlushJob
from odradek.storage.flush_scheduler import FlushScheduler
from odradek.storage.log import Log
from odradek.storage.log_manager import LogManager
from odradek.storage.partition import TopicPartition
from odradek.storage.segment import LogSegment
from tests.support.followers import follow, follower_appends, host

TOPIC_ID = uuid.UUID(int=7)
SETTINGS = FetcherSettings(
    fetch_max_bytes=1 << 20,
    fetch_min_bytes=1,
    fetch_wait_max_ms=100,
    fetch_response_max_bytes=1 << 20,
    fetch_backoff_ms=100,
    socket_timeout_ms=1000,
    socket_receive_buffer_bytes=-1,
)


def _batches(base_offset: int, epoch: int, values: list[bytes]) -> bytes:
    """Batches as a leader stores them: one record each, offsets and epoch stamped."""
    out = bytearray()
    for i, value in enumerate(values):
        builder = RecordBatchBuilder(base_offset + i, partition_leader_epoch=epoch)
        builder.append(1_700_000_000_000, None, value)
        out += builder.build()
    return bytes(out)


class _Leader:
    """Answers the ListOffsets a fetcher sends while resolving OFFSET_OUT_OF_RANGE."""

    def __init__(self, latest: int, earliest: int) -> None:
        self.offsets = {-1: latest, -2: earliest}

    async def send(self, request: Any, version: int) -> Any:
        timestamp = request.topics[0].partitions[0].timestamp
        partition = ListOffsetsPartitionResponse(
            partition_index=0, error_code=0, offset=self.offsets[timestamp]
        )
        return ListOffsetsResponse(topics=[ListOffsetsTopicResponse(name="t", partitions=[partition])])


def _fetcher(
    logs: LogManager, notified: list[TopicPartition], settings: FetcherSettings = SETTINGS
) -> ReplicaFetcher:
    # no power loss here: truncations wait for nothing (test_truncation_checkpoints.py)
    followers = follower_appends(logs, 2, TruncationCheckpoints(FlushScheduler([], {})))
    followers.replicas.appends.on_append = notified.append  # the append events raised
    context = FetcherContext(
        node_id=2,
        broker_epoch=lambda: 7,
        endpoint=lambda _: None,
        local_host=None,
        followers=followers,
    )
    return ReplicaFetcher("test-fetcher", 1, settings, context)


def _answer(
    records: bytes = b"", high_watermark: int = 0, diverging: tuple[int, int] = (-1, -1)
) -> PartitionData:
    return PartitionData(
        partition_index=0,
        error_code=ErrorCode.NONE,
        high_watermark=high_watermark,
        last_stable_offset=high_watermark,
        log_start_offset=0,
        diverging_epoch=EpochEndOffset(epoch=diverging[0], end_offset=diverging[1]),
        records=records,
    )


async def _apply(logs: LogManager, log: Log, data: PartitionData, leader: Any = None) -> list[TopicPartition]:
    notified: list[TopicPartition] = []
    fetcher = _fetcher(logs, notified)
    try:
        state = follow(fetcher, FetchState("t", 0, None, leader_epoch=5, log=log))
        await fetcher._apply(leader or _Leader(0, 0), state, data)
    finally:
        fetcher.task.cancel()
        await asyncio.gather(fetcher.task, return_exceptions=True)
    return notified


def test_fetched_batches_are_appended_as_they_are_and_the_hw_follows_the_leader(logs: LogManager) -> None:
    log = logs.get_or_create_log("t", 0)
    fetched = _batches(0, 3, [b"a", b"b", b"c"])
    notified = asyncio.run(_apply(logs, log, _answer(fetched, high_watermark=2)))
    assert log.log_end_offset == 3
    assert log.high_watermark == 2
    assert log.leader_epoch_cache.latest_epoch == 3
    assert log.read(0, 1 << 20, min_one_message=True, isolation=_log_end()).read_bytes() == fetched
    assert notified == [TopicPartition("t", 0)]
    asyncio.run(_apply(logs, log, _answer(high_watermark=9)))
    assert log.high_watermark == 3  # never past its own log end


def test_fetched_batches_go_from_the_received_frame_to_the_segment_undecoded_and_uncopied(
    logs: LogManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The follower's hot path: the frame the socket filled is decoded in place, and the segment is
    written from a view of it; no record is decoded on the way (Kafka's appendAsFollower)."""
    log = logs.get_or_create_log("t", 0)
    fetched = _batches(0, 3, [b"a" * 100, b"b" * 100, b"c" * 100])
    response = FetchResponse(
        responses=[FetchableTopicResponse(topic_id=TOPIC_ID, partitions=[_answer(fetched, high_watermark=3)])]
    )
    frame = bytearray(encode_response(response, 17, correlation_id=1)[4:])  # as the socket left it
    data = decode_response(frame, ApiKey.FETCH, 17)[1].responses[0].partitions[0]

    def no_decoding(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a record batch was decoded on the follower's append path")

    monkeypatch.setattr(RecordBatch, "decode", no_decoding)
    monkeypatch.setattr(record_module, "decode_records", no_decoding)
    written: list[Any] = []
    append = LogSegment.append

    def spy(segment: LogSegment, largest: int, timestamp: int, offset: int, data: Any) -> None:
        written.append(data)
        append(segment, largest, timestamp, offset, data)

    monkeypatch.setattr(LogSegment, "append", spy)
    asyncio.run(_apply(logs, log, data))
    assert log.log_end_offset == 3
    assert [view.obj for view in written] == [frame]  # one write, from the frame itself
    assert log.read(0, 1 << 20, min_one_message=True, isolation=_log_end()).read_bytes() == fetched


def test_a_divergent_tail_is_truncated_where_the_leaders_epoch_ends(logs: LogManager) -> None:
    log = logs.get_or_create_log("t", 0)
    log.append_as_follower(bytearray(_batches(0, 1, [b"a", b"b"]) + _batches(2, 2, [b"x", b"y", b"z"])))
    # The leader's epoch 2 ended at 3: offsets 3 and 4 here were never committed.
    asyncio.run(_apply(logs, log, _answer(diverging=(2, 3))))
    assert log.log_end_offset == 3
    assert log.leader_epoch_cache.latest_epoch == 2


def test_an_epoch_the_leader_does_not_know_truncates_to_where_the_followers_earlier_epoch_ends(
    logs: LogManager,
) -> None:
    log = logs.get_or_create_log("t", 0)
    log.append_as_follower(bytearray(_batches(0, 1, [b"a", b"b"]) + _batches(2, 3, [b"x", b"y"])))
    # The leader answers with its epoch 2 (it never had 3), ending at 6: this log has no epoch 2, so
    # it cuts back to the end of its own largest epoch below (1, ending at 2) and asks again.
    asyncio.run(_apply(logs, log, _answer(diverging=(2, 6))))
    assert log.log_end_offset == 2
    assert log.leader_epoch_cache.latest_epoch == 1


def test_out_of_range_below_the_followers_end_truncates_to_the_leaders_end(logs: LogManager) -> None:
    log = logs.get_or_create_log("t", 0)
    log.append_as_follower(bytearray(_batches(0, 1, [b"a", b"b", b"c", b"d"])))
    out_of_range = _answer()
    out_of_range.error_code = ErrorCode.OFFSET_OUT_OF_RANGE
    asyncio.run(_apply(logs, log, out_of_range, _Leader(latest=2, earliest=0)))
    assert log.log_end_offset == 2


def test_out_of_range_behind_the_leaders_start_starts_over_empty_there(logs: LogManager) -> None:
    log = logs.get_or_create_log("t", 0)
    log.append_as_follower(bytearray(_batches(0, 1, [b"a", b"b"])))
    out_of_range = _answer()
    out_of_range.error_code = ErrorCode.OFFSET_OUT_OF_RANGE
    asyncio.run(_apply(logs, log, out_of_range, _Leader(latest=100, earliest=40)))
    assert (log.log_start_offset, log.log_end_offset) == (40, 40)


def test_the_follower_takes_its_leaders_high_watermark_even_when_lower(logs: LogManager) -> None:
    """Kafka's UnifiedLog.maybeUpdateHighWatermark: a follower's high watermark is its leader's, clamped
    to its own log, backwards too (a new leader's lags until its epoch's records are replicated). The
    leader's own never moves backwards (leader_replication.py)."""
    log = logs.get_or_create_log("t", 0)
    asyncio.run(_apply(logs, log, _answer(_batches(0, 3, [b"a", b"b", b"c"]), high_watermark=3)))
    assert log.high_watermark == 3
    notified = asyncio.run(_apply(logs, log, _answer(high_watermark=1)))
    assert log.high_watermark == 1
    assert notified == [TopicPartition("t", 0)]


class _HeldFlush(FlushJob):
    """A flush whose fsync waits (in its worker thread) until the test lets it go."""

    gate: threading.Event

    def run(self) -> None:
        assert self.gate.wait(5)
        FlushJob.run(self)


def test_a_fetch_whose_partition_moved_on_during_its_flush_leaves_the_high_watermark_alone(
    logs: LogManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kafka applies a fetch's answer under partitionMapLock; here the follower's flush awaits, and
    meanwhile a LeaderAndIsr may have made this broker the partition's leader: the answer's high
    watermark and log start are no longer this fetcher's to apply."""
    log = logs.get_or_create_log("t", 0)
    log.update_config(dataclasses.replace(log.config, flush_messages=1))
    gate = threading.Event()
    prepare = log.prepare_flush

    def held(up_to_offset: int | None = None) -> FlushJob | None:
        job = prepare(up_to_offset)
        if job is None:
            return None
        holding = _HeldFlush(job.flush_offset, job.segments, job.files, job.directory)
        holding.gate = gate
        return holding

    monkeypatch.setattr(log, "prepare_flush", held)

    async def main() -> None:
        fetcher = _fetcher(logs, [])
        try:
            state = follow(fetcher, FetchState("t", 0, None, leader_epoch=5, log=log))
            answer = _answer(_batches(0, 5, [b"a", b"b", b"c"]), high_watermark=3)
            answer.log_start_offset = 2
            applying = asyncio.ensure_future(fetcher._apply(_Leader(0, 0), state, answer))
            await asyncio.sleep(0.05)
            assert not applying.done()  # in its flush
            # a LeaderAndIsr: this broker leads now (the fetcher lets the partition go), and its own
            # high watermark is 1 (a leader's moves only as its followers catch up)
            fetcher.remove(state.key)
            log.update_high_watermark(1)
            gate.set()
            await asyncio.wait_for(applying, 5)
        finally:
            gate.set()
            fetcher.task.cancel()
            await asyncio.gather(fetcher.task, return_exceptions=True)

    asyncio.run(main())
    assert log.high_watermark == 1
    assert log.log_start_offset == 0


def test_out_of_range_resolved_after_the_partition_moved_on_truncates_nothing(logs: LogManager) -> None:
    """Its ListOffsets round trips await: a partition this fetcher no longer follows (this broker leads
    it now, or follows it at a newer epoch) is not truncated by the old leader's answer."""
    log = logs.get_or_create_log("t", 0)
    log.append_as_follower(bytearray(_batches(0, 1, [b"a", b"b", b"c", b"d"])))

    class SlowLeader(_Leader):
        def __init__(self) -> None:
            super().__init__(latest=2, earliest=0)
            self.asked = asyncio.Event()
            self.answer = asyncio.Event()

        async def send(self, request: Any, version: int) -> Any:
            self.asked.set()
            await self.answer.wait()
            return await super().send(request, version)

    async def main() -> None:
        fetcher = _fetcher(logs, [])
        leader = SlowLeader()
        try:
            state = follow(fetcher, FetchState("t", 0, None, leader_epoch=5, log=log))
            out_of_range = _answer()
            out_of_range.error_code = ErrorCode.OFFSET_OUT_OF_RANGE
            applying = asyncio.ensure_future(fetcher._apply(leader, state, out_of_range))
            await asyncio.wait_for(leader.asked.wait(), 5)
            fetcher.remove(state.key)  # a LeaderAndIsr made this broker the leader meanwhile
            leader.answer.set()
            await asyncio.wait_for(applying, 5)
        finally:
            fetcher.task.cancel()
            await asyncio.gather(fetcher.task, return_exceptions=True)

    asyncio.run(main())
    assert log.log_end_offset == 4


def _log_end() -> Any:
    from odradek.storage.fetch import FetchIsolation

    return FetchIsolation.LOG_END


def test_a_partition_added_while_a_fetch_is_parked_at_the_leader_is_fetched_at_once(
    logs: LogManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A LeaderAndIsr that makes this broker follow another partition of the same leader must not wait
    for the fetch in flight, parked there up to replica.fetch.wait.max.ms: the new leader's high
    watermark, and its acks=all produces, need this follower's fetch of that partition."""
    asked: list[set[int]] = []

    class ParkedLeader:
        connected = True

        async def send(self, request: Any, version: int) -> Any:
            asked.append({p.partition for t in request.topics for p in t.partitions})
            await asyncio.Event().wait()  # nothing new to answer with

        def close(self) -> None:
            pass

    async def main() -> None:
        fetcher = _fetcher(logs, [])
        leader = ParkedLeader()

        async def connect() -> Any:
            return leader

        monkeypatch.setattr(fetcher, "_connect", connect)
        try:
            fetcher.add(
                host(fetcher, FetchState("t", 0, None, leader_epoch=5, log=logs.get_or_create_log("t", 0)))
            )
            while not asked:
                await asyncio.sleep(0.01)
            fetcher.add(
                host(fetcher, FetchState("t", 1, None, leader_epoch=5, log=logs.get_or_create_log("t", 1)))
            )
            async with asyncio.timeout(5):
                while len(asked) < 2:
                    await asyncio.sleep(0.01)
            assert asked == [{0}, {0, 1}]
        finally:
            fetcher.task.cancel()
            await asyncio.gather(fetcher.task, return_exceptions=True)

    asyncio.run(main())


@pytest.mark.parametrize(
    ("ibp", "fetch", "list_offsets"),
    [("3.0-IV1", 12, 7), ("3.1", 13, 7), ("3.5-IV0", 14, 8), ("3.5", 15, 8), ("3.8", 16, 8), ("3.9", 17, 9)],
)
def test_a_follower_fetches_and_lists_offsets_at_the_inter_broker_protocol_version_s_versions(
    logs: LogManager, monkeypatch: pytest.MonkeyPatch, ibp: str, fetch: int, list_offsets: int
) -> None:
    versions = InterBrokerVersions.at(ibp)
    settings = dataclasses.replace(
        SETTINGS, fetch_version=versions.fetch, list_offsets_version=versions.list_offsets
    )
    sent: list[tuple[str, int]] = []

    class OutOfRangeLeader:
        """Answers the first Fetch OFFSET_OUT_OF_RANGE (so the follower asks ListOffsets), then parks."""

        connected = True

        async def send(self, request: Any, version: int) -> Any:
            sent.append((type(request).__name__, version))
            if isinstance(request, FetchRequest) and len(sent) == 1:
                topic = request.topics[0]
                data = _answer()
                data.error_code = ErrorCode.OFFSET_OUT_OF_RANGE
                return FetchResponse(
                    error_code=0,
                    responses=[
                        FetchableTopicResponse(topic=topic.topic, topic_id=topic.topic_id, partitions=[data])
                    ],
                )
            if isinstance(request, FetchRequest):
                await asyncio.Event().wait()
            return await _Leader(0, 0).send(request, version)

        def close(self) -> None:
            pass

    async def main() -> None:
        fetcher = _fetcher(logs, [], settings)
        leader = OutOfRangeLeader()

        async def connect() -> Any:
            return leader

        monkeypatch.setattr(fetcher, "_connect", connect)
        try:
            fetcher.add(
                host(
                    fetcher, FetchState("t", 0, TOPIC_ID, leader_epoch=5, log=logs.get_or_create_log("t", 0))
                )
            )
            async with asyncio.timeout(10):
                while [name for name, _ in sent].count("FetchRequest") < 2:
                    await asyncio.sleep(0.01)
        finally:
            fetcher.task.cancel()
            await asyncio.gather(fetcher.task, return_exceptions=True)
        assert set(sent) == {("FetchRequest", fetch), ("ListOffsetsRequest", list_offsets)}

    asyncio.run(main())
