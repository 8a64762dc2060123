"""The codec's shortcuts agree with the plain definitions they replace."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.protocol.codec import default_check, encode_into_for
from odradek.protocol.compiler.generator import INLINE_DEPTH
from odradek.protocol.messages.metadata import (
    MetadataResponse,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from odradek.protocol.schema import Struct
from odradek.protocol.varint import uvarint_bytes

from .schema_strategies import ALL_CASES, struct_strategy


def _tagged_struct_defaults() -> list[type[Struct]]:
    """Every struct class that is the default of a tagged field somewhere."""
    found: dict[str, type[Struct]] = {}

    def walk(cls: type[Struct]) -> None:
        for spec in cls.FIELDS:
            if spec.struct is not None:
                if spec.kind == "struct" and spec.tag is not None:
                    found[f"{cls.__qualname__}.{spec.name}"] = spec.struct
                walk(spec.struct)

    for cls, _ in ALL_CASES:
        walk(cls)
    return sorted(set(found.values()), key=lambda c: c.__qualname__)


TAGGED_DEFAULTS = _tagged_struct_defaults()


def test_there_are_tagged_struct_fields() -> None:
    assert len(TAGGED_DEFAULTS) >= 5


@pytest.mark.parametrize("cls", TAGGED_DEFAULTS, ids=[c.__qualname__ for c in TAGGED_DEFAULTS])
@settings(max_examples=30, deadline=None, database=None)
@given(data=st.data())
def test_default_check_is_equality_with_a_default_struct(cls: type[Struct], data: Any) -> None:
    check = default_check(cls)
    assert check(cls())
    version = data.draw(st.integers(0, 20), label="version")
    value = data.draw(st.just(cls()) | struct_strategy(cls, version, True, True), label="value")
    assert check(value) == (value == cls())
    assert not check(None)


def _one_field_off(cls: type[Struct]) -> list[Struct]:
    """Instances of `cls` that differ from its default in exactly one place (a field, or an unknown
    tagged field): each must make the encoder leave the all-defaults shortcut."""
    variants: list[Struct] = []
    for spec in cls.FIELDS:
        value = cls()
        current = getattr(value, spec.name)
        if isinstance(current, bool) or spec.kind == "bool":
            setattr(value, spec.name, not current)
        elif isinstance(current, int):
            setattr(value, spec.name, current + 7)
        else:
            continue
        variants.append(value)
    with_unknown = cls()
    with_unknown.unknown_tagged_fields = {99: b"\x01"}
    variants.append(with_unknown)
    return variants


def test_a_tagged_struct_one_field_off_its_default_is_written() -> None:
    from odradek.protocol.messages.fetch import FetchResponse, PartitionData

    for field in ("diverging_epoch", "current_leader", "snapshot_id"):
        spec = next(s for s in PartitionData.FIELDS if s.name == field)
        assert spec.struct is not None
        for variant in _one_field_off(spec.struct):
            partition = PartitionData(partition_index=1, records=b"")
            setattr(partition, field, variant)
            message = FetchResponse(responses=[], session_id=3)
            message.responses = [_topic_with(partition)]
            encoded = message.encode(12)
            decoded = FetchResponse.decode(encoded, 12)
            assert decoded == message, (field, variant)
            assert encoded != FetchResponse(
                responses=[_topic_with(PartitionData(partition_index=1, records=b""))], session_id=3
            ).encode(12)


def _topic_with(partition: Any) -> Any:
    from odradek.protocol.messages.fetch import FetchableTopicResponse

    return FetchableTopicResponse(topic="t", partitions=[partition])


def test_decoded_default_structs_are_not_shared() -> None:
    """Absent tagged struct fields decode to defaults built per message: changing one (handlers do
    fill in responses) must not change another message's."""
    from odradek.protocol.messages.fetch import FetchResponse, PartitionData

    message = FetchResponse(responses=[_topic_with(PartitionData(partition_index=1, records=b""))])
    first = FetchResponse.decode(message.encode(12), 12)
    second = FetchResponse.decode(message.encode(12), 12)
    a = first.responses[0].partitions[0]
    b = second.responses[0].partitions[0]
    assert a.current_leader == b.current_leader == PartitionData().current_leader
    a.current_leader.leader_id = 5
    assert b.current_leader.leader_id == PartitionData().current_leader.leader_id
    assert a.diverging_epoch is not b.diverging_epoch


