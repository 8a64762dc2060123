"""queued.max.requests at its least, 1, on three brokers: producers with five acks=all requests in flight
each, and replication to two followers, all still complete. A produce waiting for its followers must
never hold up the reading of their fetches (the requests behind it are not counted as waiting, as in
Kafka they would still be in the socket); the setting was refused before."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from typing import Any

from tests.integration.cluster.test_three_brokers import BROKER_IDS, Cluster, _all_known
from tests.support.interop import wait_until
from tests.support.requirements import require_module
from tests.support.zookeeper import ZooKeeperServer

RECORDS_PER_PRODUCER = 2000
PRODUCERS = 3


def test_acks_all_pipelined_producers_complete_with_queued_max_requests_one(
    zookeeper_server: ZooKeeperServer, tmp_path: Path
) -> None:
    require_module("confluent_kafka")
    import confluent_kafka
    from confluent_kafka.admin import AdminClient, NewTopic

    cluster = Cluster(tmp_path, f"{zookeeper_server.connect_string}/odradek-{uuid.uuid4().hex[:8]}")
    for broker in cluster.brokers.values():
        broker.overrides["queued.max.requests"] = "1"
    try:
        for broker in cluster.brokers.values():
            broker.start()
        wait_until(lambda: _all_known(cluster), 60, "three brokers in Metadata", interval=0.1)
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
        admin.create_topics([NewTopic("bounded", 3, replication_factor=3)])["bounded"].result(30)
        failures: list[Any] = []
        delivered = [0] * PRODUCERS

        def produce(index: int) -> None:
            producer = confluent_kafka.Producer(
                {
                    "bootstrap.servers": cluster.bootstrap(),
                    "acks": "all",
                    "max.in.flight.requests.per.connection": 5,
                    "linger.ms": 0,
                    "batch.num.messages": 10,  # many small requests, pipelined
                    "message.timeout.ms": 120_000,
                }
            )

            def done(error: Any, _: Any) -> None:
                if error is None:
                    delivered[index] += 1
                else:
                    failures.append(error)

            for number in range(RECORDS_PER_PRODUCER):
                producer.produce("bounded", f"{index}-{number}".encode(), on_delivery=done)
                producer.poll(0)
            assert producer.flush(150) == 0

        threads = [threading.Thread(target=produce, args=(index,)) for index in range(PRODUCERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(180)
        assert not failures, failures[:3]
        assert delivered == [RECORDS_PER_PRODUCER] * PRODUCERS
        # and the followers have it all: every partition's ISR is still the three brokers
        for node in BROKER_IDS:
            (topic,) = cluster.metadata(node, ["bounded"]).topics
            assert all(sorted(p.isr_nodes) == list(BROKER_IDS) for p in topic.partitions)
    finally:
        for broker in cluster.brokers.values():
            broker.stop()
