"""LeaderAndIsr, UpdateMetadata and StopReplica as the controller builds them from its context."""

from __future__ import annotations

import logging
import uuid

import pytest

from odradek.cluster.controller import requests
from odradek.cluster.controller.broker_changes import on_broker_change
from odradek.cluster.controller.channel import _log_errors
from odradek.cluster.controller.config import ControllerConfig
from odradek.cluster.controller.context import ControllerContext, LiveBroker, PartitionState, TopicPartition
from odradek.cluster.controller.registrations import BrokerRegistrations
from odradek.cluster.controller.term import ControllerTerm
from odradek.cluster.inter_broker_versions import InterBrokerVersions
from odradek.cluster.zookeeper.broker_znode import BrokerRegistration, ListenerEndpoint
from odradek.cluster.zookeeper.topic_znodes import PartitionStateZnode
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.frames import decode_request, encode_request
from odradek.protocol.messages.leader_and_isr import (
    LeaderAndIsrPartitionErrorResult,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    LeaderAndIsrTopicError,
)

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)
TOPIC_ID = uuid.UUID("0b5f3b43-3c8f-4bd0-9a52-1a4fbd2c6a11")


def context() -> ControllerContext:
    c = ControllerContext(epoch=7, epoch_zk_version=6)
    c.live_brokers[1] = LiveBroker(
        BrokerRegistration(
            1,
            (
                ListenerEndpoint("CLIENT", "10.0.0.1", 9092, "SASL_SSL"),
                ListenerEndpoint("REPL", "10.0.1.1", 9093, "PLAINTEXT"),
            ),
            0,
            rack="r1",
        ),
        epoch=100,
    )
    c.live_brokers[2] = LiveBroker(
        BrokerRegistration(2, (ListenerEndpoint("REPL", "10.0.1.2", 9093, "PLAINTEXT"),), 0), epoch=200
    )
    c.assignments["t"] = {0: [1, 2, 3], 1: [2, 1]}
    c.topic_ids["t"] = TOPIC_ID
    c.states[T0] = PartitionState(PartitionStateZnode(1, 4, [1, 2], 6), partition_epoch=9)
    c.states[T1] = PartitionState(PartitionStateZnode(2, 0, [2, 1], 7), partition_epoch=0)
    return c


def round_trip(item: requests.BrokerRequest) -> object:
    _, body = decode_request(encode_request(item.request, item.version, 1)[4:])
    return body


def test_leader_and_isr_carries_states_epochs_and_the_leaders_inter_broker_endpoints() -> None:
    body = round_trip(requests.leader_and_isr(context(), 1, 2, [T1, T0], "REPL", is_new={T1}))
    assert (body.controller_id, body.controller_epoch, body.broker_epoch) == (1, 7, 200)  # type: ignore[attr-defined]
    (topic,) = body.topic_states  # type: ignore[attr-defined]
    assert (topic.topic_name, topic.topic_id) == ("t", TOPIC_ID)
    p0, p1 = topic.partition_states
    assert (p0.partition_index, p0.leader, p0.leader_epoch, p0.isr, p0.partition_epoch) == (
        0,
        1,
        4,
        [1, 2],
        9,
    )
    assert (p0.replicas, p0.controller_epoch, p0.is_new) == ([1, 2, 3], 6, False)
    assert (p1.partition_index, p1.is_new) == (1, True)
    leaders = {(lead.broker_id, lead.host_name, lead.port) for lead in body.live_leaders}  # type: ignore[attr-defined]
    assert leaders == {(1, "10.0.1.1", 9093), (2, "10.0.1.2", 9093)}


def test_update_metadata_lists_every_endpoint_offline_replicas_and_deleted_topics() -> None:
    body = round_trip(requests.update_metadata(context(), 1, 1, [T0]))
    assert body.broker_epoch == 100  # type: ignore[attr-defined]
    brokers = {b.id: b for b in body.live_brokers}  # type: ignore[attr-defined]
    assert [(e.listener, e.host, e.port, e.security_protocol) for e in brokers[1].endpoints] == [
        ("CLIENT", "10.0.0.1", 9092, 3),
        ("REPL", "10.0.1.1", 9093, 0),
    ]
    assert (brokers[1].rack, brokers[2].rack) == ("r1", None)
    (state,) = body.topic_states[0].partition_states  # type: ignore[attr-defined]
    assert (state.leader, state.zk_version, state.offline_replicas) == (1, 9, [3])
    deleting = round_trip(requests.update_metadata(context(), 1, 1, [T0, T1], {"t": TOPIC_ID}))
    assert {p.leader for p in deleting.topic_states[0].partition_states} == {-2}  # type: ignore[attr-defined]


