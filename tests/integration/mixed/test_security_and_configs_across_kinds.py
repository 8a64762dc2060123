"""SCRAM users, ACLs, topic configs, dynamic broker configs and client quotas made through one kind of
broker and obeyed by the other (issue #27), on one Apache Kafka 3.9 broker (1, controller) and two
odradek brokers (2, 3) sharing a ZooKeeper chroot.

Every broker has a SASL_PLAINTEXT listener (SCRAM-SHA-256/512) beside PLAINTEXT, Kafka's AclAuthorizer
and User:ANONYMOUS (the PLAINTEXT principal, the brokers' own) as super user. Each change is sent as a
raw request to one chosen broker (the Admin clients pick any broker for these APIs, so only a raw request
says which kind wrote it), then checked on a broker of the other kind once ZooKeeper's change
notification has reached it: what it enforces, and that both kinds describe it alike. Per-broker
configs go through Kafka's own kafka-configs, which sends them to the broker they are about.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator

import pytest

from odradek.client.security import ClientSecurityError
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.alter_client_quotas import (
    AlterClientQuotasRequest,
    EntityData,
    EntryData,
    OpData,
)
from odradek.protocol.messages.alter_user_scram_credentials import (
    AlterUserScramCredentialsRequest,
    ScramCredentialDeletion,
)
from odradek.protocol.messages.create_acls import AclCreation, CreateAclsRequest
from odradek.protocol.messages.delete_acls import DeleteAclsFilter, DeleteAclsRequest
from odradek.protocol.messages.describe_acls import DescribeAclsRequest
from odradek.protocol.messages.describe_client_quotas import ComponentData, DescribeClientQuotasRequest
from odradek.protocol.messages.describe_configs import DescribeConfigsRequest, DescribeConfigsResource
from odradek.protocol.messages.describe_user_scram_credentials import (
    DescribeUserScramCredentialsRequest,
    UserName,
)
from odradek.protocol.messages.incremental_alter_configs import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from odradek.protocol.records import Compression, Record, build_record_batch
from odradek.security.acl import AclOperation, AclPermissionType, PatternType, ResourceType
from odradek.security.scram_credentials import MECHANISMS
from tests.support import kafka_tools
from tests.support.interop import wait_until
from tests.support.kafka_reference import broker_host
from tests.support.mixed_cluster import PATIENCE_S, Kind, MixedCluster, running_mixed_cluster
from tests.support.mixed_security import SaslListeners, produce, scram_client
from tests.support.raw_client import RawClient
from tests.support.security import scram_upsertions
from tests.support.zookeeper import ZooKeeperServer

pytestmark = pytest.mark.timeout(600)

KAFKA, ODRADEK, ODRADEK_OTHER = 1, 2, 3
KINDS = {KAFKA: Kind.KAFKA, ODRADEK: Kind.ODRADEK, ODRADEK_OTHER: Kind.ODRADEK}
#: Partition 0 led by Kafka's broker, partition 1 by odradek's; every replica on every broker.
ASSIGNMENT = [[KAFKA, ODRADEK, ODRADEK_OTHER], [ODRADEK, ODRADEK_OTHER, KAFKA]]
LED_BY = {KAFKA: 0, ODRADEK: 1}
#: (made through, checked on): each direction.
DIRECTIONS = [(KAFKA, ODRADEK), (ODRADEK, KAFKA)]
DIRECTION_IDS = ["kafka-to-odradek", "odradek-to-kafka"]
#: IncrementalAlterConfigs' operations and ConfigResource's types.
SET, DELETE = 0, 1
TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4


@pytest.fixture(scope="module")
def listeners() -> SaslListeners:
    return SaslListeners({node: broker_host(node, len(KINDS)) for node in KINDS})


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer,
    tmp_path_factory: pytest.TempPathFactory,
    listeners: SaslListeners,
) -> Iterator[MixedCluster]:
    with running_mixed_cluster(
        tmp_path_factory, zookeeper_server, KINDS, KAFKA, node_settings=listeners.settings
    ) as cluster:
        yield cluster


# -- SCRAM users ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("made_on", "checked_on"), DIRECTIONS, ids=DIRECTION_IDS)
def test_a_scram_user_made_on_one_kind_logs_in_on_the_other_and_deleted_there_no_longer_logs_in_on_the_first(
    cluster: MixedCluster, listeners: SaslListeners, made_on: int, checked_on: int
) -> None:
    user, password = f"scram-{made_on}", f"secret-of-{made_on}"
    assert not logs_in(listeners, checked_on, user, password, "SCRAM-SHA-512")  # (the check can fail)
    upsert_scram_user(cluster, made_on, user, password)
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        wait_until(
            lambda m=mechanism: logs_in(listeners, checked_on, user, password, m),  # type: ignore[misc]
            PATIENCE_S,
            f"{user} logging in with {mechanism} on broker {checked_on}",
            0.3,
        )
    with pytest.raises(ClientSecurityError) as refused:
        scram_client(listeners.addresses[checked_on], user, "not-the-password").close()
    assert refused.value.kafka_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert describe_scram_user(cluster, made_on, user) == describe_scram_user(cluster, checked_on, user)

    delete_scram_user(cluster, checked_on, user)
    wait_until(
        lambda: not logs_in(listeners, made_on, user, password, "SCRAM-SHA-512"),
        PATIENCE_S,
        f"{user}'s logins refused on broker {made_on}",
        0.3,
    )
    assert describe_scram_user(cluster, made_on, user) == describe_scram_user(cluster, checked_on, user)


def upsert_scram_user(cluster: MixedCluster, node: int, user: str, password: str) -> None:
    upsertions = scram_upsertions(user, password)
    with admin(cluster, node) as client:
        response = client.request(AlterUserScramCredentialsRequest(deletions=[], upsertions=upsertions), 0)
    assert [r.error_code for r in response.results] == [ErrorCode.NONE], response


def delete_scram_user(cluster: MixedCluster, node: int, user: str) -> None:
    deletions = [ScramCredentialDeletion(name=user, mechanism=t) for t, _ in MECHANISMS.values()]
    with admin(cluster, node) as client:
        response = client.request(AlterUserScramCredentialsRequest(deletions=deletions, upsertions=[]), 0)
    assert [r.error_code for r in response.results] == [ErrorCode.NONE], response


def describe_scram_user(cluster: MixedCluster, node: int, user: str) -> list[tuple[str, int, object]]:
    with admin(cluster, node) as client:
        response = client.request(DescribeUserScramCredentialsRequest(users=[UserName(name=user)]), 0)
    assert response.error_code == ErrorCode.NONE, response
    return [
        (r.user, r.error_code, sorted((c.mechanism, c.iterations) for c in r.credential_infos))
        for r in response.results
    ]


def logs_in(listeners: SaslListeners, node: int, user: str, password: str, mechanism: str) -> bool:
    try:
        scram_client(listeners.addresses[node], user, password, mechanism).close()
    except ClientSecurityError:
        return False
    return True


# -- ACLs ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("made_on", "checked_on"), DIRECTIONS, ids=DIRECTION_IDS)
def test_an_acl_made_on_one_kind_is_enforced_by_the_other_and_its_removal_there_by_the_first(
    cluster: MixedCluster, listeners: SaslListeners, made_on: int, checked_on: int
) -> None:
    allowed, other = f"acl-allowed-{made_on}", f"acl-other-{made_on}"
    for topic in (allowed, other):
        create_topic(cluster, topic)
    user, password = f"writer-{made_on}", "writer-secret"
    upsert_scram_user(cluster, KAFKA, user, password)
    wait_until(lambda: logs_in(listeners, checked_on, user, password, "SCRAM-SHA-512"), PATIENCE_S, user)
    wait_until(lambda: logs_in(listeners, made_on, user, password, "SCRAM-SHA-512"), PATIENCE_S, user)
    # refused everywhere before the ACL exists (the check below could not pass without it)
    assert write(listeners, checked_on, user, password, allowed) == ErrorCode.TOPIC_AUTHORIZATION_FAILED

    grant_write(cluster, made_on, user, allowed)
    wait_until(
        lambda: write(listeners, checked_on, user, password, allowed) == ErrorCode.NONE,
        PATIENCE_S,
        f"{user} allowed to write {allowed} on broker {checked_on}",
        0.3,
    )
    assert write(listeners, checked_on, user, password, other) == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    described = describe_acls(cluster, made_on, user)
    assert described == [("TOPIC", allowed, "LITERAL", f"User:{user}", "*", "WRITE", "ALLOW")]
    assert describe_acls(cluster, checked_on, user) == described

    with admin(cluster, checked_on) as client:
        deleted = client.request(
            DeleteAclsRequest(
                filters=[
                    DeleteAclsFilter(
                        resource_type_filter=ResourceType.TOPIC,
                        resource_name_filter=allowed,
                        pattern_type_filter=PatternType.LITERAL,
                        principal_filter=f"User:{user}",
                        host_filter=None,
                        operation=AclOperation.ANY,
                        permission_type=AclPermissionType.ANY,
                    )
                ]
            ),
            2,
        )
    assert [len(r.matching_acls) for r in deleted.filter_results] == [1], deleted
    wait_until(
        lambda: write(listeners, made_on, user, password, allowed) == ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        PATIENCE_S,
        f"{user} refused {allowed} again on broker {made_on}",
        0.3,
    )
    assert describe_acls(cluster, made_on, user) == describe_acls(cluster, checked_on, user) == []


def write(listeners: SaslListeners, node: int, user: str, password: str, topic: str) -> int:
    """The error code of one record produced as `user` to the partition of `topic` that `node` leads."""
    with scram_client(listeners.addresses[node], user, password) as client:
        return produce(client, topic, LED_BY[node], batch(b"k", b"v"))[0]


def describe_acls(cluster: MixedCluster, node: int, user: str) -> list[tuple[str, ...]]:
    request = DescribeAclsRequest(
        resource_type_filter=ResourceType.ANY,
        resource_name_filter=None,
        pattern_type_filter=PatternType.ANY,
        principal_filter=f"User:{user}",
        host_filter=None,
        operation=AclOperation.ANY,
        permission_type=AclPermissionType.ANY,
    )
    with admin(cluster, node) as client:
        response = client.request(request, 2)
    assert response.error_code == ErrorCode.NONE, response
    return sorted(
        (
            ResourceType(r.resource_type).name,
            r.resource_name,
            PatternType(r.pattern_type).name,
            a.principal,
            a.host,
            AclOperation(a.operation).name,
            AclPermissionType(a.permission_type).name,
        )
        for r in response.resources
        for a in r.acls
    )


# -- topic configs -------------------------------------------------------------------------------------

TOPIC_CONFIGS = {
    "max.message.bytes": "2048",
    "retention.ms": "3600000",
    "cleanup.policy": "compact",
    "compression.type": "gzip",
}


@pytest.mark.parametrize(("made_on", "checked_on"), DIRECTIONS, ids=DIRECTION_IDS)
def test_topic_configs_altered_on_one_kind_are_in_effect_on_the_other_and_described_alike(
    cluster: MixedCluster, made_on: int, checked_on: int
) -> None:
    topic = f"configs-{made_on}"
    create_topic(cluster, topic)
    partition = LED_BY[checked_on]
    with admin(cluster, checked_on) as client:  # taken before the change (the check below can fail)
        assert produce(client, topic, partition, batch(None, b"no key"))[0] == ErrorCode.NONE
    alter_configs(cluster, made_on, TOPIC_RESOURCE, topic, TOPIC_CONFIGS)

    def described_as_set() -> bool:
        entries = describe_configs(cluster, checked_on, TOPIC_RESOURCE, topic, list(TOPIC_CONFIGS))
        return {name: value for name, (value, *_) in entries.items()} == TOPIC_CONFIGS

    wait_until(described_as_set, PATIENCE_S, f"{topic}'s configs on broker {checked_on}", 0.3)
    with admin(cluster, checked_on) as client:

        def refuses_unkeyed() -> bool:
            return produce(client, topic, partition, batch(None, b"no key"))[0] == ErrorCode.INVALID_RECORD

        # the topic's configs reach the partition's log on each broker a moment after its metadata
        wait_until(refuses_unkeyed, PATIENCE_S, f"{topic} compacted on broker {checked_on}", 0.3)
        too_large = batch(b"k", os.urandom(4096))
        assert produce(client, topic, partition, too_large)[0] == ErrorCode.MESSAGE_TOO_LARGE
        assert produce(client, topic, partition, batch(b"k", b"kept" * 20))[0] == ErrorCode.NONE

    def compressed_by_the_leader() -> bool:
        batches = cluster.replica(checked_on, topic, partition)[1]
        return bool(batches) and batches[-1].compression is Compression.GZIP

    wait_until(compressed_by_the_leader, PATIENCE_S, f"{topic}'s last batch gzip", 0.3)
    assert describe_configs(cluster, made_on, TOPIC_RESOURCE, topic, list(TOPIC_CONFIGS)) == (
        describe_configs(cluster, checked_on, TOPIC_RESOURCE, topic, list(TOPIC_CONFIGS))
    )


#: Topic configs Kafka 3.9 accepts and odradek refuses (its limits are Kafka 4's: segment.bytes at least
#: 1 MiB; message.timestamp.difference.max.ms, deprecated in 3.x, gone in 4.0).
KAFKA_39_ONLY = {"segment.bytes": "524288", "message.timestamp.difference.max.ms": "86400000"}


def test_topic_configs_only_kafka_39_accepts_are_described_by_odradek_and_the_rest_obeyed(
    cluster: MixedCluster,
) -> None:
    topic = "kafka-39-configs"
    create_topic(cluster, topic)
    with admin(cluster, ODRADEK) as client:
        for name, value in KAFKA_39_ONLY.items():
            resource = AlterConfigsResource(
                resource_type=TOPIC_RESOURCE,
                resource_name=topic,
                configs=[AlterableConfig(name=name, config_operation=SET, value=value)],
            )
            response = client.request(
                IncrementalAlterConfigsRequest(resources=[resource], validate_only=False), 1
            )
            assert [r.error_code for r in response.responses] == [ErrorCode.INVALID_CONFIG], response
    alter_configs(cluster, KAFKA, TOPIC_RESOURCE, topic, {**KAFKA_39_ONLY, "max.message.bytes": "2048"})
    names = ["segment.bytes", "max.message.bytes"]
    wait_until(
        lambda: (
            describe_configs(cluster, KAFKA, TOPIC_RESOURCE, topic, names)
            == describe_configs(cluster, ODRADEK, TOPIC_RESOURCE, topic, names)
        ),
        PATIENCE_S,
        f"{topic} described by odradek as by Kafka",
        0.3,
    )
    # odradek knows no message.timestamp.difference.max.ms: not described, as Kafka leaves out names it
    # does not define; Kafka describes it
    everything = describe_configs(cluster, ODRADEK, TOPIC_RESOURCE, topic, None)
    assert "message.timestamp.difference.max.ms" not in everything and "segment.bytes" in everything
    with admin(cluster, ODRADEK) as client:
        too_large = batch(b"k", os.urandom(4096))
        wait_until(
            lambda: produce(client, topic, LED_BY[ODRADEK], too_large)[0] == ErrorCode.MESSAGE_TOO_LARGE,
            PATIENCE_S,
            f"{topic}'s max.message.bytes on broker {ODRADEK}",
            0.3,
        )


# -- dynamic broker configs ----------------------------------------------------------------------------

CLUSTER_DEFAULTS = {"message.max.bytes": "4096", "log.retention.ms": "7200000"}


@pytest.mark.parametrize(("made_on", "checked_on"), DIRECTIONS, ids=DIRECTION_IDS)
def test_cluster_wide_broker_configs_set_on_one_kind_are_in_effect_on_the_other_and_described_alike(
    cluster: MixedCluster, made_on: int, checked_on: int
) -> None:
    topic = f"broker-defaults-{made_on}"
    create_topic(cluster, topic)
    partition = LED_BY[checked_on]
    large = batch(b"k", os.urandom(8192))
    with admin(cluster, checked_on) as client:  # accepted before the change
        assert produce(client, topic, partition, large)[0] == ErrorCode.NONE
    alter_configs(cluster, made_on, BROKER_RESOURCE, "", CLUSTER_DEFAULTS)
    names = list(CLUSTER_DEFAULTS)
    try:
        with admin(cluster, checked_on) as client:
            wait_until(
                lambda: produce(client, topic, partition, large)[0] == ErrorCode.MESSAGE_TOO_LARGE,
                PATIENCE_S,
                f"message.max.bytes in effect on broker {checked_on}",
                0.3,
            )

        # each broker describes the defaults from what its own change notification brought it, the one
        # that made the change too (in Kafka as in odradek): a moment after the other may enforce them
        def agreed() -> bool:
            made, checked = (
                describe_configs(cluster, n, BROKER_RESOURCE, "", names) for n in (made_on, checked_on)
            )
            return made == checked

        wait_until(
            agreed, PATIENCE_S, f"brokers {made_on} and {checked_on} describing the same defaults", 0.3
        )
        defaults = describe_configs(cluster, checked_on, BROKER_RESOURCE, "", names)
        assert {name: value for name, (value, *_) in defaults.items()} == CLUSTER_DEFAULTS
        own = [describe_configs(cluster, n, BROKER_RESOURCE, str(n), names) for n in (made_on, checked_on)]
        assert own[0] == own[1]
    finally:
        alter_configs(cluster, made_on, BROKER_RESOURCE, "", dict.fromkeys(CLUSTER_DEFAULTS))
    for node in cluster.running():
        wait_until(
            lambda n=node: describe_configs(cluster, n, BROKER_RESOURCE, "", names) == {},  # type: ignore[misc]
            PATIENCE_S,
            f"the cluster-wide defaults removed on broker {node}",
            0.3,
        )


PER_BROKER = {"leader.replication.throttled.rate": "1048576", "log.retention.ms": "10800000"}


def test_per_broker_configs_set_with_kafka_configs_are_described_and_stored_alike_by_both_kinds(
    cluster: MixedCluster,
) -> None:
    tools = kafka_tools.install("kafka-3.9")
    described: dict[int, str] = {}
    for node in (KAFKA, ODRADEK):
        entity = ["--bootstrap-server", cluster.bootstrap(node), "--entity-type", "brokers"]
        entity += ["--entity-name", str(node)]
        added = ",".join(f"{k}={v}" for k, v in PER_BROKER.items())
        altered = tools.run("kafka-configs", [*entity, "--alter", "--add-config", added])
        assert altered.exit_code == 0, altered
        shown = tools.run("kafka-configs", [*entity, "--describe"])
        assert shown.exit_code == 0, shown
        described[node] = shown.stdout.replace(f"broker {node}", "broker N")
        data, _ = cluster.zk.get(f"/config/brokers/{node}")
        assert json.loads(data) == {"version": 1, "config": PER_BROKER}
        removed = tools.run("kafka-configs", [*entity, "--alter", "--delete-config", ",".join(PER_BROKER)])
        assert removed.exit_code == 0, removed
    assert "leader.replication.throttled.rate=1048576" in described[KAFKA], described
    assert described[ODRADEK] == described[KAFKA]


def test_broker_configs_kafka_39_cannot_update_dynamically_odradek_cannot_either(
    cluster: MixedCluster,
) -> None:
    """What Kafka describes read-only odradek must too, and refuse alike: an update stored in ZooKeeper
    that Kafka's brokers would never apply."""
    kafka = describe_configs(cluster, KAFKA, BROKER_RESOURCE, str(KAFKA), None)
    odradek = describe_configs(cluster, ODRADEK, BROKER_RESOURCE, str(ODRADEK), None)
    read_only = {name for name, (_, fixed, *_) in kafka.items() if fixed}
    assert sorted(n for n in read_only & set(odradek) if not odradek[n][1]) == []
    answers = {}
    for node in (KAFKA, ODRADEK):
        resource = AlterConfigsResource(
            resource_type=BROKER_RESOURCE,
            resource_name="",
            configs=[AlterableConfig(name="log.message.format.version", config_operation=SET, value="3.0")],
        )
        with admin(cluster, node) as client:
            response = client.request(
                IncrementalAlterConfigsRequest(resources=[resource], validate_only=False), 1
            )
        answers[node] = [(r.error_code, r.error_message) for r in response.responses]
    assert answers[ODRADEK] == answers[KAFKA]
    assert answers[KAFKA][0][0] != ErrorCode.NONE


