"""In a ZooKeeper cluster, CreateTopics asked this broker's logs whether a deletion of the name was under
way, which in a cluster they never are (the controller deletes topics): a name whose deletion the
controller was completing (its assignment znode already gone, /admin/delete_topics/<name> not yet) was
created again, and the controller's next step deleted the new topic's /config/topics znode. Kafka 3.9
(AdminZkClient.validateTopicCreate) asks ZooKeeper and answers TOPIC_ALREADY_EXISTS, "marked for
deletion", validate_only or not.
"""

from __future__ import annotations

import asyncio

import pytest

from odradek.cluster.metadata.zk_topics import ZkTopicAdmin
from odradek.cluster.zookeeper import paths
from odradek.cluster.zookeeper.topics import mark_topic_for_deletion
from odradek.protocol.error_codes import ErrorCode, KafkaError
from tests.support.zk_topic_admin import admin
from tests.support.zookeeper import zookeeper_server

__all__ = ["admin", "zookeeper_server"]  # the fixtures
pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("validate_only", [False, True])
def test_create_topics_of_a_name_zookeeper_marks_for_deletion_is_refused_and_writes_nothing(
    admin: ZkTopicAdmin, validate_only: bool
) -> None:
    mark_topic_for_deletion(admin.zk, "leaving")  # its assignment znode already deleted by the controller

    with pytest.raises(KafkaError) as refused:
        asyncio.run(admin.create_topic("leaving", 1, 1, validate_only=validate_only))

    assert refused.value.error_code is ErrorCode.TOPIC_ALREADY_EXISTS
    assert refused.value.error_message == "Topic 'leaving' is marked for deletion."
    assert admin.zk.read(paths.topic("leaving")) is None
    assert admin.zk.read(f"{paths.CONFIG}/{paths.TOPIC_CONFIG}/leaving") is None
