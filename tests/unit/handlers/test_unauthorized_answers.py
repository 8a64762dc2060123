"""A principal the authorizer refuses gets the same answer whether the resource exists or not: nothing
about a topic it may not see (existence, partition count) can be read from the codes or messages."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.cluster.metadata.acls import LocalAclStore
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.create_partitions import CreatePartitionsRequest, CreatePartitionsTopic
from odradek.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from odradek.security.authorizer import authorizer_from_config
from tests.support.handler_services import HandlerBroker

AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
#: A principal with no ACL at all (the store is empty, allow.everyone.if.no.acl.found is false).
STRANGER = "User:mallory"
#: More partitions than one request may make (10,000 metadata records).
TOO_MANY = 20_000


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[HandlerBroker]:
    broker = HandlerBroker(tmp_path / "data", **{"authorizer.class.name": AUTHORIZER})
    broker.services.authorizer = authorizer_from_config(broker.config, LocalAclStore(tmp_path / "data"))
    try:
        yield broker
    finally:
        broker.close()


def _creatable(name: str, partitions: int) -> CreatableTopic:
    return CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=1, assignments=[], configs=[]
    )


async def test_create_topics_over_the_record_limit_told_an_unauthorized_principal_which_topics_exist(
    secured: HandlerBroker,
) -> None:
    await secured.create_topic("existing", 1)
    answers = []
    for name in ("existing", "missing"):
        request = CreateTopicsRequest(topics=[_creatable(name, TOO_MANY)], timeout_ms=1000)
        response = await secured.call(request, 7, principal=STRANGER)
        [result] = response.topics
        answers.append((result.error_code, result.error_message, result.num_partitions))
    assert answers[0] == answers[1] == (ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.", -1)


async def test_create_partitions_over_the_record_limit_told_an_unauthorized_principal_a_topic_exists(
    secured: HandlerBroker,
) -> None:
    await secured.create_topic("existing", 1)
    answers = []
    for name in ("existing", "missing"):
        request = CreatePartitionsRequest(
            topics=[CreatePartitionsTopic(name=name, count=TOO_MANY, assignments=None)],
            timeout_ms=1000,
            validate_only=False,
        )
        response = await secured.call(request, 3, principal=STRANGER)
        [result] = response.results
        answers.append((result.error_code, result.error_message))
    assert answers[0] == answers[1]
    assert answers[0][0] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
