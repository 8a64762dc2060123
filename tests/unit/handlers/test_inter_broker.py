"""LeaderAndIsr, StopReplica and UpdateMetadata on a ZooKeeper cluster member, the test as controller:
fencing, leader/follower transitions, local logs created and deleted, and a single node not serving them."""

from __future__ import annotations

from odradek.handlers._common.registry import registration_for
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.api_versions import ApiVersionsRequest
from odradek.storage.leader_epoch import EpochEntry
from tests.support.controller_requests import (
    CONTROLLER_EPOCH,
    Partition,
    leader_and_isr,
    stop_replica,
    update_metadata,
)
from tests.support.handler_services import HandlerBroker
from tests.unit.handlers.cluster_member import (
    BROKERS,
    TOPIC,
    TOPIC_ID,
    led_by_1,
    led_here,
    produce_code,
)

INTER_BROKER = {ApiKey.LEADER_AND_ISR, ApiKey.STOP_REPLICA, ApiKey.UPDATE_METADATA}


def _codes(response: object, version: int) -> dict[int, int]:
    """partition -> error code of a LeaderAndIsr response at `version`."""
    if version < 5:
        return {p.partition_index: p.error_code for p in response.partition_errors}  # type: ignore[attr-defined]
    return {
        p.partition_index: p.error_code
        for t in response.topics  # type: ignore[attr-defined]
        for p in t.partition_errors
    }


# ----- modes -------------------------------------------------------------------------------------------


async def test_single_node_neither_advertises_nor_serves_the_controller_apis(
    handler_broker: HandlerBroker,
) -> None:
    response = await handler_broker.call(
        ApiVersionsRequest(client_software_name="odradek-tests", client_software_version="1.0"), 3
    )
    listed = {entry.api_key for entry in response.api_keys}
    assert not listed & INTER_BROKER
    assert ApiKey.METADATA in listed and ApiKey.PRODUCE in listed
    for key, top in ((ApiKey.LEADER_AND_ISR, 7), (ApiKey.STOP_REPLICA, 4), (ApiKey.UPDATE_METADATA, 8)):
        assert registration_for(key, top, handler_broker.services.mode) is None


async def test_cluster_member_advertises_the_controller_apis_at_kafka_3_9_versions(
    cluster_member: HandlerBroker,
) -> None:
    response = await cluster_member.call(
        ApiVersionsRequest(client_software_name="odradek-tests", client_software_version="1.0"), 3
    )
    listed = {entry.api_key: (entry.min_version, entry.max_version) for entry in response.api_keys}
    assert listed[ApiKey.LEADER_AND_ISR] == (0, 7)
    assert listed[ApiKey.STOP_REPLICA] == (0, 4)
    assert listed[ApiKey.UPDATE_METADATA] == (0, 8)
    # the controller's APIs: every member serves them, answering NOT_CONTROLLER unless it is controller
    assert listed[ApiKey.CONTROLLED_SHUTDOWN] == (0, 3)
    assert listed[ApiKey.ELECT_LEADERS] == (0, 2)


async def test_cluster_member_advertises_allocate_producer_ids_as_a_kafka_3_9_zookeeper_broker_does(
    cluster_member: HandlerBroker, handler_broker: HandlerBroker
) -> None:
    # Kafka's 3.x brokers ask the controller for producer-id blocks only once it lists the API
    response = await cluster_member.call(
        ApiVersionsRequest(client_software_name="odradek-tests", client_software_version="1.0"), 3
    )
    listed = {entry.api_key: (entry.min_version, entry.max_version) for entry in response.api_keys}
    assert listed[ApiKey.ALLOCATE_PRODUCER_IDS] == (0, 0)
    single = await handler_broker.call(
        ApiVersionsRequest(client_software_name="odradek-tests", client_software_version="1.0"), 3
    )
    assert ApiKey.ALLOCATE_PRODUCER_IDS not in {entry.api_key for entry in single.api_keys}


# ----- LeaderAndIsr ------------------------------------------------------------------------------------


