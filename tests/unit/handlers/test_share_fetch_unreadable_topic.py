"""A ShareFetch of a topic the principal may not READ tells nothing of the topic's partitions.

Partitions past a topic's last were answered UNKNOWN_TOPIC_OR_PARTITION before READ on the topic was
checked, and those it has TOPIC_AUTHORIZATION_FAILED: a principal refused the topic learnt its
partition count. Kafka checks READ first (KafkaApis.handleFetchFromShareFetchRequest).
"""

from __future__ import annotations

from pathlib import Path

from odradek.cluster.metadata.acls import LocalAclStore
from odradek.partition.share.manager import SharePartitionManager
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages import share_fetch as sf
from odradek.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from odradek.security.authorizer import authorizer_from_config
from tests.support.handler_services import HandlerBroker
from tests.support.share_persister import InMemorySharePersister

AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
#: May read the share group, and no topic.
MEMBER = "User:mallory"


async def test_partitions_of_a_topic_not_readable_are_all_refused_alike_whether_they_exist_or_not(
    tmp_path: Path,
) -> None:
    broker = HandlerBroker(tmp_path / "data", **{"authorizer.class.name": AUTHORIZER})
    authorizer = authorizer_from_config(broker.config, LocalAclStore(tmp_path / "data"))
    broker.services.authorizer = authorizer
    manager = SharePartitionManager.for_broker(broker.config, InMemorySharePersister())
    broker.services.share_partitions = manager
    try:
        topic = await broker.create_topic("hidden", 2)
        await authorizer.create_acls(
            [
                AclBinding(
                    ResourcePattern(ResourceType.GROUP, "sg", PatternType.LITERAL),
                    AccessControlEntry(MEMBER, "*", AclOperation.READ, AclPermissionType.ALLOW),
                )
            ]
        )
        request = sf.ShareFetchRequest(
            group_id="sg",
            member_id="m",
            share_session_epoch=0,
            max_wait_ms=0,
            min_bytes=1,
            max_records=500,
            batch_size=500,
            topics=[
                sf.FetchTopic(
                    topic_id=topic.topic_id,
                    partitions=[sf.FetchPartition(partition_index=p) for p in (0, 1, 2, 7)],
                )
            ],
        )

        answer = await broker.call_over_wire(request, 1, principal=MEMBER)

        assert answer.error_code == ErrorCode.NONE
        codes = {p.partition_index: p.error_code for t in answer.responses for p in t.partitions}
        assert codes == dict.fromkeys((0, 1, 2, 7), ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    finally:
        manager.close()
        broker.close()
