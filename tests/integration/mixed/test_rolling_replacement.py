"""The rolling replacement (issue #27): a 3-broker Apache Kafka 3.9 cluster holding data and serving
clients has each broker replaced by an odradek broker with the same broker.id, the same log directory
and the Kafka broker's own server.properties unchanged, one at a time, then back to Kafka the same
way, with clients running throughout.

Each step is what an operator does: a controlled shutdown (SIGTERM) of the broker, the other kind
started on its files (tests/support/mixed_cluster.py's `replace`), a wait until every partition's ISR
is full again, then a preferred leader election (as `kafka-leader-election.sh`, since the file turns
`auto.leader.rebalance.enable` off) so the new broker leads its share. Meanwhile an idempotent
`acks=all` producer writes to a topic at RF=3 and `min.insync.replicas=2`, and a consumer group reads
it `read_committed`. At the end every acknowledged record must be in the topic exactly once and in
the order acknowledged, and the consumer must have seen each of them.

`make test` does one round (each broker to odradek and back); `make mixed-long` sets
ODRADEK_ROLLING_ROUNDS=3.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator

import pytest

from tests.integration.cluster.test_kafka_server_properties import KAFKA_3_9_SERVER_PROPERTIES
from tests.support.interop import wait_until
from tests.support.mixed_clients import ProducerUnderLoad, elect_preferred_leaders
from tests.support.mixed_cluster import PATIENCE_S, Kind, MixedCluster
from tests.support.requirements import require_module
from tests.support.txn_reader import read_committed_values
from tests.support.zookeeper import ZooKeeperServer

pytestmark = pytest.mark.timeout(900)

BROKERS = (1, 2, 3)
TOPIC = "rolling"
PARTITIONS = 6
ROUNDS = int(os.environ.get("ODRADEK_ROLLING_ROUNDS", "1"))
#: The tuning of Kafka 3.9's own config/server.properties (its paths, ids, listeners and ZooKeeper are
#: the mixed cluster's) and what an operator of a replicated cluster sets beside it: every broker of
#: either kind reads this same file.
OPERATORS_SETTINGS = {
    **{
        key: value
        for key, value in KAFKA_3_9_SERVER_PROPERTIES.items()
        if key not in {"broker.id", "log.dirs", "zookeeper.connect"} and "replication.factor" not in key
    },
    "transaction.state.log.min.isr": "2",
    "default.replication.factor": "3",
    "min.insync.replicas": "2",
    "unclean.leader.election.enable": "false",
    "queued.max.requests": "500",
    "compression.type": "producer",
    "controlled.shutdown.enable": "true",
}


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[MixedCluster]:
    require_module("confluent_kafka")
    kinds = dict.fromkeys(BROKERS, Kind.KAFKA)
    cluster = MixedCluster(tmp_path_factory.mktemp("rolling"), zookeeper_server, kinds, OPERATORS_SETTINGS)
    try:
        yield cluster.start(first=1)
    finally:
        cluster.stop()


class CommittedReader:
    """A consumer group member reading the topic read_committed from a thread, keeping every value."""

    def __init__(self, bootstrap: str) -> None:
        from confluent_kafka import Consumer

        self.seen: set[bytes] = set()
        self.errors: list[str] = []
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "rolling-readers",
                "isolation.level": "read_committed",
                "auto.offset.reset": "earliest",
            }
        )
        self._consumer.subscribe([TOPIC])
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rolling-reader", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stopping.is_set():
            message = self._consumer.poll(0.2)
            if message is None:
                continue
            if message.error() is not None:
                if message.error().fatal():
                    self.errors.append(str(message.error()))
                continue
            self.seen.add(message.value())

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(30)
        self._consumer.close()


def test_each_kafka_broker_replaced_by_odradek_and_back_loses_and_duplicates_nothing(
    cluster: MixedCluster,
) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)])[TOPIC].result(60)
    cluster.wait_in_sync(TOPIC, PARTITIONS)
    load = ProducerUnderLoad(cluster.bootstrap(), TOPIC, PARTITIONS, "rolling").start()
    reader = CommittedReader(cluster.bootstrap())
    try:
        load.wait_acknowledged(300)
        for _ in range(ROUNDS):
            for wanted in (Kind.ODRADEK, Kind.KAFKA):
                for node in BROKERS:
                    _replace(cluster, node, wanted, load)
        acknowledged = load.stop()
        assert acknowledged.errors == [], acknowledged.errors
        cluster.wait_replicas_agree(TOPIC, PARTITIONS)
        stored = read_committed_values(cluster.bootstrap(), TOPIC, PARTITIONS, timeout_s=60)
        for partition, values in acknowledged.values.items():
            kept = stored[partition]
            assert len(kept) == len(set(kept)), f"partition {partition} holds duplicates"
            assert [v for v in kept if v in set(values)] == values, f"partition {partition} lost or reordered"
        every = {v for values in acknowledged.values.values() for v in values}
        wait_until(
            lambda: every <= reader.seen, PATIENCE_S, "the consumer seeing every acknowledged record", 0.5
        )
        assert reader.errors == []
    finally:
        load.stop()
        reader.stop()


def _replace(cluster: MixedCluster, node: int, wanted: Kind, load: ProducerUnderLoad) -> None:
    """One step: broker `node` replaced by a `wanted` one, its ISR full again, leaders preferred, and
    the producer acknowledged again since."""
    if cluster.kinds[node] is wanted:
        return
    assert cluster.replace(node) is wanted
    cluster.wait_registered()
    cluster.wait_in_sync(TOPIC, PARTITIONS)
    elect_preferred_leaders(cluster, TOPIC, PARTITIONS)
    load.wait_acknowledged(load.acknowledged.count + 100)
