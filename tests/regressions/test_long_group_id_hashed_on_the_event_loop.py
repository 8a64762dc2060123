"""A group id or transactional id is hashed (Java's String.hashCode) on the event loop to find its
coordinator partition, at Python's speed: a FindCoordinator carrying 100 keys of 100,000 characters
froze the broker for 4.4 s (a 100 MB request, 45 s). Such an id can never be a coordinator's anyway:
Kafka's `__consumer_offsets` and `__transaction_state` record keys hold at most 32767 bytes. It is
refused before it is hashed: INVALID_GROUP_ID for a group, INVALID_REQUEST for a transactional id."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.coordinator.partitioning import MAX_KEY_BYTES, java_string_hash
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.find_coordinator import FindCoordinatorRequest
from odradek.protocol.messages.init_producer_id import InitProducerIdRequest
from odradek.protocol.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import RawClient

pytestmark = pytest.mark.timeout(120)
TOO_LONG = "g" * (MAX_KEY_BYTES + 1)
#: As long as a key may be, in bytes: 16383 two-byte characters and one more byte.
LONGEST = "é" * (MAX_KEY_BYTES // 2) + "g"


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawClient]:
    broker = BrokerProcess(
        Path(tmp_path_factory.mktemp("long-ids")) / "data",
        {"offsets.topic.num.partitions": "3", "transaction.state.log.num.partitions": "3"},
    ).start()
    try:
        with RawClient(broker.port, timeout=60) as raw:
            for key_type in (0, 1):
                for _ in range(100):
                    if raw.request(FindCoordinatorRequest(key="x", key_type=key_type), 3).error_code == 0:
                        break
                    time.sleep(0.2)
            yield raw
    finally:
        broker.stop()


def test_a_key_longer_than_a_coordinator_record_can_hold_was_hashed_on_the_event_loop(
    client: RawClient,
) -> None:
    keys = [TOO_LONG, LONGEST, "short"]
    groups = client.request(FindCoordinatorRequest(key_type=0, coordinator_keys=keys), 4).coordinators
    assert [c.error_code for c in groups] == [ErrorCode.INVALID_GROUP_ID, ErrorCode.NONE, ErrorCode.NONE]
    assert "longer than 32767 bytes" in groups[0].error_message
    txns = client.request(FindCoordinatorRequest(key_type=1, coordinator_keys=keys), 4).coordinators
    assert [c.error_code for c in txns] == [ErrorCode.INVALID_REQUEST, ErrorCode.NONE, ErrorCode.NONE]

    join = JoinGroupRequest(
        group_id=TOO_LONG,
        session_timeout_ms=10000,
        rebalance_timeout_ms=10000,
        member_id="",
        protocol_type="consumer",
        protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")],
    )
    assert client.request(join, 9).error_code == ErrorCode.INVALID_GROUP_ID
    init = InitProducerIdRequest(transactional_id=TOO_LONG, transaction_timeout_ms=60000)
    assert client.request(init, 4).error_code == ErrorCode.INVALID_REQUEST


def test_the_hash_is_still_javas_string_hash_code() -> None:
    def reference(text: str) -> int:
        h = 0
        data = text.encode("utf-16-be")
        for i in range(0, len(data), 2):
            h = (31 * h + int.from_bytes(data[i : i + 2], "big")) & 0xFFFFFFFF
        return h - (1 << 32) if h >= 1 << 31 else h

    for text in ("", "hello", "polygenelubricants", "über-gruppe", "emoji-\U0001f600-group", LONGEST):
        assert java_string_hash(text) == reference(text), text
