"""A ZooKeeper cluster member for handler tests: broker 2 of a three-broker picture, the test playing the
controller (broker 1). Brokers 1 and 2 listen on PLAINTEXT and INTERNAL; broker 3 on INTERNAL only."""

from __future__ import annotations

import uuid

from odradek.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic, ReplicaState
from odradek.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from odradek.protocol.records import RecordBatchBuilder
from tests.support.controller_requests import Broker, Partition
from tests.support.handler_services import HandlerBroker

NODE_ID = 2
TOPIC = "orders"
TOPIC_ID = uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8")
BROKERS = [
    Broker(1, {"PLAINTEXT": ("b1.example", 9092), "INTERNAL": ("b1.internal", 19092)}, rack="r1"),
    Broker(2, {"PLAINTEXT": ("b2.example", 9092), "INTERNAL": ("b2.internal", 19092)}, rack="r2"),
    Broker(3, {"INTERNAL": ("b3.internal", 19092)}, rack="r3"),
]


def led_here(index: int = 0, epoch: int = 3) -> Partition:
    return Partition(TOPIC, index, leader=NODE_ID, leader_epoch=epoch, replicas=[2, 3, 1])


def led_by_1(index: int = 1, epoch: int = 7) -> Partition:
    return Partition(TOPIC, index, leader=1, leader_epoch=epoch, replicas=[1, 2, 3])


def produce_request(index: int, value: bytes = b"v") -> ProduceRequest:
    builder = RecordBatchBuilder(0)
    builder.append(1_700_000_000_000, None, value)
    return ProduceRequest(
        acks=1,
        timeout_ms=1000,
        topic_data=[
            TopicProduceData(
                name=TOPIC, partition_data=[PartitionProduceData(index=index, records=builder.build())]
            )
        ],
    )


async def produce_code(broker: HandlerBroker, index: int, version: int = 9) -> int:
    response = await broker.call(produce_request(index), version)
    return int(response.responses[0].partition_responses[0].error_code)


def follower_fetch_request(
    replica: int,
    partitions: list[FetchPartition],
    max_wait_ms: int,
    min_bytes: int = 1,
    broker_epoch: int = 1,
) -> FetchRequest:
    """A Fetch (v15+) of orders' `partitions` by broker `replica` as the broker `broker_epoch`; a
    consumer's when `replica` is -1."""
    return FetchRequest(
        replica_state=ReplicaState(replica_id=replica, replica_epoch=broker_epoch if replica >= 0 else -1),
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=1 << 20,
        session_id=0,
        session_epoch=-1,
        topics=[FetchTopic(topic_id=TOPIC_ID, partitions=partitions)],
    )
