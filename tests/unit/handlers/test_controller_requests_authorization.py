"""With an authorizer, the controller's client-facing requests need Kafka's cluster permissions:
ControlledShutdown, AlterPartition and AllocateProducerIds CLUSTER_ACTION, ElectLeaders ALTER (answered
by a cluster member)."""

from __future__ import annotations

from pathlib import Path

import pytest

from odradek.cluster.metadata.acls import LocalAclStore
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.allocate_producer_ids import AllocateProducerIdsRequest
from odradek.protocol.messages.alter_partition import AlterPartitionRequest, PartitionData, TopicData
from odradek.protocol.messages.controlled_shutdown import ControlledShutdownRequest
from odradek.protocol.messages.elect_leaders import ElectLeadersRequest, TopicPartitions
from odradek.security.authorizer import authorizer_from_config
from tests.support.handler_services import HandlerBroker

AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"


def _member(log_dir: Path, **overrides: str) -> HandlerBroker:
    broker = HandlerBroker(log_dir, zookeeper_mode=True, **{"authorizer.class.name": AUTHORIZER}, **overrides)
    broker.services.authorizer = authorizer_from_config(broker.config, LocalAclStore(log_dir))
    return broker


def _elect() -> ElectLeadersRequest:
    return ElectLeadersRequest(
        election_type=0,
        topic_partitions=[TopicPartitions(topic="orders", partitions=[0, 1])],
        timeout_ms=1000,
    )


@pytest.mark.parametrize("super_user", [False, True])
async def test_controller_requests_need_their_cluster_permission(tmp_path: Path, super_user: bool) -> None:
    overrides = {"super.users": "User:ANONYMOUS"} if super_user else {}
    broker = _member(tmp_path, **overrides)
    try:
        # Allowed, the request reaches the controller question: this broker is not the controller.
        expected = ErrorCode.NOT_CONTROLLER if super_user else ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        shutdown = await broker.call(ControlledShutdownRequest(broker_id=2, broker_epoch=5), 3)
        assert shutdown.error_code == expected
        elect = await broker.call(_elect(), 2)
        assert elect.error_code == expected
        assert {p.error_code for r in elect.replica_election_results for p in r.partition_result} == {
            expected
        }
        partition = PartitionData(partition_index=0, leader_epoch=0, new_isr=[2], partition_epoch=0)
        alter = AlterPartitionRequest(
            broker_id=2, broker_epoch=5, topics=[TopicData(topic_name="orders", partitions=[partition])]
        )
        altered = await broker.call(alter, 1)
        assert (altered.error_code, altered.topics) == (expected, [])
        allocated = await broker.call(AllocateProducerIdsRequest(broker_id=2, broker_epoch=5), 0)
        answered = (allocated.error_code, allocated.producer_id_start, allocated.producer_id_len)
        assert answered == (expected, 0, 0)
    finally:
        broker.close()
