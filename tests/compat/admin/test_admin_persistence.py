"""Config changes made with the clients survive a broker restart, and dynamic broker configs take effect
(before and after it): a cluster-wide message.max.bytes makes large records fail."""

from __future__ import annotations

import json

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigSource, NewTopic
from confluent_kafka.admin import ConfigResource as CkResource
from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType, KafkaAdminClient
from kafka.protocol.admin import DescribeConfigsRequest, IncrementalAlterConfigsRequest

from tests.integration.admin.wire import Wire
from tests.support.broker_process import BrokerProcess

pytestmark = pytest.mark.timeout(120)


def delivery_error(bootstrap: str, topic: str, size: int) -> int | None:
    """Produce one record of `size` bytes; the error code of its delivery report (None if delivered)."""
    outcome: list[KafkaError | None] = []
    producer = Producer({"bootstrap.servers": bootstrap, "message.max.bytes": 10_000_000})
    producer.produce(topic, key=b"k", value=b"x" * size, on_delivery=lambda error, _: outcome.append(error))
    producer.flush(15)
    assert len(outcome) == 1
    return outcome[0].code() if outcome[0] is not None else None


def described(bootstrap: str) -> dict[str, tuple[str | None, int]]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resources = [CkResource("topic", "kept-configs"), CkResource("broker", "1")]
    results = {r.name: f.result(15) for r, f in admin.describe_configs(resources).items()}
    with Wire(bootstrap) as wire:
        resource = DescribeConfigsRequest.DescribeConfigsResource(
            resource_type=4, resource_name="", configuration_keys=None
        )
        request = DescribeConfigsRequest(
            resources=[resource], include_synonyms=False, include_documentation=False
        )
        cluster_default = [c.name for c in wire.send(request, 4).results[0].configs]
    return {
        "topic retention.ms": _entry(results["kept-configs"], "retention.ms"),
        "topic cleanup.policy": _entry(results["kept-configs"], "cleanup.policy"),
        "topic max.message.bytes": _entry(results["kept-configs"], "max.message.bytes"),
        "broker log.cleaner.backoff.ms": _entry(results["1"], "log.cleaner.backoff.ms"),
        "broker message.max.bytes": _entry(results["1"], "message.max.bytes"),
        "cluster default": tuple(sorted(cluster_default)),  # type: ignore[dict-item]
    }


def set_cluster_default(bootstrap: str, name: str, value: str | None) -> int:
    """IncrementalAlterConfigs (SET, or DELETE for None) on the cluster-wide default; the error code."""
    resource = IncrementalAlterConfigsRequest.AlterConfigsResource
    change = resource.AlterableConfig(name=name, config_operation=1 if value is None else 0, value=value)
    request = IncrementalAlterConfigsRequest(
        resources=[resource(resource_type=4, resource_name="", configs=[change])], validate_only=False
    )
    with Wire(bootstrap) as wire:
        return int(wire.send(request, 1).responses[0].error_code)


def _entry(configs: dict[str, ConfigEntry], name: str) -> tuple[str | None, int]:
    return configs[name].value, configs[name].source


def test_configs_survive_a_restart_and_apply(broker: BrokerProcess) -> None:
    confluent = AdminClient({"bootstrap.servers": broker.bootstrap})
    confluent.create_topics([NewTopic("kept-configs", 1, 1, config={"retention.ms": "60000"})])[
        "kept-configs"
    ].result(15)
    assert delivery_error(broker.bootstrap, "kept-configs", 5_000) is None

    changes = [ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND)]
    [done] = confluent.incremental_alter_configs(
        [CkResource("topic", "kept-configs", incremental_configs=changes)]
    ).values()
    assert done.result(15) is None
    # No Python client can name the cluster-wide default (the empty broker name): raw frames do.
    assert set_cluster_default(broker.bootstrap, "message.max.bytes", "2000") == 0
    kafka_python = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        kafka_python.alter_configs(
            [
                ConfigResource(
                    ConfigResourceType.BROKER, "1", {"log.cleaner.backoff.ms": (AlterConfigOp.SET, "30000")}
                )
            ]
        )
    finally:
        kafka_python.close()

    expected = {
        "topic retention.ms": ("60000", ConfigSource.DYNAMIC_TOPIC_CONFIG.value),
        "topic cleanup.policy": ("delete,compact", ConfigSource.DYNAMIC_TOPIC_CONFIG.value),
        "topic max.message.bytes": ("2000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value),
        "broker log.cleaner.backoff.ms": ("30000", ConfigSource.DYNAMIC_BROKER_CONFIG.value),
        "broker message.max.bytes": ("2000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value),
        "cluster default": ("message.max.bytes",),
    }
    assert described(broker.bootstrap) == expected
    assert delivery_error(broker.bootstrap, "kept-configs", 5_000) == KafkaError.MSG_SIZE_TOO_LARGE

    broker.restart()

    assert described(broker.bootstrap) == expected
    assert delivery_error(broker.bootstrap, "kept-configs", 5_000) == KafkaError.MSG_SIZE_TOO_LARGE
    stored = json.loads((broker.data_dir / "__odradek_broker_configs.json").read_text())
    assert stored == {
        "version": 1,
        "cluster_default": {"message.max.bytes": "2000"},
        "brokers": {"1": {"log.cleaner.backoff.ms": "30000"}},
    }
    assert (broker.data_dir / "__odradek_broker_configs.json").stat().st_mode & 0o077 == 0

    assert set_cluster_default(broker.bootstrap, "message.max.bytes", None) == 0
    assert delivery_error(broker.bootstrap, "kept-configs", 5_000) is None