def test_the_authorizers_configs_are_described_as_kafka_39_describes_them(cluster: MixedCluster) -> None:
    """Kafka 3.9 knows super.users and allow.everyone.if.no.acl.found as its authorizer's, not as broker
    configs: it lists them only when set, as custom names (hidden, sensitive, of unknown type)."""
    names = ["super.users", "allow.everyone.if.no.acl.found"]
    kafka = describe_configs(cluster, KAFKA, BROKER_RESOURCE, str(KAFKA), names)
    assert kafka == {"super.users": (None, True, 4, True, [("super.users", None, 4)])}
    assert describe_configs(cluster, ODRADEK, BROKER_RESOURCE, str(ODRADEK), names) == kafka


def test_both_kinds_refuse_a_per_broker_config_of_another_broker(cluster: MixedCluster) -> None:
    """Kafka 3.9 (ZkAdminManager) alters and describes only its own broker id, or the cluster default."""
    answers = {}
    for node, other in ((KAFKA, ODRADEK), (ODRADEK, KAFKA)):
        resource = AlterConfigsResource(
            resource_type=BROKER_RESOURCE,
            resource_name=str(other),
            configs=[AlterableConfig(name="log.retention.ms", config_operation=SET, value="1000")],
        )
        with admin(cluster, node) as client:
            response = client.request(
                IncrementalAlterConfigsRequest(resources=[resource], validate_only=False), 1
            )
        (answer,) = response.responses
        answers[node] = (
            answer.error_code,
            answer.error_message.replace(str(other), "N").replace(str(node), "M"),
        )
    assert answers[ODRADEK] == answers[KAFKA]
    assert answers[KAFKA][0] == ErrorCode.INVALID_REQUEST


