"""ShareFetch and ShareAcknowledge were served by a broker whose share groups were off ('share' left out
of group.coordinator.rebalance.protocols): records could be acquired for a group that could not exist.
Kafka 4.4 at share.version=0 answers both UNSUPPORTED_VERSION, as it answers ShareGroupHeartbeat."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.share_acknowledge import ShareAcknowledgeRequest, ShareAcknowledgeResponse
from odradek.protocol.messages.share_fetch import ShareFetchRequest, ShareFetchResponse
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import RawClient

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def broker_without_share_groups(tmp_path: Path) -> Iterator[BrokerProcess]:
    settings = {
        "group.coordinator.rebalance.protocols": "classic,consumer",
        "offsets.topic.num.partitions": "1",
    }
    process = BrokerProcess(tmp_path / "data", settings).start()
    try:
        yield process
    finally:
        process.stop()


def test_share_fetch_and_acknowledge_are_unsupported_while_share_groups_are_off(
    broker_without_share_groups: BrokerProcess,
) -> None:
    with RawClient(broker_without_share_groups.port, timeout=10) as client:
        fetched: ShareFetchResponse = client.request(
            ShareFetchRequest(
                group_id="sg",
                member_id="m",
                share_session_epoch=0,
                max_wait_ms=0,
                min_bytes=1,
                max_records=10,
                batch_size=10,
            ),
            1,
        )
        acknowledged: ShareAcknowledgeResponse = client.request(
            ShareAcknowledgeRequest(group_id="sg", member_id="m", share_session_epoch=1), 1
        )
    assert fetched.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert acknowledged.error_code == ErrorCode.UNSUPPORTED_VERSION
