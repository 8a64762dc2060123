"""What a malformed znode holds stays out of log lines, start-up errors and clients' answers: SCRAM
keys and broker configs (Kafka's sensitive paths) never appear, and elsewhere at most a short excerpt
(a znode may hold about 1 MB). Issue #25, review of item 15."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from types import SimpleNamespace

import pytest

from odradek.cluster.metadata.client_quotas import ZkQuotaStore
from odradek.cluster.metadata.scram_credentials import ZkScramCredentialStore
from odradek.cluster.zookeeper.acl_znodes import decode_acls
from odradek.cluster.zookeeper.broker_znode import BrokerRegistration
from odradek.cluster.zookeeper.config_znodes import ConfigChangeNotification, EntityConfigZnode
from odradek.cluster.zookeeper.topic_znodes import TopicAssignmentZnode
from odradek.cluster.zookeeper.znode_json import MalformedZnodeError, decode_object
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.alter_user_scram_credentials import (
    AlterUserScramCredentialsRequest,
    ScramCredentialDeletion,
)
from odradek.protocol.messages.describe_user_scram_credentials import (
    DescribeUserScramCredentialsRequest,
    UserName,
)
from odradek.security.quota_entities import QuotaEntity
from tests.support.handler_services import HandlerBroker

SECRET = "U0VDUkVUU1RPUkVES0VZ"
CREDENTIAL = f"salt=c2FsdA==,stored_key={SECRET},server_key=U0VSVkVSS0VZ,iterations=4096"
#: Longer than any message may quote.
HUGE = "x" * 1_000_000
#: No error message needs more than this, whatever the znode holds.
MESSAGE_BOUND = 600

SCRAM_ZNODES = [
    # cut short: not JSON
    ('{"version":1,"config":{"SCRAM-SHA-256":"' + CREDENTIAL + '"').encode(),
    # JSON, not an object
    f'["{CREDENTIAL}"]'.encode(),
    # the credential where a string belongs, in a list
    ('{"version":1,"config":{"SCRAM-SHA-256":["' + CREDENTIAL + '"]}}').encode(),
    # the credential as a key (a hand-edited znode)
    ('{"version":1,"config":{"' + CREDENTIAL + '":7}}').encode(),
]
SCRAM_ZNODE_KINDS = ["cut-short", "not-an-object", "value-not-a-string", "credential-as-key"]


class OneUserZooKeeper:
    """/config/users holding one user, alice, whose znode is `data`."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def children(self, path: str) -> list[str]:
        return ["alice"]

    def read(self, path: str) -> tuple[bytes, object]:
        return self.data, SimpleNamespace(version=3)


@pytest.mark.parametrize("data", SCRAM_ZNODES, ids=SCRAM_ZNODE_KINDS)
def test_a_malformed_scram_znode_reaches_neither_the_log_nor_describe_nor_alter(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, data: bytes
) -> None:
    """Before: the znode's text, salted keys included, went into the log and into
    DescribeUserScramCredentials' and AlterUserScramCredentials' error_message."""
    broker = HandlerBroker(tmp_path)
    broker.services.scram_credentials = ZkScramCredentialStore(OneUserZooKeeper(data))  # type: ignore[arg-type]
    deletion = ScramCredentialDeletion(name="alice", mechanism=1)

    async def ask() -> tuple[object, ...]:
        return (
            await broker.call(DescribeUserScramCredentialsRequest(users=None), 0),
            await broker.call(DescribeUserScramCredentialsRequest(users=[UserName(name="alice")]), 0),
            await broker.call(AlterUserScramCredentialsRequest(deletions=[deletion], upsertions=[]), 0),
        )

    try:
        with caplog.at_level(logging.DEBUG):
            every, alice, deleted = asyncio.run(ask())
    finally:
        broker.close()
    answers = repr((every, alice, deleted))
    assert SECRET not in answers
    assert SECRET not in caplog.text
    for answer in (every, alice):
        assert answer.error_code in (ErrorCode.NONE, ErrorCode.UNKNOWN_SERVER_ERROR), answer
        if answer.error_code == ErrorCode.UNKNOWN_SERVER_ERROR:
            # as Kafka (ApiError.fromThrowable): the code's own message, never the internal reason
            assert answer.error_message == ErrorCode.UNKNOWN_SERVER_ERROR.message


