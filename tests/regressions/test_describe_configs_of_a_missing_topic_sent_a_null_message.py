"""DescribeConfigs of a topic that does not exist answered UNKNOWN_TOPIC_OR_PARTITION with a null error
message, so Java's admin client put in its default text ("This server does not host this
topic-partition.") and kafka-configs printed that; Kafka 3.9 (ConfigHelper.describeConfigs) sets no
message, which its generated message class sends as the empty string, and kafka-configs prints the
exception with nothing after it. (tests/compat/kafka_tools topic-configs)
"""

from __future__ import annotations

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.describe_configs import DescribeConfigsRequest, DescribeConfigsResource
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import RawClient

TOPIC = 2


def test_describe_configs_of_a_missing_topic_has_an_empty_message(broker: BrokerProcess) -> None:
    with RawClient(broker.port, timeout=10) as client:
        answers = [
            client.request(
                DescribeConfigsRequest(
                    resources=[
                        DescribeConfigsResource(
                            resource_type=TOPIC, resource_name="nowhere", configuration_keys=None
                        )
                    ]
                ),
                version,
            )
            for version in (0, 4)
        ]
    for answer in answers:
        assert [(r.error_code, r.error_message) for r in answer.results] == [
            (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "")
        ]