async def test_becoming_leader_creates_the_log_and_starts_the_epoch_at_the_log_end(
    cluster_member: HandlerBroker,
) -> None:
    response = await cluster_member.call(leader_and_isr([led_here(0, epoch=3)], {TOPIC: TOPIC_ID}), 7)
    assert response.error_code == 0
    assert _codes(response, 7) == {0: ErrorCode.NONE}
    assert response.topics[0].topic_id == TOPIC_ID
    log = cluster_member.log(TOPIC, 0)
    assert log.leader_epoch_cache.entries == [EpochEntry(3, 0)]
    assert await produce_code(cluster_member, 0) == ErrorCode.NONE
    assert cluster_member.services.cluster.partition(TOPIC, 0).leader_epoch == 3  # type: ignore[union-attr]
    assert cluster_member.services.cluster.topic(TOPIC).topic_id == TOPIC_ID  # type: ignore[union-attr]


async def test_a_follower_hosts_the_log_but_refuses_produce(cluster_member: HandlerBroker) -> None:
    response = await cluster_member.call(leader_and_isr([led_by_1(1)]), 7)
    assert _codes(response, 7) == {1: ErrorCode.NONE}
    assert cluster_member.logs.get_log(TOPIC, 1) is not None
    assert await produce_code(cluster_member, 1) == ErrorCode.NOT_LEADER_OR_FOLLOWER


async def test_leadership_moves_away_and_back_with_newer_epochs(cluster_member: HandlerBroker) -> None:
    await cluster_member.call(leader_and_isr([led_here(0, epoch=3)]), 7)
    assert await produce_code(cluster_member, 0) == ErrorCode.NONE
    moved = Partition(TOPIC, 0, leader=1, leader_epoch=4, replicas=[2, 3, 1])
    assert _codes(await cluster_member.call(leader_and_isr([moved]), 7), 7) == {0: ErrorCode.NONE}
    assert await produce_code(cluster_member, 0) == ErrorCode.NOT_LEADER_OR_FOLLOWER
    back = await cluster_member.call(leader_and_isr([led_here(0, epoch=5)]), 7)
    assert _codes(back, 7) == {0: ErrorCode.NONE}
    assert await produce_code(cluster_member, 0) == ErrorCode.NONE
    log = cluster_member.log(TOPIC, 0)
    # epoch 3 began at 0; this broker led nothing in 4; epoch 5 began at the log end (1), then 1 more.
    assert log.leader_epoch_cache.entries == [EpochEntry(3, 0), EpochEntry(5, 1)]
    assert log.log_end_offset == 2


async def test_a_leader_epoch_not_newer_than_the_known_one_is_stale(cluster_member: HandlerBroker) -> None:
    await cluster_member.call(leader_and_isr([led_here(0, epoch=3)]), 7)
    same = Partition(TOPIC, 0, leader=1, leader_epoch=3, replicas=[2, 3, 1])
    older = Partition(TOPIC, 0, leader=1, leader_epoch=2, replicas=[2, 3, 1])
    for state in (same, older):
        response = await cluster_member.call(leader_and_isr([state]), 7)
        assert response.error_code == 0
        assert _codes(response, 7) == {0: ErrorCode.STALE_CONTROLLER_EPOCH}
    assert await produce_code(cluster_member, 0) == ErrorCode.NONE  # still the leader


async def test_an_older_controller_epoch_is_refused_whole(cluster_member: HandlerBroker) -> None:
    await cluster_member.call(
        leader_and_isr([led_here(0, epoch=3)], controller_epoch=CONTROLLER_EPOCH + 1), 7
    )
    stale = leader_and_isr([led_by_1(0, epoch=9), led_by_1(1, epoch=9)], controller_epoch=CONTROLLER_EPOCH)
    for version in (1, 4, 7):
        response = await cluster_member.call(stale, version)
        assert response.error_code == ErrorCode.STALE_CONTROLLER_EPOCH
        assert _codes(response, version) == {
            0: ErrorCode.STALE_CONTROLLER_EPOCH,
            1: ErrorCode.STALE_CONTROLLER_EPOCH,
        }
    assert await produce_code(cluster_member, 0) == ErrorCode.NONE
    assert cluster_member.logs.get_log(TOPIC, 1) is None
    stop = await cluster_member.call(stop_replica([(TOPIC, 0)], delete=True), 4)
    assert stop.error_code == ErrorCode.STALE_CONTROLLER_EPOCH
    assert cluster_member.logs.get_log(TOPIC, 0) is not None
    metadata = await cluster_member.call(update_metadata(BROKERS, [led_by_1(0, epoch=9)]), 8)
    assert metadata.error_code == ErrorCode.STALE_CONTROLLER_EPOCH
    assert cluster_member.services.cluster.live_brokers == {}


