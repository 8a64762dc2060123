"""OffsetFetch v7+ `require_stable` (KIP-447): a partition whose group has a transactional offset commit
still pending (its transaction not ended) answers UNSTABLE_OFFSET_COMMIT, so a read_committed consumer
starting up waits for the transaction's outcome instead of reading an offset about to change."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
)
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import RawClient
from tests.support.requirements import require_module

pytestmark = pytest.mark.timeout(120)
E = ErrorCode
SETTINGS = {"offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "2"}


def _fetch(client: RawClient, require_stable: bool, version: int = 7) -> tuple[int, int]:
    """(error code, committed offset) of group `g`'s input-0 (v8+: the request's groups form)."""
    if version >= 8:
        topics = [OffsetFetchRequestTopics(name="input", partition_indexes=[0, 1])]
        request = OffsetFetchRequest(
            groups=[OffsetFetchRequestGroup(group_id="g", topics=topics)], require_stable=require_stable
        )
        (partition, other) = client.request(request, version).groups[0].topics[0].partitions
    else:
        request = OffsetFetchRequest(
            group_id="g",
            topics=[OffsetFetchRequestTopic(name="input", partition_indexes=[0, 1])],
            require_stable=require_stable,
        )
        (partition, other) = client.request(request, version).topics[0].partitions
    assert (other.error_code, other.committed_offset) == (E.NONE, 3)  # no pending commit there
    return int(partition.error_code), int(partition.committed_offset)


def test_pending_transactional_offsets_are_unstable_until_the_transaction_commits(tmp_path: Path) -> None:
    confluent = require_module("confluent_kafka")
    from confluent_kafka.admin import AdminClient, NewTopic

    broker = BrokerProcess(tmp_path / "data", SETTINGS).start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        for future in admin.create_topics([NewTopic("input", 2, 1)]).values():
            future.result(20)
        consumer = confluent.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g"})
        consumer.commit(
            offsets=[confluent.TopicPartition("input", 0, 1), confluent.TopicPartition("input", 1, 3)],
            asynchronous=False,
        )
        metadata = consumer.consumer_group_metadata()
        consumer.close()
        producer = confluent.Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "stable"})
        producer.init_transactions(30)
        producer.begin_transaction()
        producer.send_offsets_to_transaction([confluent.TopicPartition("input", 0, 7)], metadata, 30)
        with RawClient(broker.port) as client:
            assert _fetch(client, require_stable=True) == (E.UNSTABLE_OFFSET_COMMIT, -1)
            assert _fetch(client, require_stable=False) == (E.NONE, 1)  # the last committed one
            assert _fetch(client, require_stable=True, version=8)[0] == E.UNSTABLE_OFFSET_COMMIT

        # A read_committed consumer asks with require_stable and retries until the commit lands.
        reader = confluent.Consumer(
            {"bootstrap.servers": broker.bootstrap, "group.id": "g", "isolation.level": "read_committed"}
        )
        seen: list[int] = []
        asked = time.monotonic()
        thread = threading.Thread(
            target=lambda: seen.extend(
                tp.offset for tp in reader.committed([confluent.TopicPartition("input", 0)], 60)
            )
        )
        thread.start()
        time.sleep(2)
        assert not seen  # still waiting on the open transaction
        producer.commit_transaction(30)
        thread.join(60)
        reader.close()
        assert seen == [7]
        assert time.monotonic() - asked >= 2
        with RawClient(broker.port) as client:
            assert _fetch(client, require_stable=True) == (E.NONE, 7)
    finally:
        broker.stop()
