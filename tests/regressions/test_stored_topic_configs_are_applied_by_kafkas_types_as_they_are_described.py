"""A topic's overrides read from ZooKeeper were described by Kafka's types (config.types.parse_value: an
INT within 32 bits, digits only) but applied to the logs by Python's int(): a value no Kafka broker
parses (20 digits, "1_000", Unicode digits...) written there by another tool was applied by odradek
alone, and a 20-digit segment.bytes with preallocate made every new log of the topic fail with an
OverflowError, a LeaderAndIsr's replica never created. Now the logs parse a stored value as describe
and Kafka's ConfigDef do, and one that does not parse is refused (InvalidLogConfigError: the callers
log it and keep the configs they had)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from odradek.config.broker import BrokerConfig
from odradek.config.topic import InvalidConfigValue, resolve_stored_topic_config
from odradek.storage.config import LogConfig
from odradek.storage.errors import InvalidLogConfigError
from odradek.storage.log_manager import LogManager

BROKER = BrokerConfig({"node.id": "1", "log.dirs": "/nonexistent"}, warn_unknown=False)


@pytest.mark.parametrize(
    "overrides",
    [
        {"segment.bytes": "99999999999999999999", "preallocate": "true"},
        {"segment.bytes": "2147483648"},  # an INT: one past Java's Integer.MAX_VALUE
        {"retention.ms": "1_000"},
        {"max.message.bytes": "1e6"},
        {"segment.ms": "9223372036854775808"},  # a LONG: one past Long.MAX_VALUE
        {"min.cleanable.dirty.ratio": "0x1p-1"},
        {"preallocate": "yes"},
    ],
)
def test_a_stored_topic_config_that_does_not_parse_by_kafkas_type_is_not_applied_to_logs(
    tmp_path: Path, overrides: dict[str, str]
) -> None:
    with pytest.raises(InvalidConfigValue):  # described as INVALID_CONFIG...
        resolve_stored_topic_config(overrides, BROKER)
    logs = LogManager([tmp_path], LogConfig())
    with pytest.raises(InvalidLogConfigError):  # ...and not applied
        logs.topic_log_config(overrides)


def test_a_stored_topic_config_within_kafkas_types_is_applied_as_described(tmp_path: Path) -> None:
    overrides = {"segment.bytes": " 524288 ", "retention.ms": "-1", "preallocate": "TRUE"}
    described = resolve_stored_topic_config(overrides, BROKER)
    logs = LogManager([tmp_path], LogConfig())
    config = logs.topic_log_config(overrides)
    assert (config.segment_bytes, config.retention_ms, config.preallocate) == (524288, -1, True)
    assert (described.segment_bytes, described.retention_ms) == (524288, -1)
    job = logs.prepare_partitions("t", [0], topic_id=uuid.uuid4(), config=config)
    job.run()
    logs.complete_partitions(job)
    assert logs.get_log("t", 0) is not None
