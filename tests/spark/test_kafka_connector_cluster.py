"""Spark's own Kafka connector against the 3-broker ZooKeeper cluster (tests/support/txn_cluster.py, RF=3,
min.insync.replicas 2): a batch write with acks=all spread over every broker's partitions, read back
batch and streaming through Spark's `kafka` format, and by librdkafka independently."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.spark.kafka_helpers import consume_all
from tests.support.txn_cluster import BROKER_IDS, Cluster, running_cluster
from tests.support.zookeeper import ZooKeeperServer, zookeeper_server

__all__ = ["zookeeper_server"]  # the fixture
PARTITIONS = 6
ROWS = 60


@pytest.fixture(scope="module")
def cluster(zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(
        zookeeper_server.connect_string, tmp_path_factory.mktemp("spark-connector-cluster")
    ) as made:
        yield made


def test_write_then_read_batch_and_streaming_across_three_brokers(
    kafka_connector: Any, cluster: Cluster, checkpoint: str
) -> None:
    cluster.create("cluster-rows", PARTITIONS)
    assert len(set(cluster.leaders("cluster-rows", 1).values())) == len(BROKER_IDS), "leaders spread"
    bootstrap = cluster.bootstrap()
    rows = kafka_connector.createDataFrame(
        [(f"k{i}", f"v{i}", i % PARTITIONS) for i in range(ROWS)], "key STRING, value STRING, partition INT"
    )
    rows.coalesce(1).write.format("kafka").option("kafka.bootstrap.servers", bootstrap).option(
        "kafka.acks", "all"
    ).option("topic", "cluster-rows").save()
    expected = sorted(
        (i % PARTITIONS, n, b"k%d" % i, b"v%d" % i)
        for p in range(PARTITIONS)
        for n, i in enumerate(i for i in range(ROWS) if i % PARTITIONS == p)
    )
    independent = consume_all(bootstrap, "cluster-rows", range(PARTITIONS))
    assert [(m.partition, m.offset, m.key, m.value) for m in independent] == expected

    read = kafka_connector.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
    frame = read.option("subscribe", "cluster-rows").load()
    assert sorted((r.partition, r.offset, r.key, r.value) for r in frame.collect()) == expected

    seen: list[tuple[Any, ...]] = []
    stream = (
        kafka_connector.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", "cluster-rows")
        .option("startingOffsets", "earliest")
        .load()
    )
    query = (
        stream.writeStream.foreachBatch(
            lambda batch, _: seen.extend(
                tuple(r) for r in batch.select("partition", "offset", "key", "value").collect()
            )
        )
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    try:
        query.awaitTermination(120)
        assert query.exception() is None, query.exception()
    finally:
        query.stop()
    assert sorted(seen) == expected