@pytest.mark.parametrize("path", ["/config/users/alice", "/config/brokers/1", "/config/brokers/<default>"])
@pytest.mark.parametrize(
    "data", [*SCRAM_ZNODES, b"\xff" + CREDENTIAL.encode()], ids=[*SCRAM_ZNODE_KINDS, "not-utf-8"]
)
def test_errors_of_a_sensitive_znode_quote_none_of_its_data(path: str, data: bytes) -> None:
    """Before: up to 200 bytes of the znode, or the whole value in the wrong place, in the message
    (logged, and printed at start-up for /config/brokers)."""
    try:
        EntityConfigZnode.parse(data, path)
    except MalformedZnodeError as error:
        assert SECRET not in str(error)
        assert str(error).startswith(path)
    with pytest.raises(MalformedZnodeError) as caught:
        decode_object(b"[" + data, path)  # never JSON
    assert SECRET not in str(caught.value)


@pytest.mark.parametrize(
    ("parse", "data"),
    [
        (lambda d: decode_object(d, "/brokers/topics/t"), b"{" + HUGE.encode()),
        (lambda d: TopicAssignmentZnode.parse("t", d), b'{"partitions":{"' + HUGE.encode() + b'":[1]}}'),
        (
            lambda d: TopicAssignmentZnode.parse("t", d),
            b'{"partitions":{},"topic_id":"' + HUGE.encode() + b'"}',
        ),
        (lambda d: BrokerRegistration.parse(1, d), b'{"version":5,"endpoints":["' + HUGE.encode() + b'"]}'),
        (
            lambda d: BrokerRegistration.parse(1, d),
            b'{"version":5,"endpoints":{"a":"' + HUGE.encode() + b'"}}',
        ),
        (
            lambda d: ConfigChangeNotification.parse(d, "/c"),
            b'{"version":2,"entity_path":"' + HUGE.encode() + b'"}',
        ),
        (lambda d: decode_acls(d, "/kafka-acl/Topic/t"), b'{"version":1,"acls":"' + HUGE.encode() + b'"}'),
        (
            lambda d: EntityConfigZnode.parse(d, "/config/topics/t"),
            b'{"config":{"k":["' + HUGE.encode() + b'"]}}',
        ),
        (
            lambda d: EntityConfigZnode.parse(d, "/config/topics/t"),
            b'{"config":{"' + HUGE.encode() + b'":1}}',
        ),
    ],
)
def test_errors_of_a_huge_malformed_znode_quote_a_bounded_excerpt(parse, data: bytes) -> None:  # type: ignore[no-untyped-def]
    """Before: `{value!r}` quoted the whole value, a megabyte in one log line."""
    with pytest.raises(MalformedZnodeError) as caught:
        parse(data)
    assert len(str(caught.value)) < MESSAGE_BOUND, str(caught.value)[:MESSAGE_BOUND]


def test_a_deeply_nested_znode_is_malformed_not_a_recursion_error() -> None:
    """Before: RecursionError out of json.loads, which no caller of a znode's decoding catches."""
    with pytest.raises(MalformedZnodeError):
        decode_object(b"[" * 100_000, "/brokers/topics/t")


def test_a_quota_that_is_not_a_number_in_a_user_znode_is_logged_without_its_value(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Before: the whole value went into the log line (/config/users/<user> also holds the user's SCRAM
    credentials, and a value may be a megabyte long)."""
    data = EntityConfigZnode(
        {"producer_byte_rate": CREDENTIAL + HUGE, "SCRAM-SHA-256": CREDENTIAL}
    ).serialize()
    store = ZkQuotaStore(OneUserZooKeeper(data))  # type: ignore[arg-type]
    with caplog.at_level(logging.DEBUG):
        assert store.entity_quotas(QuotaEntity(user="alice")) == {}
    assert "/config/users/alice" in caplog.text
    assert SECRET not in caplog.text