# -- client quotas -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("made_on", "checked_on"), DIRECTIONS, ids=DIRECTION_IDS)
def test_a_client_quota_set_on_one_kind_throttles_on_the_other_and_is_described_alike(
    cluster: MixedCluster, listeners: SaslListeners, made_on: int, checked_on: int
) -> None:
    topic, user, client_id = f"quota-{made_on}", f"quota-user-{made_on}", "quota-client"
    create_topic(cluster, topic)
    upsert_scram_user(cluster, made_on, user, "quota-secret")
    grant_write(cluster, made_on, user, topic)
    before: list[tuple[int, int]] = []

    def allowed() -> bool:
        try:
            before.append(produce_as(listeners, checked_on, user, client_id, topic))
        except ClientSecurityError:
            return False  # the user not known there yet
        return before[-1][0] == ErrorCode.NONE

    wait_until(allowed, PATIENCE_S, f"{user} allowed to write {topic} on broker {checked_on}", 0.3)
    assert before[-1] == (ErrorCode.NONE, 0)  # not throttled before the quota (the check can fail)
    entity = [
        EntityData(entity_type="user", entity_name=user),
        EntityData(entity_type="client-id", entity_name=client_id),
    ]
    set_quota(cluster, made_on, entity, "producer_byte_rate", 1024.0)
    try:
        wait_until(
            lambda: (
                describe_quotas(cluster, checked_on, user)
                == [(user, client_id, "producer_byte_rate", 1024.0)]
            ),
            PATIENCE_S,
            f"{user}'s quota on broker {checked_on}",
            0.3,
        )
        assert describe_quotas(cluster, made_on, user) == describe_quotas(cluster, checked_on, user)

        def throttled() -> bool:
            error, throttle_time_ms = produce_as(listeners, checked_on, user, client_id, topic)
            assert error == ErrorCode.NONE, ErrorCode(error)
            return throttle_time_ms > 0

        wait_until(throttled, PATIENCE_S, f"{user} throttled on broker {checked_on}", 0.1)
    finally:
        set_quota(cluster, made_on, entity, "producer_byte_rate", None)


