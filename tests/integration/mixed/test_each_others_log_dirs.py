"""Each other's log directories (issue #27): one broker, id 1, whose log directory is written by Apache
Kafka 3.9, then opened by odradek, by Kafka again and so on, each switch after a controlled shutdown or
a SIGKILL (tests/support/mixed_cluster.py's `replace`: same broker.id, log directory, ZooKeeper chroot
and so cluster id, and Kafka's own server.properties).

The data covers what a log directory holds: several segments with their offset and time indexes, a
transaction aborted between two committed ones (.txnindex), idempotent producers' state (producer
snapshots), leader epochs (leader-epoch-checkpoint, bumped by each restart), records deleted below an
offset (log-start-offset checkpoint) and a compacted topic. After every switch each partition must be
served exactly as before it (tests/support/partition_image.py: every batch record by record, log start
offset, high watermark, last stable offset, aborted transactions and producer state), neither kind may
have dropped a producer snapshot the other wrote as unreadable, a retry of a producer's batch now below
the log start offset (its state is only in the snapshots) must be answered as a duplicate, not
appended again, and an idempotent producer kept
running across the switches must get no error (no duplicate or out-of-sequence answer) and have every
record it was acknowledged stored once, in order.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.protocol.error_codes import ErrorCode
from tests.support.broker_process import BrokerProcess
from tests.support.interop import wait_until
from tests.support.mixed_clients import Acknowledged, idempotent_producer, producer_id_from
from tests.support.mixed_cluster import PATIENCE_S, Kind, MixedCluster
from tests.support.partition_image import PartitionImage, partition_image
from tests.support.raw_client import RawClient
from tests.support.requirements import require_module
from tests.support.txn_cluster import commit_abort_commit
from tests.support.txn_wire import produce
from tests.support.zookeeper import ZooKeeperServer

pytestmark = pytest.mark.timeout(600)

BROKER = 1
PLAIN = "logdir-plain"
COMPACTED = "logdir-compacted"
TRIMMED = "logdir-trimmed"
PARTITIONS = 2
#: Small segments: several per partition, each with its indexes.
SEGMENT_BYTES = "8192"
RECORDS = 400


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[MixedCluster]:
    require_module("confluent_kafka")
    cluster = MixedCluster(
        tmp_path_factory.mktemp("logdirs"),
        zookeeper_server,
        {BROKER: Kind.KAFKA},
        {"log.cleaner.backoff.ms": "500"},  # the compacted topic is cleaned soon after it is dirty
    )
    try:
        yield cluster.start()
    finally:
        cluster.stop()


def test_each_kind_serves_exactly_what_the_other_wrote_after_a_clean_stop_and_a_sigkill(
    cluster: MixedCluster,
) -> None:
    from confluent_kafka import Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    bootstrap = cluster.bootstrap()
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = {
        PLAIN: {"segment.bytes": SEGMENT_BYTES, "segment.index.bytes": "4096"},
        COMPACTED: {
            "segment.bytes": SEGMENT_BYTES,
            "cleanup.policy": "compact",
            "min.cleanable.dirty.ratio": "0.01",
        },
        TRIMMED: {"segment.bytes": SEGMENT_BYTES},
    }
    created = admin.create_topics([NewTopic(t, PARTITIONS, 1, config=c) for t, c in topics.items()])
    for future in created.values():
        future.result(60)

    # A producer's one batch, soon below the log start offset (deleted records): only the producer
    # snapshots carry its state over, so only they let each kind see a retry of it as a duplicate.
    retried = producer_id_from(cluster, BROKER)
    assert _send_retried_batch(cluster, retried) == (ErrorCode.NONE, 0)

    # Kafka writes: an idempotent producer (kept across every switch), keyed records with headers on
    # every topic, three transactions (commit, abort, commit), records deleted below an offset.
    producer = idempotent_producer(bootstrap, **{"delivery.timeout.ms": 120_000})
    acknowledged = Acknowledged()
    _produce(producer, acknowledged, "kafka", RECORDS)
    transactional = Producer({"bootstrap.servers": bootstrap, "transactional.id": "logdir-txn"})
    transactional.init_transactions(60)
    commit_abort_commit(transactional, PLAIN, PARTITIONS)
    admin.delete_records([TopicPartition(TRIMMED, p, RECORDS // 8) for p in range(PARTITIONS)])[
        TopicPartition(TRIMMED, 0, RECORDS // 8)
    ].result(60)
    _produce(producer, acknowledged, "kafka-after", RECORDS // 4)
    assert acknowledged.errors == []

    _wait_compacted(cluster)
    before = _images(cluster)
    assert all(i.log_start_offset == RECORDS // 8 for (t, _), i in before.items() if t == TRIMMED)
    assert any(i.aborted for (t, _), i in before.items() if t == PLAIN)

    for step, crash in enumerate((False, True, True, False)):
        now = cluster.replace(BROKER, crash=crash)
        after = _images_when_led(cluster)
        changed = {k: (before[k], after[k]) for k in before if before[k] != after[k]}
        assert not changed, f"{now.value} (step {step}, crash={crash}) serves otherwise: {changed}"
        assert _snapshots_dropped(cluster) == [], f"{now.value} (step {step}) dropped the other's snapshots"
        assert _send_retried_batch(cluster, retried) == (ErrorCode.NONE, 0), f"{now.value} (step {step})"
        host, port = cluster.kafka.addresses[BROKER]
        assert partition_image(host, port, TRIMMED, 0) == after[(TRIMMED, 0)], "the retry was appended again"
        _produce(producer, acknowledged, f"{now.value}-{step}", RECORDS // 4)
        assert acknowledged.errors == [], f"after the switch to {now.value}: {acknowledged.errors}"
        before = _images(cluster)

    stored = {p: _values(before[(PLAIN, p)]) for p in range(PARTITIONS)}
    for partition, values in acknowledged.values.items():
        assert [v for v in stored[partition] if v in set(values)] == values


def _produce(producer: object, acknowledged: Acknowledged, tag: str, count: int) -> None:
    """`count` keyed records with headers on each topic, the plain topic's acknowledgements kept."""
    for topic in (PLAIN, COMPACTED, TRIMMED):
        for i in range(count):
            on_delivery = acknowledged.on_delivery if topic == PLAIN else None
            producer.produce(  # type: ignore[attr-defined]
                topic,
                key=f"key-{i % 37}".encode(),
                value=f"{tag}-{i}".encode(),
                headers=[("tag", tag.encode()), ("i", str(i).encode())],
                partition=i % PARTITIONS,
                on_delivery=on_delivery,
            )
            producer.poll(0)  # type: ignore[attr-defined]
    assert producer.flush(PATIENCE_S) == 0  # type: ignore[attr-defined]


