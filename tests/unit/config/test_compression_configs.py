"""compression.type other than producer, and KIP-390's compression.<codec>.level, at topic and broker
level: refused before ("recompression is not built yet"), so every tool creating topics as Kafka users
do failed; they are real now (the log stores batches in the codec they name)."""

from __future__ import annotations

import pytest

from odradek.config import BROKER_CONFIGS, TOPIC_CONFIGS, BrokerConfig, parse_topic_configs
from odradek.config.broker_checks import refuse_unsupported_broker_configs
from odradek.config.topic import resolve_topic_config
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.records import Compression, TargetCompression
from odradek.storage.config import LogConfig

CODECS = {
    "uncompressed": Compression.NONE,
    "gzip": Compression.GZIP,
    "snappy": Compression.SNAPPY,
    "lz4": Compression.LZ4,
    "zstd": Compression.ZSTD,
}


@pytest.mark.parametrize("codec", [*CODECS, "producer"])
def test_a_topic_created_or_altered_with_any_compression_type_is_accepted(codec: str) -> None:
    assert parse_topic_configs({"compression.type": codec}) == {"compression.type": codec}
    overrides = {"compression.type": codec}
    log_config = LogConfig.from_mapping(dict(resolve_topic_config(overrides, BrokerConfig({}))))
    expected = CODECS.get(codec)
    assert (log_config.compression.compression if log_config.compression else None) is expected


@pytest.mark.parametrize(
    ("name", "value", "target"),
    [
        ("compression.gzip.level", "9", TargetCompression(Compression.GZIP, 9)),
        ("compression.lz4.level", "17", TargetCompression(Compression.LZ4, 17)),
        ("compression.zstd.level", "-5", TargetCompression(Compression.ZSTD, -5)),
    ],
)
def test_a_topic_s_codec_level_is_accepted_and_used(name: str, value: str, target: TargetCompression) -> None:
    codec = {v: k for k, v in CODECS.items()}[target.compression]
    overrides = {"compression.type": codec, name: value}
    assert parse_topic_configs(overrides)
    log_config = LogConfig.from_mapping(dict(resolve_topic_config(overrides, BrokerConfig({}))))
    assert log_config.compression == target


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("compression.gzip.level", "0", "Value must be between 1 and 9 or equal to -1"),
        ("compression.lz4.level", "18", "Value must be no more than 17"),
        ("compression.zstd.level", "23", "Value must be no more than 22"),
    ],
)
def test_a_level_outside_kafkas_range_is_invalid_config(name: str, value: str, message: str) -> None:
    with pytest.raises(KafkaError) as caught:
        parse_topic_configs({name: value})
    assert caught.value.error_code is ErrorCode.INVALID_CONFIG
    assert caught.value.error_message == f"Invalid value {value} for configuration {name}: {message}"


def test_the_broker_s_compression_type_and_level_are_every_topic_s_default() -> None:
    broker = BrokerConfig({"compression.type": "zstd", "compression.zstd.level": "12"})
    assert broker.compression_type == "zstd"
    resolved = resolve_topic_config({}, broker)
    assert LogConfig.from_mapping(dict(resolved)).compression == TargetCompression(Compression.ZSTD, 12)
    own = resolve_topic_config({"compression.type": "producer"}, broker)
    assert LogConfig.from_mapping(dict(own)).compression is None


def test_the_broker_s_compression_settings_can_be_altered_at_run_time() -> None:
    refuse_unsupported_broker_configs(
        {
            "compression.type": "gzip",
            "compression.gzip.level": "1",
            "compression.lz4.level": "4",
            "compression.zstd.level": "-1",
        }
    )


def test_no_compression_setting_documents_itself_as_refused() -> None:
    for key in (
        TOPIC_CONFIGS["compression.type"],
        TOPIC_CONFIGS["compression.zstd.level"],
        BROKER_CONFIGS["compression.type"],
        BROKER_CONFIGS["compression.lz4.level"],
    ):
        assert not key.refused and "Refused" not in key.documentation
