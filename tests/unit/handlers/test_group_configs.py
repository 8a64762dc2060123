"""GROUP config resources (Kafka 4.4's GroupConfig, share-group keys) through IncrementalAlterConfigs and
DescribeConfigs: set, described (GROUP_CONFIG where set, the broker's value where not), deleted, kept
across a restart; refused outside the broker's bounds, unknown or not served by name; authorized on the
group; refused by a broker with no place to keep them."""

from __future__ import annotations

from pathlib import Path

from odradek.cluster.metadata.acls import LocalAclStore
from odradek.config.types import ConfigSource
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.describe_configs import DescribeConfigsRequest, DescribeConfigsResource
from odradek.protocol.messages.incremental_alter_configs import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from odradek.protocol.messages.list_config_resources import ListConfigResourcesRequest
from odradek.security.authorizer import authorizer_from_config
from tests.support.handler_services import HandlerBroker

GROUP = 32
SET, DELETE = 0, 1


async def alter(
    broker: HandlerBroker, group: str, *ops: tuple[str, int, str | None], validate_only: bool = False
) -> tuple[int, str | None]:
    request = IncrementalAlterConfigsRequest(
        resources=[
            AlterConfigsResource(
                resource_type=GROUP,
                resource_name=group,
                configs=[AlterableConfig(name=k, config_operation=op, value=v) for k, op, v in ops],
            )
        ],
        validate_only=validate_only,
    )
    [result] = (await broker.call(request, 1)).responses
    return result.error_code, result.error_message


async def describe(broker: HandlerBroker, group: str) -> tuple[int, dict[str, tuple[str | None, int]]]:
    request = DescribeConfigsRequest(
        resources=[
            DescribeConfigsResource(resource_type=GROUP, resource_name=group, configuration_keys=None)
        ],
        include_synonyms=True,
    )
    [result] = (await broker.call(request, 4)).results
    return result.error_code, {c.name: (c.value, c.config_source) for c in result.configs}


async def test_share_group_configs_are_set_described_deleted_and_kept_across_a_restart(
    tmp_path: Path,
) -> None:
    broker = HandlerBroker(
        tmp_path / "data",
        **{"group.share.heartbeat.interval.ms": "4000", "group.share.min.heartbeat.interval.ms": "1000"},
    )
    try:
        code, _ = await alter(broker, "g", ("share.heartbeat.interval.ms", SET, "6000"), validate_only=True)
        assert code == ErrorCode.NONE
        assert (await describe(broker, "g"))[1]["share.heartbeat.interval.ms"] == (
            "4000",
            ConfigSource.DEFAULT_CONFIG,
        )
        code, _ = await alter(
            broker,
            "g",
            ("share.heartbeat.interval.ms", SET, "6000"),
            ("share.auto.offset.reset", SET, "earliest"),
        )
        assert code == ErrorCode.NONE
        code, described = await describe(broker, "g")
        assert code == ErrorCode.NONE
        assert described["share.heartbeat.interval.ms"] == ("6000", ConfigSource.GROUP_CONFIG)
        assert described["share.auto.offset.reset"] == ("earliest", ConfigSource.GROUP_CONFIG)
        assert described["share.session.timeout.ms"] == ("45000", ConfigSource.DEFAULT_CONFIG)
        assert set(described) == {
            "consumer.session.timeout.ms",
            "consumer.heartbeat.interval.ms",
            "share.session.timeout.ms",
            "share.heartbeat.interval.ms",
            "share.record.lock.duration.ms",
            "share.delivery.count.limit",
            "share.partition.max.record.locks",
            "share.auto.offset.reset",
            "share.isolation.level",
        }
        assert (await describe(broker, "other"))[1]["share.heartbeat.interval.ms"][
            1
        ] == ConfigSource.DEFAULT_CONFIG
        assert (await alter(broker, "g", ("share.auto.offset.reset", DELETE, None)))[0] == ErrorCode.NONE
    finally:
        broker.close()
    again = HandlerBroker(
        tmp_path / "data",
        **{"group.share.heartbeat.interval.ms": "4000", "group.share.min.heartbeat.interval.ms": "1000"},
    )
    try:
        described = (await describe(again, "g"))[1]
        assert described["share.heartbeat.interval.ms"] == ("6000", ConfigSource.GROUP_CONFIG)
        assert described["share.auto.offset.reset"] == ("latest", ConfigSource.DEFAULT_CONFIG)
    finally:
        again.close()