@pytest.mark.parametrize("through", [KAFKA, ODRADEK], ids=["kafka", "odradek"])
def test_a_user_whose_credentials_and_quotas_are_removed_leaves_no_znode_behind(
    cluster: MixedCluster, through: int
) -> None:
    """Kafka 3.9 deletes a user's, client's or IP's znode once it holds nothing (tryCleanQuotaNodes)."""
    user = f"passing-{through}@EXAMPLE"
    upsert_scram_user(cluster, through, user, "passing-secret")
    entities = [
        [EntityData(entity_type="user", entity_name=user)],
        [
            EntityData(entity_type="user", entity_name=user),
            EntityData(entity_type="client-id", entity_name="a b"),
        ],
        [EntityData(entity_type="client-id", entity_name=f"alone-{through}")],
        [EntityData(entity_type="ip", entity_name=f"127.0.0.{through + 5}")],
    ]
    for entity in entities:
        key = "connection_creation_rate" if entity[0].entity_type == "ip" else "consumer_byte_rate"
        set_quota(cluster, through, entity, key, 2048.0)
    sanitized = user.replace("@", "%40")
    assert cluster.zk.exists(f"/config/users/{sanitized}/clients/a%20b")
    for entity in entities:
        key = "connection_creation_rate" if entity[0].entity_type == "ip" else "consumer_byte_rate"
        set_quota(cluster, through, entity, key, None)
    delete_scram_user(cluster, through, user)
    left = [
        path
        for path in (
            f"/config/users/{sanitized}",
            f"/config/clients/alone-{through}",
            f"/config/ips/127.0.0.{through + 5}",
        )
        if cluster.zk.exists(path)
    ]
    assert left == []