def _images(cluster: MixedCluster) -> dict[tuple[str, int], PartitionImage]:
    host, port = cluster.kafka.addresses[BROKER]
    return {
        (t, p): partition_image(host, port, t, p)
        for t in (PLAIN, COMPACTED, TRIMMED)
        for p in range(PARTITIONS)
    }


def _images_when_led(cluster: MixedCluster) -> dict[tuple[str, int], PartitionImage]:
    """Once the restarted broker leads every partition again."""
    for topic in (PLAIN, COMPACTED, TRIMMED):
        cluster.wait_in_sync(topic, PARTITIONS)
    return _images(cluster)


def _wait_compacted(cluster: MixedCluster) -> None:
    """Until Kafka's cleaner has compacted each partition of the compacted topic (records are gone
    below the high watermark), then no more: a cleaning between two images would change them."""
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

    host, port = cluster.kafka.addresses[BROKER]

    def compacted() -> bool:
        images = [partition_image(host, port, COMPACTED, p) for p in range(PARTITIONS)]
        return all(sum(len(b.records) for b in i.batches) < i.high_watermark for i in images)

    wait_until(compacted, PATIENCE_S, f"{COMPACTED} compacted by Kafka's cleaner", 0.5)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    never = ConfigEntry("min.cleanable.dirty.ratio", "1", incremental_operation=AlterConfigOpType.SET)
    (done,) = admin.incremental_alter_configs(
        [ConfigResource("topic", COMPACTED, incremental_configs=[never])]
    ).values()
    done.result(60)


def _send_retried_batch(cluster: MixedCluster, producer_id: int) -> tuple[ErrorCode, int]:
    """The same idempotent batch (sequence 0) to the trimmed topic's partition 0: its error and offset."""
    host, port = cluster.kafka.addresses[BROKER]
    with RawClient(port, timeout=10, host=host) as client:
        return produce(client, TRIMMED, [b"retried-0", b"retried-1"], pid=producer_id, sequence=0)


def _snapshots_dropped(cluster: MixedCluster) -> list[str]:
    """What either kind logged of a producer snapshot it could not read (and deleted)."""
    logs = [cluster.kafka.work / f"kafka-{BROKER}.log", cluster.odradek[BROKER].log_path]
    texts = [path.read_text(errors="replace") for path in logs if path.exists()]
    marks = ("Failed to load producer snapshot", "unreadable producer snapshot")
    return [line for text in texts for line in text.splitlines() if any(m in line for m in marks)]


def _values(image: PartitionImage) -> list[bytes]:
    return [r.value or b"" for b in image.batches if not b.is_control for r in b.records]


@pytest.mark.parametrize(
    ("override", "refusal"),
    [
        ({"broker.id": "2"}, "does not match the stored node id 1"),
        ({"zookeeper.connect": "another-cluster"}, "cluster"),
    ],
    ids=["another-broker-id", "another-cluster"],
)
def test_odradek_refuses_a_kafka_log_dir_of_another_broker_or_cluster_and_touches_nothing(
    cluster: MixedCluster, override: dict[str, str], refusal: str
) -> None:
    """As Kafka (InconsistentBrokerIdException, InconsistentClusterIdException): meta.properties names
    the broker and cluster the data belongs to; a start as another stops in one line."""
    if BROKER in cluster.running():
        cluster.stop_broker(BROKER)
    log_dir = cluster.kafka.log_dir(BROKER)
    files = _listing(log_dir)
    if override.get("zookeeper.connect") == "another-cluster":
        override = {"zookeeper.connect": f"{cluster.zookeeper.connect_string}/another-{cluster.chroot[1:]}"}
    host, port = cluster.kafka.addresses[BROKER]
    broker = BrokerProcess(
        log_dir, override, port=port, host=host, config_file=cluster.kafka.config_file(BROKER)
    ).start(wait=False)
    assert broker.process is not None
    code = broker.process.wait(PATIENCE_S)
    assert code != 0, broker.log_text()
    assert refusal in broker.log_text(), broker.log_text()
    assert _listing(log_dir) == files


def _listing(log_dir: Path) -> dict[str, tuple[int, int]]:
    """Every file under the log dir, with its size and modification time (the .lock aside)."""
    return {
        str(p.relative_to(log_dir)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(log_dir.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }
