"""`kafka-reassign-partitions --verify` (and --cancel) clear the replication throttle rates on every
broker, with IncrementalAlterConfigs DELETEs of leader.replication.throttled.rate,
follower.replication.throttled.rate and replica.alter.log.dirs.io.max.bytes.per.second, whether any
was set or not: odradek knew none of the three and refused the DELETEs ("Unknown broker config"), so
every --verify failed. They are Kafka's broker configs: declared now, so a DELETE is fine. All three
are real now (replication throttling, and the throttle of moves between log directories).
(tests/compat/kafka_tools reassign-single-node, reassign-cluster)
"""

from __future__ import annotations

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.incremental_alter_configs import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import RawClient

BROKER = 4
SET, DELETE = 0, 1
RATES = (
    "leader.replication.throttled.rate",
    "follower.replication.throttled.rate",
    "replica.alter.log.dirs.io.max.bytes.per.second",
)


def _alter(client: RawClient, name: str, configs: list[AlterableConfig]) -> tuple[int, str | None]:
    answer: IncrementalAlterConfigsResponse = client.request(
        IncrementalAlterConfigsRequest(
            resources=[AlterConfigsResource(resource_type=BROKER, resource_name=name, configs=configs)]
        ),
        1,
    )
    (result,) = answer.responses
    return result.error_code, result.error_message


def test_the_throttle_rates_can_be_cleared_and_set(
    broker: BrokerProcess,
) -> None:
    deletes = [AlterableConfig(name=rate, config_operation=DELETE, value=None) for rate in RATES]
    with RawClient(broker.port, timeout=10) as client:
        cleared = _alter(client, "1", deletes)
        cleared_default = _alter(client, "", deletes)
        rates_set = _alter(
            client,
            "1",
            [AlterableConfig(name=rate, config_operation=SET, value="50000000") for rate in RATES],
        )
        cleared_again = _alter(client, "1", deletes)
    assert cleared == (ErrorCode.NONE, None)
    assert cleared_default == (ErrorCode.NONE, None)
    assert rates_set == (ErrorCode.NONE, None)
    assert cleared_again == (ErrorCode.NONE, None)