async def test_a_broker_epoch_older_than_the_registration_is_refused(cluster_member: HandlerBroker) -> None:
    assert cluster_member.replicas is not None
    cluster_member.replicas.broker_epoch = 200  # what the ZooKeeper wiring sets after registering
    response = await cluster_member.call(leader_and_isr([led_here(0)], broker_epoch=199), 7)
    assert response.error_code == ErrorCode.STALE_BROKER_EPOCH
    assert cluster_member.logs.get_log(TOPIC, 0) is None
    stop = await cluster_member.call(stop_replica([(TOPIC, 0)], delete=False, broker_epoch=199), 3)
    assert stop.error_code == ErrorCode.STALE_BROKER_EPOCH
    metadata = await cluster_member.call(update_metadata(BROKERS, [], broker_epoch=199), 7)
    assert metadata.error_code == ErrorCode.STALE_BROKER_EPOCH
    # v0-1 carry no broker epoch (-1: never stale); a newer one than the registration is accepted, as
    # Kafka does (the controller may learn of a re-registration first).
    assert (await cluster_member.call(leader_and_isr([led_here(0)]), 1)).error_code == 0
    newer = leader_and_isr([led_here(0, epoch=4)], broker_epoch=201)
    assert _codes(await cluster_member.call(newer, 7), 7) == {0: ErrorCode.NONE}


