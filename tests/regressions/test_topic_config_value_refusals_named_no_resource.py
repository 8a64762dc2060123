"""AlterConfigs and IncrementalAlterConfigs refused a topic config value that does not parse with the
bare reason ("Invalid value soon for configuration retention.ms: Not a number of type LONG"), where
Kafka 3.9 (ZkAdminManager, for every ConfigException of an alter) says which resource first: "Invalid
config value for resource ConfigResource(type=TOPIC, name='t'): ...", as kafka-configs prints it.
CreateTopics keeps the bare reason, as Kafka's does. (tests/compat/kafka_tools topic-configs)
"""

from __future__ import annotations

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages import alter_configs, incremental_alter_configs
from odradek.protocol.messages.create_topics import (
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
    CreateTopicsResponse,
)
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import RawClient

TOPIC = 2
SET = 0
REASON = "Invalid value soon for configuration retention.ms: Not a number of type LONG"


def test_an_alter_names_the_topic_whose_config_value_is_refused(broker: BrokerProcess) -> None:
    soon = [CreatableTopicConfig(name="retention.ms", value="soon")]
    with RawClient(broker.port, timeout=10) as client:
        created: CreateTopicsResponse = client.request(
            CreateTopicsRequest(
                topics=[
                    CreatableTopic(name="valued", num_partitions=1, replication_factor=1),
                    CreatableTopic(name="unvalued", num_partitions=1, replication_factor=1, configs=soon),
                ]
            ),
            7,
        )
        replaced: alter_configs.AlterConfigsResponse = client.request(
            alter_configs.AlterConfigsRequest(
                resources=[
                    alter_configs.AlterConfigsResource(
                        resource_type=TOPIC,
                        resource_name="valued",
                        configs=[alter_configs.AlterableConfig(name="retention.ms", value="soon")],
                    )
                ]
            ),
            1,
        )
        incremented: incremental_alter_configs.IncrementalAlterConfigsResponse = client.request(
            incremental_alter_configs.IncrementalAlterConfigsRequest(
                resources=[
                    incremental_alter_configs.AlterConfigsResource(
                        resource_type=TOPIC,
                        resource_name="valued",
                        configs=[
                            incremental_alter_configs.AlterableConfig(
                                name="min.insync.replicas", config_operation=SET, value="0"
                            )
                        ],
                    )
                ]
            ),
            1,
        )
    named = "Invalid config value for resource ConfigResource(type=TOPIC, name='valued'): "
    assert {t.name: (t.error_code, t.error_message) for t in created.topics} == {
        "valued": (ErrorCode.NONE, None),
        "unvalued": (ErrorCode.INVALID_CONFIG, REASON),
    }
    assert [(r.error_code, r.error_message) for r in replaced.responses] == [
        (ErrorCode.INVALID_CONFIG, named + REASON)
    ]
    assert [(r.error_code, r.error_message) for r in incremented.responses] == [
        (
            ErrorCode.INVALID_CONFIG,
            named + "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1",
        )
    ]