def test_a_struct_field_is_made_on_first_read_and_kept() -> None:
    """Struct fields hold None in their slot until read (decoders and __init__ make no default struct);
    the first read makes the default, later reads and writes see that same struct, and an encoder
    writes a never-read field as its default without making it."""
    from odradek.protocol.messages.fetch import FetchResponse, LeaderIdAndEpoch, PartitionData

    fresh = PartitionData(partition_index=1, records=b"")
    message = FetchResponse(responses=[_topic_with(fresh)])
    encoded = message.encode(12)
    assert fresh._current_leader_or_none is None  # the encoder did not make it
    decoded = FetchResponse.decode(encoded, 12).responses[0].partitions[0]
    assert decoded._current_leader_or_none is None
    leader = decoded.current_leader
    assert leader == LeaderIdAndEpoch() and decoded.current_leader is leader
    leader.leader_id = 4
    again = FetchResponse.decode(FetchResponse(responses=[_topic_with(decoded)]).encode(12), 12)
    assert again.responses[0].partitions[0].current_leader.leader_id == 4
    given = LeaderIdAndEpoch(leader_id=2, leader_epoch=9)
    assert PartitionData(current_leader=given).current_leader is given
    assert PartitionData(current_leader=None).current_leader == LeaderIdAndEpoch()
    assert "_current_leader_or_none" not in repr(decoded) and "current_leader=" in repr(decoded)


def _nesting_depth(cls: type[Struct], version: int) -> int:
    """How many struct levels lie below `cls` at `version` (0: no struct fields)."""
    depths = [
        1 + _nesting_depth(spec.struct, version)
        for spec in cls.FIELDS
        if spec.struct is not None and spec.present_in(version) and not spec.is_tagged_in(version)
    ]
    return max(depths, default=0)


def test_round_trips_cover_structs_inlined_and_structs_decoded_by_a_call() -> None:
    """Nested structs are decoded and encoded inline down to INLINE_DEPTH levels and by a call below:
    the round-trip property tests over every message must meet both kinds."""
    deepest = max(_nesting_depth(cls, version) for cls, version in ALL_CASES)
    assert deepest > INLINE_DEPTH


@pytest.mark.parametrize("count", [0, 1, 2, 30, 31, 32, 33, 125, 126, 127, 128, 300])
@pytest.mark.parametrize("version", [7, 12])  # classic (int32 count) and flexible (count + 1 as uvarint)
def test_arrays_of_fixed_width_items_of_every_length_encode_as_count_then_items(
    count: int, version: int
) -> None:
    """Short arrays are written with their count by one precompiled struct call, longer ones the plain
    way: both must give the bytes the definition says, either side of each boundary."""
    replicas = list(range(1000, 1000 + count))
    partition = MetadataResponsePartition(
        error_code=0,
        partition_index=7,
        leader_id=1,
        leader_epoch=2,
        replica_nodes=replicas,
        isr_nodes=[],
        offline_replicas=[],
    )
    encoded = encode_into_for(MetadataResponse, version)
    out = bytearray()
    message = MetadataResponse(
        throttle_time_ms=0,
        brokers=[],
        cluster_id=None,
        controller_id=1,
        topics=[MetadataResponseTopic(error_code=0, name="t", is_internal=False, partitions=[partition])],
    )
    encoded(message, out)
    items = struct.pack(f">{count}i", *replicas)
    prefix = uvarint_bytes(count + 1) if version >= 9 else struct.pack(">i", count)
    fixed = struct.pack(">hiii", 0, 7, 1, 2)
    assert bytes(fixed + prefix + items) in bytes(out)
    assert MetadataResponse.decode(bytes(out), version).topics[0].partitions[0].replica_nodes == replicas


