"""Golden znode contents, written from what Kafka 3.9 writes (core/src/main/scala/kafka/zk/ZkData.scala:
the encode methods of ClusterIdZNode, BrokerIdZNode, TopicZNode, TopicPartitionStateZNode,
ControllerZNode, ControllerEpochZNode, ConfigEntityZNode, ConfigEntityChangeNotificationSequenceZNode,
ProducerIdBlockZNode, ResourceZNode and the ACL change stores; ScramCredentialUtils for the SCRAM
values in /config/users), and a comparison that tells 1 from "1" and from true.
"""

from __future__ import annotations

import json

#: A Kafka Uuid as its toString writes it (URL-safe base64, no padding).
CLUSTER_ID = "x8Mr9C3mQ2e7ZsT7rZ3Oyw"
TOPIC_ID = "sdlvjTe8Sx6ugX7i1hWHOA"

CLUSTER_ID_ZNODE = '{"version":"1","id":"x8Mr9C3mQ2e7ZsT7rZ3Oyw"}'
# BrokerIdZNode.encode, version 5: host/port of the first PLAINTEXT endpoint, timestamp as a string,
# rack only when set
BROKER_ZNODE = (
    '{"version":5,"host":"127.0.0.2","port":9092,"jmx_port":-1,"timestamp":"1700000000000",'
    '"endpoints":["PLAINTEXT://127.0.0.2:9092","REPLICATION://127.0.0.2:9093"],'
    '"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT","REPLICATION":"SSL"},'
    '"rack":"rack-a","features":{}}'
)
BROKER_ZNODE_NO_PLAINTEXT_NO_RACK = (
    '{"version":5,"host":null,"port":-1,"jmx_port":-1,"timestamp":"1700000000000",'
    '"endpoints":["SECURE://broker1.example:9094"],"listener_security_protocol_map":{"SECURE":"SASL_SSL"},'
    '"features":{}}'
)
TOPIC_ZNODE = (
    '{"version":3,"partitions":{"0":[1,2,3],"1":[2,3,1]},"adding_replicas":{},"removing_replicas":{},'
    '"topic_id":"sdlvjTe8Sx6ugX7i1hWHOA"}'
)
PARTITION_STATE_ZNODE = '{"version":1,"leader":1,"leader_epoch":0,"isr":[1,2,3],"controller_epoch":5}'
CONTROLLER_ZNODE = '{"version":2,"brokerid":1,"timestamp":"1700000000000","kraftControllerEpoch":-1}'
CONTROLLER_EPOCH_ZNODE = b"5"
TOPIC_CONFIG_ZNODE = '{"version":1,"config":{"retention.ms":"60000","cleanup.policy":"compact"}}'
CONFIG_CHANGE_ZNODE = '{"version":2,"entity_path":"topics/orders"}'
#: ResourceZNode.encode (AclEntry.toJsonCompatibleMap): one object per ACL, Kafka's PascalCase names.
ACL_ZNODE = (
    '{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"}]}'
)
#: LiteralAclChangeStore.encode: Java's ResourceType.toString (the enum name), ':' and the name.
LITERAL_ACL_CHANGE = b"TOPIC:orders"
#: ExtendedAclChangeStore.encode: an ExtendedAclChangeEvent.
EXTENDED_ACL_CHANGE = '{"version":1,"resourceType":"GROUP","name":"team-","patternType":"PREFIXED"}'
#: ConfigEntityZNode of a user with a SCRAM credential (ScramCredentialUtils.credentialToString) and a
#: quota another tool wrote, kept when the credential changes.
SCRAM_USER_CONFIG_TEMPLATE = (
    '{{"version":1,"config":{{"producer_byte_rate":"1024","SCRAM-SHA-256":'
    '"salt={salt},stored_key={stored_key},server_key={server_key},iterations=4096"}}}}'
)
USER_CONFIG_CHANGE_ZNODE = '{"version":2,"entity_path":"users/alice"}'
PRODUCER_ID_BLOCK_ZNODE = '{"version":1,"broker":1,"block_start":"0","block_end":"999"}'


def same_json(actual: object, expected: object) -> bool:
    """Equal JSON values, types included: 1, 1.0, "1" and true are all different here."""
    if type(actual) is not type(expected):
        return False
    if isinstance(expected, dict):
        assert isinstance(actual, dict)
        return actual.keys() == expected.keys() and all(same_json(actual[k], expected[k]) for k in expected)
    if isinstance(expected, list):
        assert isinstance(actual, list)
        return len(actual) == len(expected) and all(map(same_json, actual, expected))
    return actual == expected


def assert_same_json(actual: bytes | None, expected: str) -> None:
    assert actual is not None
    parsed, golden = json.loads(actual), json.loads(expected)
    assert same_json(parsed, golden), f"\n  written: {actual.decode()}\n   Kafka's: {expected}"


def assert_same_shape(actual: bytes | None, expected: str) -> None:
    """Same field names and value types (not values: timestamps and ids differ from run to run)."""
    assert actual is not None
    parsed, golden = json.loads(actual), json.loads(expected)
    assert _shape(parsed) == _shape(golden), f"\n  written: {actual.decode()}\n   Kafka's: {expected}"


def _shape(value: object) -> object:
    if isinstance(value, dict):
        return {key: _shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_shape(item) for item in value[:1]]
    return type(value).__name__
