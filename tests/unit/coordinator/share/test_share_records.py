"""`__share_group_state` records are Kafka 4.4's bytes (ShareSnapshot/ShareUpdate keys and values)."""

from __future__ import annotations

import uuid

import pytest

from odradek.coordinator.share.records import (
    SNAPSHOT,
    UPDATE,
    ShareSnapshotValue,
    ShareStateBatch,
    ShareStateRecord,
    ShareUpdateValue,
    UnreadableShareRecord,
    decode_share_record,
)
from odradek.partition.share.persister import SharePartitionKey

KEY = SharePartitionKey("g", uuid.UUID(int=1), 3)
#: int16 record type, then the key v0: string "g", the 16 id bytes, int32 partition.
KEY_BODY = "0001" + "67" + "00000000000000000000000000000001" + "00000003"


def test_a_snapshot_key_and_value_are_kafkas_bytes() -> None:
    value = ShareSnapshotValue(
        snapshot_epoch=0,
        state_epoch=1,
        leader_epoch=2,
        start_offset=5,
        create_timestamp=7,
        write_timestamp=8,
        state_batches=[ShareStateBatch(first_offset=5, last_offset=6, delivery_state=2, delivery_count=1)],
    )
    key, encoded = ShareStateRecord(SNAPSHOT, KEY, value).encode()
    assert key.hex() == "0000" + KEY_BODY
    assert encoded is not None
    assert encoded.hex() == (
        "0000"  # value version 0, then flexible v0:
        "00000000"
        "00000001"
        "00000002"
        "0000000000000005"  # snapshot, state, leader epochs; start
        "0000000000000007"
        "0000000000000008"  # create and write timestamps
        "02"
        "0000000000000005"
        "0000000000000006"
        "02"
        "0001"
        "00"  # one batch (compact array), tags
        "00"  # no tagged fields: DeliveryCompleteCount -1 is the default
    )
    assert decode_share_record(key, encoded) == ShareStateRecord(SNAPSHOT, KEY, value)


def test_an_update_carries_the_delivery_complete_count_as_tag_0() -> None:
    value = ShareUpdateValue(
        snapshot_epoch=4, leader_epoch=2, start_offset=-1, delivery_complete_count=3, state_batches=[]
    )
    key, encoded = ShareStateRecord(UPDATE, KEY, value).encode()
    assert key.hex() == "0001" + KEY_BODY
    assert encoded is not None
    assert encoded.hex() == "00000000000400000002ffffffffffffffff0101000400000003"
    assert decode_share_record(key, encoded) == ShareStateRecord(UPDATE, KEY, value)


def test_a_deleted_state_is_a_snapshot_tombstone() -> None:
    key, value = ShareStateRecord(SNAPSHOT, KEY, None).encode()
    assert value is None
    assert decode_share_record(key, None) == ShareStateRecord(SNAPSHOT, KEY, None)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (None, b""),
        (b"\x00", b""),
        (bytes.fromhex("0002" + KEY_BODY), None),  # a record type of another coordinator
        (bytes.fromhex("0000" + KEY_BODY), b"\x00"),
        (bytes.fromhex("0000" + KEY_BODY), b"\x00\x01"),  # a value version this broker does not read
    ],
)
def test_records_this_broker_cannot_read_are_refused_not_guessed(
    key: bytes | None, value: bytes | None
) -> None:
    with pytest.raises(UnreadableShareRecord):
        decode_share_record(key, value)
