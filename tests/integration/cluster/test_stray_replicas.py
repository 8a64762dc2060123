"""A cluster member never serves a log left from a deleted topic as the new topic of the same name.

The replica's directory, `orders-0`, comes back (restored from a backup, a disk put back) after the
topic was deleted and made again: its `partition.metadata` names the old topic id. The first
LeaderAndIsr for the partition carries the new id; the old log is set aside as `-stray` (KRaft Kafka's
rule) and the replica starts empty. It used to be served as the new topic, its old records first."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from tests.support.broker_process import BrokerProcess
from tests.support.interop import consume_partition_zero, create_topic, produce_acknowledged, wait_until


def _created(bootstrap: str, name: str) -> bool:
    """Whether CreateTopics made `name`; False while the name is still taken."""
    try:
        create_topic(bootstrap, name)
    except KafkaException as error:
        if error.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS:
            return False
        raise
    return True


pytestmark = pytest.mark.timeout(180)


def test_a_restored_replica_of_a_deleted_topic_is_set_aside_and_the_new_topic_starts_empty(
    zookeeper_connect: str, tmp_path: Path
) -> None:
    data = tmp_path / "broker"
    settings = {
        "zookeeper.connect": zookeeper_connect,
        "zookeeper.session.timeout.ms": "6000",
        "node.id": "1",
    }
    broker = BrokerProcess(data, settings, host="127.0.0.2").start(timeout=60)
    try:
        create_topic(broker.bootstrap, "orders")
        assert produce_acknowledged(broker.bootstrap, "orders", [b"a", b"b", b"c"], timeout=60) == [0, 1, 2]
        broker.stop()
        backup = tmp_path / "orders-0-backup"
        shutil.copytree(data / "orders-0", backup)
        broker.start(timeout=60)
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.delete_topics(["orders"], operation_timeout=30)["orders"].result(40)
        wait_until(lambda: not (data / "orders-0").exists(), 30, "the old replica deleted")
        # The replica's directory goes before the controller ends the deletion; until it has, the
        # name is taken (TOPIC_ALREADY_EXISTS, "marked for deletion"), as in Kafka.
        wait_until(lambda: _created(broker.bootstrap, "orders"), 30, "the topic made again")
        wait_until(lambda: (data / "orders-0").exists(), 30, "the new replica made")
        broker.stop()
        shutil.rmtree(data / "orders-0")
        shutil.copytree(backup, data / "orders-0")  # the old replica comes back

        broker.start(timeout=60)
        assert produce_acknowledged(broker.bootstrap, "orders", [b"new"], timeout=60) == [0]
        # everything the partition holds from offset 0: the new record alone
        assert consume_partition_zero(broker.bootstrap, "orders", 2, timeout=5) == [b"new"]
        strays = [p.name for p in data.iterdir() if p.name.endswith("-stray")]
        assert len(strays) == 1 and strays[0].startswith("orders-0.")
        assert "set aside as orders-0." in broker.log_text()
    finally:
        broker.stop()
