"""Kafka's text checkpoint files, leader epoch cache, topic metadata and LogConfig."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from odradek.storage.checkpoints import (
    MetaProperties,
    read_meta_properties,
    read_offset_checkpoint,
    read_partition_metadata,
    write_meta_properties,
    write_offset_checkpoint,
    write_partition_metadata,
)
from odradek.storage.config import LogConfig
from odradek.storage.errors import InvalidLogConfigError
from odradek.storage.leader_epoch import LeaderEpochCache
from odradek.storage.partition import TopicPartition, topic_id_from_string, topic_id_to_string
from odradek.storage.topic_store import TopicStore


def test_offset_checkpoint_is_kafka_text_format(tmp_path: Path) -> None:
    path = tmp_path / "recovery-point-offset-checkpoint"
    offsets = {TopicPartition("b-topic", 1): 7, TopicPartition("a", 0): 1234}
    write_offset_checkpoint(path, offsets)
    assert path.read_text() == "0\n2\na 0 1234\nb-topic 1 7\n"
    assert read_offset_checkpoint(path) == offsets
    assert read_offset_checkpoint(tmp_path / "missing") == {}


def test_partition_metadata_and_topic_id_encoding(tmp_path: Path) -> None:
    topic_id = uuid.UUID("12345678-1234-5678-1234-567812345678")
    write_partition_metadata(tmp_path, topic_id)
    text = (tmp_path / "partition.metadata").read_text()
    assert text == f"version: 0\ntopic_id: {topic_id_to_string(topic_id)}\n"
    assert len(topic_id_to_string(topic_id)) == 22
    assert read_partition_metadata(tmp_path) == topic_id
    assert topic_id_from_string(topic_id_to_string(topic_id)) == topic_id


def test_meta_properties_round_trip(tmp_path: Path) -> None:
    write_meta_properties(tmp_path, MetaProperties("Zk8ZT1lzRx2Vd8aHPgc2lQ", 3))
    text = (tmp_path / "meta.properties").read_text()
    assert "cluster.id=Zk8ZT1lzRx2Vd8aHPgc2lQ\n" in text and "broker.id=3\n" in text
    assert "version=0\n" in text
    assert read_meta_properties(tmp_path) == MetaProperties("Zk8ZT1lzRx2Vd8aHPgc2lQ", 3, 0)


def test_leader_epoch_cache_end_offsets_follow_kafka(tmp_path: Path) -> None:
    cache = LeaderEpochCache(tmp_path)
    assert cache.end_offset_for(0, 10) == (-1, -1)
    cache.assign(1, 0)
    cache.assign(1, 5)  # same epoch later: no change
    cache.assign(3, 20)
    cache.assign(5, 40)
    assert (tmp_path / "leader-epoch-checkpoint").read_text() == "0\n3\n1 0\n3 20\n5 40\n"
    assert cache.end_offset_for(5, 77) == (5, 77)  # the latest epoch ends at the log end
    assert cache.end_offset_for(3, 77) == (3, 40)
    assert cache.end_offset_for(4, 77) == (3, 40)  # unknown epoch: the one before it
    assert cache.end_offset_for(0, 77) == (0, 0)  # older than all: first known start
    assert cache.end_offset_for(9, 77) == (-1, -1)
    assert cache.epoch_for_offset(25) == 3
    cache.truncate_from_start(30)
    assert [(e.epoch, e.start_offset) for e in cache.entries] == [(3, 30), (5, 40)]
    cache.truncate_from_end(40)
    assert cache.latest_epoch == 3
    assert [(e.epoch, e.start_offset) for e in LeaderEpochCache.load(tmp_path).entries] == [(3, 30)]


def test_topic_store_survives_reload(tmp_path: Path) -> None:
    store = TopicStore(tmp_path)
    tid = uuid.uuid4()
    store.save_topic("orders", tid, 3, {"cleanup.policy": "compact", "retention.ms": 1000})
    store.save_topic("logs", uuid.uuid4(), 1)
    assert store.delete_topic("logs")
    assert not store.delete_topic("logs")
    topics = TopicStore(tmp_path).load_topics()
    assert list(topics) == ["orders"]
    assert topics["orders"].topic_id == tid
    assert topics["orders"].partitions == 3
    assert topics["orders"].configs == {"cleanup.policy": "compact", "retention.ms": 1000}


def test_log_config_from_kafka_names() -> None:
    config = LogConfig.from_mapping(
        {"segment.bytes": 2048, "cleanup.policy": "compact,delete", "retention.ms": -1, "unrelated.key": "x"}
    )
    assert config.segment_bytes == 2048 and config.compact and config.delete
    assert config.retention_ms == -1
    assert config.index_interval_bytes == 4096  # Kafka's default
    assert LogConfig.from_mapping(config.to_mapping()) == config
    with pytest.raises(InvalidLogConfigError):
        LogConfig.from_mapping({"segment.bytes": "lots"})
    with pytest.raises(InvalidLogConfigError):
        LogConfig.from_mapping({"cleanup.policy": "shred"})