def set_quota(
    cluster: MixedCluster, node: int, entity: list[EntityData], key: str, value: float | None
) -> None:
    """AlterClientQuotas on broker `node`: `key` set to `value`, or removed for None."""
    op = OpData(key=key, value=value or 0.0, remove=value is None)
    with admin(cluster, node) as client:
        altered = client.request(
            AlterClientQuotasRequest(entries=[EntryData(entity=entity, ops=[op])], validate_only=False), 1
        )
    assert [e.error_code for e in altered.entries] == [ErrorCode.NONE], altered


def produce_as(listeners: SaslListeners, node: int, user: str, client_id: str, topic: str) -> tuple[int, int]:
    """16 KiB produced as `user` with `client_id` to the partition of `topic` that `node` leads: the
    error code and the throttle time."""
    with scram_client(listeners.addresses[node], user, "quota-secret", client_id=client_id) as client:
        return produce(client, topic, LED_BY[node], batch(b"k", os.urandom(16_384)))


def describe_quotas(cluster: MixedCluster, node: int, user: str) -> list[tuple[object, ...]]:
    request = DescribeClientQuotasRequest(
        components=[ComponentData(entity_type="user", match_type=0, match=user)], strict=False
    )
    with admin(cluster, node) as client:
        response = client.request(request, 1)
    assert response.error_code == ErrorCode.NONE, response
    found = []
    for entry in response.entries or []:
        names = {e.entity_type: e.entity_name for e in entry.entity}
        for value in entry.values:
            found.append((names.get("user"), names.get("client-id"), value.key, value.value))
    return sorted(found, key=repr)


