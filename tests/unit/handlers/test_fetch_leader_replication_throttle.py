"""The leader's replication quota on followers' fetches (Kafka's ReplicaManager.shouldLeaderThrottle and
KafkaApis' sizeOfThrottledPartitions): once the bytes sent of the partitions a topic's
leader.replication.throttled.replicas names for this broker are over leader.replication.throttled.rate,
a follower not in the ISR gets those partitions without records (their offsets still go along), while
its other partitions, and in-sync followers, are served; every throttled partition's bytes sent are
recorded, in sync or not."""

from __future__ import annotations

from odradek.cluster.replication.replication_quota import ReplicationQuota, ReplicationQuotas
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.fetch import FetchPartition, FetchResponse, PartitionData
from odradek.storage.config import LogConfig
from tests.support.controller_requests import Partition, leader_and_isr, update_metadata
from tests.support.handler_services import HandlerBroker
from tests.unit.handlers.cluster_member import (
    BROKERS,
    TOPIC,
    TOPIC_ID,
    follower_fetch_request,
    produce_request,
)

FETCH_VERSION = 17
#: Broker 2 leads both partitions; broker 3 is out of the ISR (catching up), broker 1 in it.
LED = [Partition(TOPIC, index, leader=2, leader_epoch=3, replicas=[2, 3, 1], isr=[2, 1]) for index in (0, 1)]


async def _leading(broker: HandlerBroker, bound: int, throttled: str) -> ReplicationQuota:
    """Broker 2 leading orders-0 and -1 (a record each); `throttled` as the topic's
    leader.replication.throttled.replicas; the leader's quota at `bound` B/s, returned."""
    await broker.call(update_metadata(BROKERS, LED, {TOPIC: TOPIC_ID}), 8)
    await broker.call(leader_and_isr(LED, {TOPIC: TOPIC_ID}), 7)
    for index in (0, 1):
        response = await broker.call(produce_request(index, b"x" * 1000), 9)
        assert response.responses[0].partition_responses[0].error_code == ErrorCode.NONE
    broker.services.logs.apply_topic_config(
        TOPIC, LogConfig.from_mapping({"leader.replication.throttled.replicas": throttled})
    )
    unbounded = ReplicationQuotas.unbounded()
    leader = ReplicationQuota("leader", 2, 11, 1, lambda: bound)
    broker.services.replication_quotas = ReplicationQuotas(leader, unbounded.follower)
    return leader


async def _fetch(broker: HandlerBroker, replica: int) -> dict[int, PartitionData]:
    partitions = [
        FetchPartition(partition=index, current_leader_epoch=3, fetch_offset=0, partition_max_bytes=1 << 20)
        for index in (0, 1)
    ]
    request = follower_fetch_request(replica, partitions, max_wait_ms=0, min_bytes=0)
    response: FetchResponse = await broker.call(request, FETCH_VERSION)
    return {data.partition_index: data for data in response.responses[0].partitions}


async def test_a_catching_up_follower_gets_no_records_of_a_throttled_partition_over_the_leader_quota(
    replicated_member: HandlerBroker,
) -> None:
    quota = await _leading(replicated_member, bound=1000, throttled="0:2,0:3,0:1")
    quota.record(50_000)  # over 1000 B/s
    answer = await _fetch(replicated_member, replica=3)
    assert answer[0].error_code == ErrorCode.NONE and not answer[0].records
    assert answer[0].high_watermark >= 0 and answer[0].log_start_offset == 0  # offsets still go along
    assert answer[1].records  # not listed: not throttled
    assert quota.throttled_total == 1
    assert quota.bytes_total == 50_000  # only throttled partitions count: orders-1 is not


async def test_an_in_sync_follower_is_never_held_back_but_its_bytes_are_counted(
    replicated_member: HandlerBroker,
) -> None:
    quota = await _leading(replicated_member, bound=1000, throttled="*")
    quota.record(50_000)
    answer = await _fetch(replicated_member, replica=1)  # in the ISR
    assert answer[0].records and answer[1].records
    assert quota.bytes_total == 50_000 + len(answer[0].records) + len(answer[1].records)


async def test_under_the_leader_quota_a_throttled_partition_is_served_and_recorded(
    replicated_member: HandlerBroker,
) -> None:
    quota = await _leading(replicated_member, bound=10**9, throttled="0:2")
    answer = await _fetch(replicated_member, replica=3)
    assert answer[0].records and answer[1].records
    assert quota.bytes_total == len(answer[0].records)  # orders-0 only
    assert quota.throttled_total == 0


async def test_a_throttle_listed_for_another_broker_does_not_hold_this_leader_back(
    replicated_member: HandlerBroker,
) -> None:
    quota = await _leading(replicated_member, bound=1000, throttled="0:1,1:3")
    quota.record(50_000)
    answer = await _fetch(replicated_member, replica=3)
    assert answer[0].records and answer[1].records