def test_a_decoded_uuid_is_the_uuid_its_bytes_make() -> None:
    """Decoders build UUIDs by setting their slots (UUID(bytes=...) costs four times as much): the
    result must be indistinguishable from the UUID the constructor makes."""
    import copy
    import pickle
    import uuid

    from odradek.protocol.messages.metadata import MetadataResponse

    for made in (uuid.UUID(int=0), uuid.uuid4(), uuid.UUID(int=2**128 - 1)):
        message = MetadataResponse(topics=[MetadataResponseTopic(name="t", topic_id=made)])
        decoded = MetadataResponse.decode(message.encode(12), 12).topics[0].topic_id
        assert type(decoded) is uuid.UUID
        assert decoded == made and hash(decoded) == hash(made) and not decoded < made
        assert (str(decoded), repr(decoded), decoded.bytes, decoded.int) == (
            str(made),
            repr(made),
            made.bytes,
            made.int,
        )
        assert decoded.is_safe is uuid.SafeUUID.unknown
        assert pickle.loads(pickle.dumps(decoded)) == made and copy.deepcopy(decoded) == made
        with pytest.raises(TypeError):
            decoded.int = 5  # type: ignore[misc]


@pytest.mark.parametrize(
    "aborted", [None, [], [(7, 100)], [(7, 100), (8, 200)]], ids=["null", "empty", "one", "two"]
)
@pytest.mark.parametrize("version", [4, 11, 12, 16])  # classic (no bridge) and flexible (bridge)
def test_fields_around_a_null_or_empty_array_read_and_write_as_kafka_python_does(
    aborted: list[tuple[int, int]] | None, version: int
) -> None:
    """A compact array between fixed-width fields (Fetch's aborted_transactions) is read and written
    with its neighbours in one call when null or empty, the general way otherwise: both ways must give
    kafka-python's bytes and read back what was written."""
    from odradek.protocol.messages.fetch import AbortedTransaction, FetchResponse, PartitionData

    from .kafka_python_oracle import (
        decode_with_kafka_python,
        encode_with_kafka_python,
        from_kafka_python,
        to_kafka_python,
    )

    transactions = None
    if aborted is not None:
        transactions = [AbortedTransaction(producer_id=p, first_offset=o) for p, o in aborted]
    partition = PartitionData(
        partition_index=3,
        error_code=1,
        high_watermark=99,
        last_stable_offset=98,
        log_start_offset=5 if version >= 5 else -1,
        aborted_transactions=transactions,
        preferred_read_replica=2 if version >= 11 else -1,
        records=b"x" * 300,
    )
    message = FetchResponse(responses=[_topic_with(partition)], session_id=9 if version >= 7 else 0)
    if version >= 13:
        message.responses[0].topic = ""
    ours = message.encode(version)
    assert encode_with_kafka_python(FetchResponse, to_kafka_python(message, version), version) == ours
    decoded = FetchResponse.decode(ours, version)
    assert decoded == message
    assert decoded.responses[0].partitions[0].aborted_transactions == transactions
    theirs = decode_with_kafka_python(FetchResponse, ours, version)
    assert from_kafka_python(FetchResponse, theirs, version) == message


def test_a_nullable_struct_field_keeps_null_apart_from_its_default() -> None:
    """Only non-nullable struct fields are made on first read: where a struct may be null (and has a
    struct default, which no Kafka schema has today), None read back must stay None, in both the
    regular and the tagged places, and the default must still be a struct."""
    from odradek.protocol.schema import Int32, Message, Nested

    class Inner(Struct):
        value: int = Int32(default=7)

    class Probe(Message, versions="0-1", flexible="1+"):
        plain: Inner | None = Nested(Inner, nullable="0+")
        tagged: Inner | None = Nested(Inner, "1+", nullable="1+", tag=0)

    assert Probe().plain == Inner() and Probe().tagged == Inner()
    pairs = [(None, None), (Inner(value=1), None), (None, Inner(value=2)), (Inner(), Inner())]
    for version in (0, 1):
        for plain, tagged in pairs:
            message = Probe(plain=plain, tagged=tagged if version else Inner())
            decoded = Probe.decode(message.encode(version), version)
            assert decoded.plain == plain and decoded.tagged == message.tagged, (version, plain, tagged)
    assert Probe.decode(Probe().encode(1), 1).tagged == Inner()
