"""Hostile request frames for a running broker: random bytes and mutations of valid requests.

Seeds are valid, size-prefixed requests of read-mostly APIs (ApiVersions, Metadata, Produce to the
hostile topics, Fetch, ListOffsets, groups and describe APIs, DescribeTopicPartitions) at several
versions. A frame is then:

- a seed as it is (so some requests are answered and the connection lives on);
- a seed mutated in its body: bit flips, random bytes, a length or count field set to 2^31-1, -1 or
  -2, a truncation or extension (the size prefix recomputed), spliced seeds;
- a seed whose size prefix lies (too small, too large, negative, above socket.request.max.bytes);
- a seed with an unsupported version or an unknown api key;
- a header of a random served API and version followed by random bytes, or plain random bytes.

The api key of a mutated seed is never changed into another served API, so no mutation turns a read
into CreateTopics, DeleteTopics or AlterConfigs with random arguments: the load stays hostile to the
decoder and the connection handling without reconfiguring the broker under the well-behaved client.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable

from odradek.protocol.frames import encode_request
from odradek.protocol.messages.api_versions import ApiVersionsRequest
from odradek.protocol.messages.describe_cluster import DescribeClusterRequest
from odradek.protocol.messages.describe_configs import DescribeConfigsRequest, DescribeConfigsResource
from odradek.protocol.messages.describe_groups import DescribeGroupsRequest
from odradek.protocol.messages.describe_topic_partitions import (
    Cursor,
    DescribeTopicPartitionsRequest,
    TopicRequest,
)
from odradek.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from odradek.protocol.messages.find_coordinator import FindCoordinatorRequest
from odradek.protocol.messages.heartbeat import HeartbeatRequest
from odradek.protocol.messages.list_groups import ListGroupsRequest
from odradek.protocol.messages.list_offsets import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from odradek.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from odradek.protocol.messages.offset_fetch import OffsetFetchRequest, OffsetFetchRequestTopic
from odradek.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from odradek.protocol.records import Compression, RecordBatchBuilder
from odradek.protocol.schema import Request

#: Topics the hostile load reads and writes (create them before the load starts).
HOSTILE_TOPICS = ("hostile-a", "hostile-b")
_SIZE = struct.Struct(">i")
_UNKNOWN_API_KEYS = (-1, 999, 32767)


def seed_frames() -> list[bytes]:
    """Valid size-prefixed requests, several versions of each seed API."""
    seeds: list[tuple[Request, int]] = []
    software = ApiVersionsRequest(client_software_name="hostile", client_software_version="1.0")
    seeds += [(software, v) for v in (0, 1, 2, 3, 4)]
    topics = [MetadataRequestTopic(name=t) for t in HOSTILE_TOPICS]
    seeds += [(MetadataRequest(topics=None), 1), (MetadataRequest(topics=[]), 0)]
    seeds += [(MetadataRequest(topics=topics, allow_auto_topic_creation=False), v) for v in (4, 9, 12)]
    for compression in (Compression.NONE, Compression.GZIP, Compression.LZ4):
        builder = RecordBatchBuilder(compression=compression)
        for i in range(5):
            builder.append(1_700_000_000_000 + i, b"key-%d" % i, b"hostile value %d" % i, [("h", b"v")])
        batch = builder.build()
        for version in (3, 7, 9):
            produce = ProduceRequest(
                acks=1,
                timeout_ms=1000,
                topic_data=[
                    TopicProduceData(name=t, partition_data=[PartitionProduceData(index=0, records=batch)])
                    for t in HOSTILE_TOPICS
                ],
            )
            seeds.append((produce, version))
    fetch = FetchRequest(
        max_wait_ms=5,
        min_bytes=1,
        max_bytes=1 << 16,
        topics=[
            FetchTopic(
                topic=t, partitions=[FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=4096)]
            )
            for t in HOSTILE_TOPICS
        ],
    )
    seeds += [(fetch, v) for v in (0, 4, 7, 11, 12)]
    list_offsets = ListOffsetsRequest(
        replica_id=-1,
        topics=[
            ListOffsetsTopic(name=t, partitions=[ListOffsetsPartition(partition_index=0, timestamp=-1)])
            for t in HOSTILE_TOPICS
        ],
    )
    seeds += [(list_offsets, v) for v in (0, 1, 5, 7)]
    seeds += [(FindCoordinatorRequest(key="hostile-group", key_type=0), v) for v in (0, 1, 3)]
    seeds += [(ListGroupsRequest(), v) for v in (0, 3)]
    seeds += [(DescribeGroupsRequest(groups=["hostile-group"]), v) for v in (0, 5)]
    heartbeat = HeartbeatRequest(group_id="hostile-group", generation_id=1, member_id="nobody")
    seeds += [(heartbeat, v) for v in (0, 4)]
    offset_fetch = OffsetFetchRequest(
        group_id="hostile-group",
        topics=[OffsetFetchRequestTopic(name=t, partition_indexes=[0]) for t in HOSTILE_TOPICS],
    )
    seeds += [(offset_fetch, v) for v in (1, 5)]
    describe_configs = DescribeConfigsRequest(
        resources=[DescribeConfigsResource(resource_type=2, resource_name=t) for t in HOSTILE_TOPICS]
    )
    seeds += [(describe_configs, v) for v in (0, 4)]
    seeds += [(DescribeClusterRequest(), v) for v in (0, 1)]
    named = [TopicRequest(name=t) for t in HOSTILE_TOPICS]
    seeds += [
        (DescribeTopicPartitionsRequest(topics=named, response_partition_limit=1), 0),
        (DescribeTopicPartitionsRequest(topics=[], cursor=Cursor(topic_name=HOSTILE_TOPICS[1])), 0),
    ]
    return [encode_request(body, version, correlation_id=7, client_id="hostile") for body, version in seeds]


class HostileFrames:
    """An endless, reproducible (by seed) supply of hostile frames, each with the name of its kind."""

    def __init__(self, rng: random.Random, max_request_bytes: int = 104_857_600) -> None:
        self.rng = rng
        self.max_request_bytes = max_request_bytes
        self.seeds = seed_frames()
        self.served_keys = sorted({struct.unpack_from(">h", s, 4)[0] for s in self.seeds})
        self.kinds: list[tuple[str, int, Callable[[], bytes]]] = [
            ("valid", 10, self._valid),
            ("bit-flips", 20, self._bit_flips),
            ("random-bytes-in-body", 12, self._random_body_bytes),
            ("length-fields", 14, self._length_fields),
            ("truncated", 8, self._truncated),
            ("extended", 5, self._extended),
            ("spliced", 4, self._spliced),
            ("size-prefix-lies", 6, self._size_lies),
            ("unsupported-version", 4, self._unsupported_version),
            ("unknown-api-key", 3, self._unknown_key),
            ("random-body", 10, self._random_after_header),
            ("random-frame", 4, self._random_frame),
        ]
        self._names = [k[0] for k in self.kinds]
        self._weights = [k[1] for k in self.kinds]
        self._makers = {k[0]: k[2] for k in self.kinds}

    def next(self) -> tuple[str, bytes]:
        kind = self.rng.choices(self._names, self._weights)[0]
        return kind, self._makers[kind]()

    # ----- kinds ---------------------------------------------------------------------------------

    def _seed(self) -> bytearray:
        frame = bytearray(self.rng.choice(self.seeds))
        struct.pack_into(">i", frame, 8, self.rng.randrange(1 << 31))  # a fresh correlation id
        return frame

    def _valid(self) -> bytes:
        return bytes(self._seed())

    def _body_start(self, frame: bytearray) -> int:
        return 12  # size, api key, version, correlation id: the client id and body may be mutated

    def _bit_flips(self) -> bytes:
        frame = self._seed()
        start = self._body_start(frame)
        for _ in range(self.rng.randint(1, 8)):
            position = self.rng.randrange(start, len(frame))
            frame[position] ^= 1 << self.rng.randrange(8)
        return bytes(frame)

    def _random_body_bytes(self) -> bytes:
        frame = self._seed()
        start = self._body_start(frame)
        for _ in range(self.rng.randint(1, 6)):
            position = self.rng.randrange(start, len(frame))
            frame[position] = self.rng.randrange(256)
        return bytes(frame)

    def _length_fields(self) -> bytes:
        """Overwrite a 2- or 4-byte run (a string length, array count or int32) with an extreme value."""
        frame = self._seed()
        start = self._body_start(frame)
        width = self.rng.choice((2, 4))
        if len(frame) - width <= start:
            return bytes(frame)
        position = self.rng.randrange(start, len(frame) - width + 1)
        if width == 2:
            value = self.rng.choice((0x7FFF, -1, -2, 0x7FFE, 0))
            struct.pack_into(">h", frame, position, value)
        else:
            value = self.rng.choice((0x7FFFFFFF, -1, -2, 0x7FFFFFFE, 0x00FFFFFF))
            struct.pack_into(">i", frame, position, value)
        return bytes(frame)

    def _truncated(self) -> bytes:
        frame = self._seed()
        cut = self.rng.randrange(4, len(frame))
        return _resized(frame[4:cut])

    def _extended(self) -> bytes:
        frame = self._seed()
        return _resized(frame[4:] + self.rng.randbytes(self.rng.randint(1, 64)))

    def _spliced(self) -> bytes:
        first, second = self._seed(), self._seed()
        cut = self.rng.randrange(12, len(first))
        return _resized(first[4:cut] + second[self.rng.randrange(4, len(second)) :])

    def _size_lies(self) -> bytes:
        frame = self._seed()
        choice = self.rng.randrange(4)
        if choice == 0:  # claims more than it carries: the broker waits for bytes that never come
            struct.pack_into(">i", frame, 0, len(frame) - 4 + self.rng.randint(1, 1000))
        elif choice == 1:  # claims less: the rest is read as the next frame's size
            struct.pack_into(">i", frame, 0, self.rng.randint(0, len(frame) - 5))
        elif choice == 2:
            struct.pack_into(">i", frame, 0, self.rng.choice((-1, -2, -(1 << 31))))
        else:
            struct.pack_into(">i", frame, 0, self.max_request_bytes + self.rng.randint(1, 1 << 20))
        return bytes(frame)

    def _unsupported_version(self) -> bytes:
        frame = self._seed()
        struct.pack_into(">h", frame, 6, self.rng.choice((-1, 99, 32767, self.rng.randint(20, 200))))
        return bytes(frame)

    def _unknown_key(self) -> bytes:
        frame = self._seed()
        struct.pack_into(">h", frame, 4, self.rng.choice(_UNKNOWN_API_KEYS))
        return bytes(frame)

    def _random_after_header(self) -> bytes:
        key = self.rng.choice(self.served_keys)
        header = struct.pack(">hhi", key, self.rng.randint(0, 12), self.rng.randrange(1 << 31))
        return _resized(bytearray(header + self.rng.randbytes(self.rng.randint(0, 300))))

    def _random_frame(self) -> bytes:
        return _resized(bytearray(self.rng.randbytes(self.rng.randint(0, 200))))


def _resized(body: bytearray | bytes) -> bytes:
    return _SIZE.pack(len(body)) + bytes(body)