async def test_a_partition_whose_replicas_leave_this_broker_out_is_unknown(
    cluster_member: HandlerBroker,
) -> None:
    elsewhere = Partition(TOPIC, 0, leader=1, leader_epoch=1, replicas=[1, 3])
    response = await cluster_member.call(leader_and_isr([elsewhere]), 7)
    assert _codes(response, 7) == {0: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert cluster_member.logs.get_log(TOPIC, 0) is None


async def test_a_topic_id_contradicting_the_hosted_one_is_inconsistent(cluster_member: HandlerBroker) -> None:
    import uuid

    await cluster_member.call(leader_and_isr([led_here(0, epoch=1)], {TOPIC: TOPIC_ID}), 7)
    other = leader_and_isr([led_here(0, epoch=2)], {TOPIC: uuid.uuid4()})
    assert _codes(await cluster_member.call(other, 7), 7) == {0: ErrorCode.INCONSISTENT_TOPIC_ID}
    # Before v5 no topic id travels: nothing to contradict.
    assert _codes(await cluster_member.call(other, 4), 4) == {0: ErrorCode.NONE}


async def test_old_versions_list_partitions_ungrouped(cluster_member: HandlerBroker) -> None:
    response = await cluster_member.call(leader_and_isr([led_here(0, epoch=1), led_by_1(1)]), 0)
    assert response.error_code == 0
    assert {(p.topic_name, p.partition_index, p.error_code) for p in response.partition_errors} == {
        (TOPIC, 0, 0),
        (TOPIC, 1, 0),
    }
    assert await produce_code(cluster_member, 0) == ErrorCode.NONE
    assert await produce_code(cluster_member, 1) == ErrorCode.NOT_LEADER_OR_FOLLOWER


async def test_a_log_already_on_disk_is_reused_with_its_data(cluster_member: HandlerBroker) -> None:
    await cluster_member.call(leader_and_isr([led_here(0, epoch=1)]), 7)
    assert await produce_code(cluster_member, 0) == ErrorCode.NONE
    log = cluster_member.log(TOPIC, 0)
    await cluster_member.call(leader_and_isr([led_by_1(0, epoch=2)]), 7)
    await cluster_member.call(leader_and_isr([led_here(0, epoch=3)]), 7)
    assert cluster_member.log(TOPIC, 0) is log
    assert log.log_end_offset == 1


# ----- StopReplica -------------------------------------------------------------------------------------


async def test_stop_replica_without_delete_stops_serving_and_keeps_the_log(
    cluster_member: HandlerBroker,
) -> None:
    await cluster_member.call(leader_and_isr([led_here(0, epoch=3)]), 7)
    response = await cluster_member.call(stop_replica([(TOPIC, 0)], delete=False, leader_epoch=3), 3)
    assert response.error_code == 0
    assert [(p.topic_name, p.partition_index, p.error_code) for p in response.partition_errors] == [
        (TOPIC, 0, 0)
    ]
    assert await produce_code(cluster_member, 0) == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert cluster_member.logs.get_log(TOPIC, 0) is not None
    # The replica is still hosted at epoch 3: only a newer leadership brings it back.
    assert _codes(await cluster_member.call(leader_and_isr([led_here(0, epoch=3)]), 7), 7) == {
        0: ErrorCode.STALE_CONTROLLER_EPOCH
    }
    assert _codes(await cluster_member.call(leader_and_isr([led_here(0, epoch=4)]), 7), 7) == {
        0: ErrorCode.NONE
    }
    assert await produce_code(cluster_member, 0) == ErrorCode.NONE


async def test_stop_replica_with_delete_removes_the_log_crash_safely(cluster_member: HandlerBroker) -> None:
    await cluster_member.call(leader_and_isr([led_here(0, epoch=3), led_by_1(1)]), 7)
    directory = cluster_member.log(TOPIC, 0).dir
    response = await cluster_member.call(stop_replica([(TOPIC, 0)], delete=True, leader_epoch=-2), 4)
    assert [(p.partition_index, p.error_code) for p in response.partition_errors] == [(0, 0)]
    assert cluster_member.logs.get_log(TOPIC, 0) is None
    assert not directory.exists()
    renamed = [p.name for p in directory.parent.iterdir() if p.name.startswith(f"{TOPIC}-0.")]
    assert len(renamed) == 1 and renamed[0].endswith("-delete")
    assert cluster_member.logs.get_log(TOPIC, 1) is not None  # the other replica is untouched
    assert await produce_code(cluster_member, 0) == ErrorCode.NOT_LEADER_OR_FOLLOWER


async def test_stop_replica_v0_deletes_with_the_request_wide_flag(cluster_member: HandlerBroker) -> None:
    await cluster_member.call(leader_and_isr([led_by_1(1)]), 7)
    response = await cluster_member.call(stop_replica([(TOPIC, 1)], delete=True), 0)
    assert response.error_code == 0
    assert cluster_member.logs.get_log(TOPIC, 1) is None


async def test_stop_replica_with_an_older_leader_epoch_is_fenced(cluster_member: HandlerBroker) -> None:
    await cluster_member.call(leader_and_isr([led_here(0, epoch=3)]), 7)
    response = await cluster_member.call(stop_replica([(TOPIC, 0)], delete=True, leader_epoch=2), 3)
    assert response.error_code == 0
    assert [(p.partition_index, p.error_code) for p in response.partition_errors] == [
        (0, ErrorCode.FENCED_LEADER_EPOCH)
    ]
    assert cluster_member.logs.get_log(TOPIC, 0) is not None
    assert await produce_code(cluster_member, 0) == ErrorCode.NONE


async def test_stop_replica_deletes_a_log_left_from_before_a_restart(cluster_member: HandlerBroker) -> None:
    """A topic deleted while this broker was down: its log is on disk but no LeaderAndIsr hosts it."""
    cluster_member.logs.get_or_create_log(TOPIC, 2)
    response = await cluster_member.call(stop_replica([(TOPIC, 2)], delete=True, leader_epoch=-2), 4)
    assert [(p.partition_index, p.error_code) for p in response.partition_errors] == [(2, 0)]
    assert cluster_member.logs.get_log(TOPIC, 2) is None
