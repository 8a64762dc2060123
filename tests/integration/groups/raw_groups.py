"""Group requests over a plain socket (odradek's codec), for tests that need exact versions and errors."""

from __future__ import annotations

import threading
from typing import Any

from odradek.protocol.messages.consumer_protocol_assignment import (
    ConsumerProtocolAssignment,
)
from odradek.protocol.messages.consumer_protocol_assignment import (
    TopicPartition as AssignedPartitions,
)
from odradek.protocol.messages.consumer_protocol_subscription import ConsumerProtocolSubscription
from odradek.protocol.messages.find_coordinator import FindCoordinatorRequest
from odradek.protocol.messages.heartbeat import HeartbeatRequest
from odradek.protocol.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from odradek.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from odradek.protocol.messages.offset_fetch import OffsetFetchRequest, OffsetFetchRequestGroup
from odradek.protocol.messages.sync_group import SyncGroupRequest, SyncGroupRequestAssignment
from tests.support.raw_client import RawClient

#: Group settings that keep these tests quick.
RAW_GROUP_OVERRIDES = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "100",
    "offsets.topic.num.partitions": "3",
}


def subscription(*topics: str) -> bytes:
    return b"\x00\x00" + ConsumerProtocolSubscription(topics=list(topics), user_data=None).encode(0)


def assignment(topic: str, partitions: list[int]) -> bytes:
    body = ConsumerProtocolAssignment(
        assigned_partitions=[AssignedPartitions(topic=topic, partitions=partitions)]
    )
    return b"\x00\x00" + body.encode(0)


def join_request(
    group: str,
    member_id: str = "",
    *,
    session_ms: int = 10_000,
    instance: str | None = None,
    topics: tuple[str, ...] = ("t",),
    protocol: str = "range",
) -> JoinGroupRequest:
    return JoinGroupRequest(
        group_id=group,
        session_timeout_ms=session_ms,
        rebalance_timeout_ms=session_ms,
        member_id=member_id,
        group_instance_id=instance,
        protocol_type="consumer",
        protocols=[JoinGroupRequestProtocol(name=protocol, metadata=subscription(*topics))],
    )


def join(port: int, group: str, member_id: str = "", version: int = 5, **options: Any) -> Any:
    """One JoinGroup on a fresh connection (it may wait for the group's join phase)."""
    with RawClient(port, timeout=30) as client:
        return client.request(join_request(group, member_id, **options), version)


def join_new_member(port: int, group: str, version: int = 5, **options: Any) -> Any:
    """JoinGroup twice when the broker asks for a member id (v4+), as clients do."""
    first = join(port, group, "", version, **options)
    if first.error_code == 79:  # MEMBER_ID_REQUIRED
        return join(port, group, first.member_id, version, **options)
    return first


def join_in_background(
    port: int, group: str, member_id: str = "", version: int = 5, **options: Any
) -> dict[str, Any]:
    """Start a JoinGroup in a thread; the answer lands in the returned dict under "response"."""
    box: dict[str, Any] = {}

    def run() -> None:
        box["response"] = join(port, group, member_id, version, **options)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    box["thread"] = thread
    return box


def sync(
    port: int,
    group: str,
    generation: int,
    member_id: str,
    assignments: dict[str, bytes] | None = None,
    version: int = 5,
    instance: str | None = None,
) -> Any:
    request = SyncGroupRequest(
        group_id=group,
        generation_id=generation,
        member_id=member_id,
        group_instance_id=instance,
        protocol_type="consumer",
        protocol_name="range",
        assignments=[
            SyncGroupRequestAssignment(member_id=m, assignment=a) for m, a in (assignments or {}).items()
        ],
    )
    with RawClient(port, timeout=30) as client:
        return client.request(request, version)


def heartbeat(
    port: int, group: str, generation: int, member_id: str, instance: str | None = None, version: int = 4
) -> int:
    request = HeartbeatRequest(
        group_id=group, generation_id=generation, member_id=member_id, group_instance_id=instance
    )
    with RawClient(port) as client:
        return int(client.request(request, version).error_code)


def commit(
    port: int,
    group: str,
    topic: str,
    offsets: dict[int, int],
    *,
    generation: int = -1,
    member_id: str = "",
    metadata: str | None = "",
    leader_epoch: int = -1,
    version: int = 8,
) -> Any:
    request = OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=generation,
        member_id=member_id,
        topics=[
            OffsetCommitRequestTopic(
                name=topic,
                partitions=[
                    OffsetCommitRequestPartition(
                        partition_index=p,
                        committed_offset=o,
                        committed_leader_epoch=leader_epoch,
                        committed_metadata=metadata,
                    )
                    for p, o in offsets.items()
                ],
            )
        ],
    )
    with RawClient(port) as client:
        return client.request(request, version)


def fetch_all(port: int, group: str, version: int = 8) -> dict[tuple[str, int], tuple[int, int, str | None]]:
    """Every committed offset of `group`: {(topic, partition): (offset, leader epoch, metadata)}."""
    request = OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id=group, topics=None)])
    with RawClient(port) as client:
        response = client.request(request, version)
    [answer] = response.groups
    assert answer.error_code == 0, answer.error_code
    return {
        (t.name, p.partition_index): (p.committed_offset, p.committed_leader_epoch, p.metadata)
        for t in answer.topics
        for p in t.partitions
    }


def find_coordinator(port: int, keys: list[str], key_type: int = 0, version: int = 4) -> Any:
    with RawClient(port) as client:
        return client.request(
            FindCoordinatorRequest(key_type=key_type, coordinator_keys=keys, key=keys[0]), version
        )