def test_stop_replica_deleting_carries_epoch_minus_two_and_otherwise_the_leader_epoch() -> None:
    deleting = round_trip(requests.stop_replica(context(), 1, 2, [T0], delete=True))
    (p,) = deleting.topic_states[0].partition_states  # type: ignore[attr-defined]
    assert (p.partition_index, p.leader_epoch, p.delete_partition) == (0, -2, True)
    stopping = round_trip(requests.stop_replica(context(), 1, 2, [T0], delete=False))
    (p,) = stopping.topic_states[0].partition_states  # type: ignore[attr-defined]
    assert (p.leader_epoch, p.delete_partition) == (4, False)


def test_the_inter_broker_endpoint_is_the_listener_named_by_the_config() -> None:
    c = context()
    endpoint = requests.inter_broker_endpoint(c, 1, "REPL")
    assert endpoint is not None and (endpoint.host, endpoint.port) == ("10.0.1.1", 9093)
    assert requests.inter_broker_endpoint(c, 2, "CLIENT") is None
    assert requests.inter_broker_endpoint(c, 9, "REPL") is None


def test_the_controller_logs_leader_and_isr_errors_but_not_the_repeats_a_failover_sends(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # After a failover every leadership is sent again: partitions already at that epoch answer
    # STALE_CONTROLLER_EPOCH, which is expected and not worth a warning per broker.
    item = requests.BrokerRequest(LeaderAndIsrRequest(controller_id=1, controller_epoch=2, broker_epoch=1), 7)
    repeats = LeaderAndIsrResponse(
        topics=[
            LeaderAndIsrTopicError(
                topic_id=uuid.uuid4(),
                partition_errors=[
                    LeaderAndIsrPartitionErrorResult(
                        partition_index=0, error_code=ErrorCode.STALE_CONTROLLER_EPOCH
                    ),
                    LeaderAndIsrPartitionErrorResult(partition_index=1, error_code=ErrorCode.NONE),
                ],
            )
        ]
    )
    with caplog.at_level(logging.WARNING, logger="odradek.cluster.controller.channel"):
        _log_errors(2, item, repeats)
        assert not caplog.records
        repeats.topics[0].partition_errors[1].error_code = ErrorCode.KAFKA_STORAGE_ERROR
        _log_errors(2, item, repeats)
    assert [r.getMessage() for r in caplog.records] == [
        f"Broker 2 answered LeaderAndIsrRequest with errors [{ErrorCode.KAFKA_STORAGE_ERROR!r}]"
    ]


class RecordingChannel:
    """Stands for the ControllerChannelManager: what the term queues, by broker."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, requests.BrokerRequest]] = []

    def send(self, broker_id: int, item: requests.BrokerRequest) -> None:
        self.sent.append((broker_id, item))


@pytest.mark.parametrize(
    ("ibp", "leader_and_isr", "update_metadata", "stop_replica"),
    [
        ("3.0-IV1", 5, 7, 3),
        ("3.1", 5, 7, 3),
        ("3.2-IV0", 6, 7, 3),
        ("3.3", 6, 7, 3),
        ("3.4", 7, 8, 4),
        ("3.9", 7, 8, 4),
    ],
)
def test_the_controller_sends_at_the_inter_broker_protocol_version_s_request_versions(
    ibp: str, leader_and_isr: int, update_metadata: int, stop_replica: int
) -> None:
    channel = RecordingChannel()
    config = ControllerConfig(1, "REPL", inter_broker_versions=InterBrokerVersions.at(ibp))
    registrations = BrokerRegistrations(None, 0, {})  # type: ignore[arg-type]
    term = ControllerTerm(
        None,  # type: ignore[arg-type]
        lambda: config,
        None,  # type: ignore[arg-type]
        context(),
        channel,  # type: ignore[arg-type]
        print,
        print,
        registrations,
        on_broker_change,
    )
    term.send_leader_and_isr([T0])
    term.send_update_metadata([2], [T0])
    term.send(2, requests.stop_replica(term.context, 1, 2, [T0], delete=False))
    versions = {type(item.request).__name__: item.version for _, item in channel.sent}
    assert versions == {
        "LeaderAndIsrRequest": leader_and_isr,
        "UpdateMetadataRequest": update_metadata,
        "StopReplicaRequest": stop_replica,
    }
    for _, item in channel.sent:  # what an older broker reads keeps the partition and its topic id
        body = round_trip(item)
        if isinstance(body, LeaderAndIsrRequest):
            (topic,) = body.topic_states
            assert (topic.topic_id, topic.partition_states[0].leader_epoch) == (TOPIC_ID, 4)