async def test_group_configs_are_refused_outside_the_brokers_bounds_or_unknown_or_not_served(
    tmp_path: Path,
) -> None:
    broker = HandlerBroker(tmp_path / "data")
    try:
        refusals = {
            "share.session.timeout.ms": "1000",  # group.share.min.session.timeout.ms is 45000
            "share.record.lock.duration.ms": "70000",  # group.share.max.record.lock.duration.ms is 60000
            "share.delivery.count.limit": "11",  # group.share.max.delivery.count.limit is 10
            "share.partition.max.record.locks": "50",  # group.share.min.partition.max.record.locks is 100
            "share.isolation.level": "dirty",
            "share.auto.offset.reset": "by_duration:PT1H",
            "share.heartbeat.interval.ms": "x",
            "consumer.session.timeout.ms": "70000",  # group.consumer.max.session.timeout.ms is 60000
            "consumer.heartbeat.interval.ms": "1000",  # group.consumer.min.heartbeat.interval.ms is 5000
            "consumer.assignment.interval.ms": "100",
            "errors.deadletterqueue.topic.name": "dlq",
            "no.such.config": "1",
        }
        for name, value in refusals.items():
            code, message = await alter(broker, "g", (name, SET, value))
            assert code == ErrorCode.INVALID_CONFIG, name
            assert message is not None and name in message, message
        code, message = await alter(
            broker,
            "g",
            ("share.session.timeout.ms", SET, "50000"),
            ("share.heartbeat.interval.ms", SET, "15000"),
        )
        assert code == ErrorCode.NONE
        code, message = await alter(broker, "g", ("share.heartbeat.interval.ms", SET, "15000"))
        assert code == ErrorCode.NONE
        code, message = await alter(broker, "h", ("share.delete.me", DELETE, None))
        assert code == ErrorCode.INVALID_CONFIG
        code, message = await alter(broker, "", ("share.heartbeat.interval.ms", SET, "6000"))
        assert code == ErrorCode.INVALID_REQUEST
        assert (await describe(broker, "g"))[1]["share.session.timeout.ms"] == (
            "50000",
            ConfigSource.GROUP_CONFIG,
        )
    finally:
        broker.close()


async def test_a_session_timeout_not_above_the_heartbeat_interval_is_refused(tmp_path: Path) -> None:
    settings = {
        "group.share.max.heartbeat.interval.ms": "60000",
        "group.share.min.session.timeout.ms": "6000",
    }
    broker = HandlerBroker(tmp_path / "data", **settings)
    try:
        code, message = await alter(
            broker,
            "g",
            ("share.session.timeout.ms", SET, "10000"),
            ("share.heartbeat.interval.ms", SET, "10000"),
        )
        assert code == ErrorCode.INVALID_CONFIG
        assert message is not None and "share.session.timeout.ms" in message
    finally:
        broker.close()


async def test_group_configs_need_the_groups_describe_and_alter_configs_permissions(tmp_path: Path) -> None:
    log_dir = tmp_path / "data"
    broker = HandlerBroker(log_dir, **{"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"})
    broker.services.authorizer = authorizer_from_config(broker.config, LocalAclStore(log_dir))
    try:
        code, _ = await alter(broker, "g", ("share.heartbeat.interval.ms", SET, "6000"))
        assert code == ErrorCode.GROUP_AUTHORIZATION_FAILED
        assert (await describe(broker, "g"))[0] == ErrorCode.GROUP_AUTHORIZATION_FAILED
    finally:
        broker.close()