def grant_write(cluster: MixedCluster, node: int, user: str, topic: str) -> None:
    acl = AclCreation(
        resource_type=ResourceType.TOPIC,
        resource_name=topic,
        resource_pattern_type=PatternType.LITERAL,
        principal=f"User:{user}",
        host="*",
        operation=AclOperation.WRITE,
        permission_type=AclPermissionType.ALLOW,
    )
    with admin(cluster, node) as client:
        created = client.request(CreateAclsRequest(creations=[acl]), 2)
    assert [r.error_code for r in created.results] == [ErrorCode.NONE], created


# -- helpers -------------------------------------------------------------------------------------------


def admin(cluster: MixedCluster, node: int) -> RawClient:
    """A raw client on broker `node`'s PLAINTEXT listener: User:ANONYMOUS, a super user."""
    host, port = cluster.kafka.addresses[node]
    return RawClient(port, timeout=30, host=host)


def create_topic(cluster: MixedCluster, topic: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin_client = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    new = NewTopic(topic, len(ASSIGNMENT), replica_assignment=ASSIGNMENT)
    admin_client.create_topics([new])[topic].result(60)
    cluster.wait_in_sync(topic, len(ASSIGNMENT))


def batch(key: bytes | None, value: bytes) -> bytes:
    return build_record_batch([Record(offset=0, timestamp=int(time.time() * 1000), key=key, value=value)])


def alter_configs(
    cluster: MixedCluster, node: int, resource_type: int, name: str, configs: dict[str, str | None]
) -> None:
    """IncrementalAlterConfigs on broker `node`: SET each config, DELETE those given None."""
    resource = AlterConfigsResource(
        resource_type=resource_type,
        resource_name=name,
        configs=[
            AlterableConfig(name=k, config_operation=SET if v is not None else DELETE, value=v)
            for k, v in configs.items()
        ],
    )
    with admin(cluster, node) as client:
        response = client.request(
            IncrementalAlterConfigsRequest(resources=[resource], validate_only=False), 1
        )
    assert [(r.error_code, r.error_message) for r in response.responses] == [(ErrorCode.NONE, None)], response


def describe_configs(
    cluster: MixedCluster, node: int, resource_type: int, name: str, keys: list[str] | None
) -> dict[str, tuple[object, ...]]:
    """Broker `node`'s DescribeConfigs v4 of `keys` (None: all): name -> (value, read only, source,
    sensitive, synonyms); for the cluster-wide broker defaults, only those set."""
    request = DescribeConfigsRequest(
        resources=[
            DescribeConfigsResource(resource_type=resource_type, resource_name=name, configuration_keys=keys)
        ],
        include_synonyms=True,
    )
    with admin(cluster, node) as client:
        response = client.request(request, 4)
    (result,) = response.results
    assert result.error_code == ErrorCode.NONE, result
    return {
        c.name: (
            c.value,
            c.read_only,
            c.config_source,
            c.is_sensitive,
            [(s.name, s.value, s.source) for s in c.synonyms],
        )
        for c in result.configs
    }