async def test_group_configs_are_refused_by_a_broker_without_a_place_to_keep_them(tmp_path: Path) -> None:
    broker = HandlerBroker(tmp_path / "data", zookeeper_mode=True)  # services.group_configs is None
    try:
        code, message = await alter(broker, "g", ("share.heartbeat.interval.ms", SET, "6000"))
        assert (code, message) == (ErrorCode.INVALID_REQUEST, "This broker does not keep group configs.")
        code, described = await describe(broker, "g")
        assert code == ErrorCode.NONE
        assert described["share.heartbeat.interval.ms"] == ("5000", ConfigSource.DEFAULT_CONFIG)
    finally:
        broker.close()


async def test_groups_with_configs_are_listed_by_list_config_resources(tmp_path: Path) -> None:
    broker = HandlerBroker(tmp_path / "data")
    try:
        await alter(broker, "b-group", ("share.heartbeat.interval.ms", SET, "6000"))
        await alter(broker, "a-group", ("share.auto.offset.reset", SET, "earliest"))
        await alter(broker, "gone", ("share.auto.offset.reset", SET, "earliest"))
        await alter(broker, "gone", ("share.auto.offset.reset", DELETE, None))
        listed = await broker.call(ListConfigResourcesRequest(resource_types=[GROUP]), 1)
        assert listed.error_code == ErrorCode.NONE
        assert [(r.resource_name, r.resource_type) for r in listed.config_resources] == [
            ("a-group", GROUP),
            ("b-group", GROUP),
        ]
    finally:
        broker.close()


async def test_a_group_name_too_long_for_a_znode_is_refused_before_anything_is_written(
    tmp_path: Path,
) -> None:
    broker = HandlerBroker(tmp_path / "data")
    try:
        code, _ = await alter(broker, "g" * 40_000, ("share.heartbeat.interval.ms", SET, "6000"))
        assert code == ErrorCode.INVALID_REQUEST
        assert broker.services.group_configs is not None and broker.services.group_configs.group_ids() == []
    finally:
        broker.close()


async def test_consumer_group_configs_are_set_described_and_checked_against_the_consumer_bounds(
    tmp_path: Path,
) -> None:
    """KIP-848's consumer.session.timeout.ms and consumer.heartbeat.interval.ms, as Kafka 4.4's
    GroupConfig: kept per group, described with the broker's group.consumer.* as default, checked
    against group.consumer.min/max.* and the session above the heartbeat. They were refused by name."""
    broker = HandlerBroker(
        tmp_path / "data",
        **{
            "group.consumer.min.session.timeout.ms": "10000",
            "group.consumer.min.heartbeat.interval.ms": "1000",
        },
    )
    try:
        code, message = await alter(
            broker,
            "g",
            ("consumer.session.timeout.ms", SET, "20000"),
            ("consumer.heartbeat.interval.ms", SET, "2000"),
        )
        assert (code, message) == (ErrorCode.NONE, None)
        code, described = await describe(broker, "g")
        assert code == ErrorCode.NONE
        assert described["consumer.session.timeout.ms"] == ("20000", ConfigSource.GROUP_CONFIG)
        assert described["consumer.heartbeat.interval.ms"] == ("2000", ConfigSource.GROUP_CONFIG)
        assert described["share.session.timeout.ms"] == ("45000", ConfigSource.DEFAULT_CONFIG)
        code, described = await describe(broker, "other")
        assert described["consumer.session.timeout.ms"] == ("45000", ConfigSource.DEFAULT_CONFIG)
        assert described["consumer.heartbeat.interval.ms"] == ("5000", ConfigSource.DEFAULT_CONFIG)
        code, message = await alter(broker, "g", ("consumer.session.timeout.ms", SET, "9000"))
        assert code == ErrorCode.INVALID_CONFIG
        assert message is not None and "consumer.session.timeout.ms" in message
        code, message = await alter(
            broker,
            "g",
            ("consumer.session.timeout.ms", SET, "12000"),
            ("consumer.heartbeat.interval.ms", SET, "12000"),
        )
        assert code == ErrorCode.INVALID_CONFIG
        assert message == "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"
        code, message = await alter(broker, "g", ("consumer.session.timeout.ms", DELETE, None))
        assert code == ErrorCode.NONE
        assert "consumer.session.timeout.ms" not in broker.services.group_configs.configs("g")  # type: ignore[union-attr]
    finally:
        broker.close()
