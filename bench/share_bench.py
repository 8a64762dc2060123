"""Share-group consumption with acknowledgements on a 3-broker cluster: records/s, and how many
WriteShareGroupState requests the partitions' leaders send their share coordinators per acknowledged
batch (each share partition writes each state change by itself: is batching them per coordinator, as
Kafka's PersisterStateManager does, worth it?).

    .venv/bin/python bench/share_bench.py [--records 20000] [--partitions 6] [--members 1]

One share consumer per member, written on odradek's codec (ShareGroupHeartbeat, then ShareFetch to
each leader with the previous batch's acknowledgements piggybacked, as KafkaShareConsumer does in
its default mode). The records are produced (acks=all) once the members hold their sessions, since
a share group starts at the high watermark. RPCs are read from every broker's metrics endpoint
(`odradek_requests{api="write_share_group_state"}`); writes to a coordinator on the leader's own
broker are in-process and not counted.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from confluent_kafka import Producer

from odradek.client.connection import BrokerConnection
from odradek.protocol.messages import create_topics as ct
from odradek.protocol.messages import find_coordinator as fc
from odradek.protocol.messages import metadata as md
from odradek.protocol.messages import share_fetch as sf
from odradek.protocol.messages import share_group_heartbeat as hb
from tests.support.broker_process import BrokerProcess
from tests.support.ports import free_port
from tests.support.zookeeper import ZooKeeperServer

ACCEPT = 1
TOPIC = "share-bench"
GROUP = "share-bench"
_WRITES = re.compile(r'^odradek_requests_total\{api="write_share_group_state"\} ([0-9.e+]+)$', re.M)


@dataclass
class Member:
    member_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    acknowledged: int = 0
    fetches_with_acks: int = 0
    acked_batches: int = 0


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--members", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="share-bench-") as base:
        zookeeper = ZooKeeperServer(Path(base)).start()
        metrics = {node: free_port() for node in (1, 2, 3)}
        brokers = {
            node: BrokerProcess(
                Path(base) / f"broker-{node}",
                {
                    "node.id": str(node),
                    "zookeeper.connect": f"{zookeeper.connect_string}/bench",
                    "offsets.topic.replication.factor": "3",
                    "min.insync.replicas": "2",
                    "auto.leader.rebalance.enable": "false",
                    "group.coordinator.rebalance.protocols": "classic,consumer,share",
                    "metrics.port": str(metrics[node]),
                },
                host=f"127.0.0.{node + 1}",
            )
            for node in (1, 2, 3)
        }
        try:
            for broker in brokers.values():
                broker.start()
            run(args, brokers, metrics)
        finally:
            for broker in brokers.values():
                broker.stop()
            zookeeper.stop()


def run(args: argparse.Namespace, brokers: dict[int, BrokerProcess], metrics: dict[int, int]) -> None:
    bootstrap = ",".join(b.bootstrap for b in brokers.values())
    admin = _connect(brokers[1].bootstrap)
    created = admin.request(
        ct.CreateTopicsRequest(
            topics=[ct.CreatableTopic(name=TOPIC, num_partitions=args.partitions, replication_factor=3)],
            timeout_ms=30_000,
        ),
        5,
    )
    assert created.topics[0].error_code == 0, created
    topic_id, leaders = _leaders(admin, args.partitions)
    members = [Member() for _ in range(args.members)]
    sessions = [_join(admin, brokers, m, topic_id, leaders) for m in members]
    before = _writes(metrics)
    # small batches: the acknowledgements, not the reads, are what is measured
    producer = Producer(
        {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, "batch.num.messages": 20}
    )
    for i in range(args.records):
        producer.produce(TOPIC, value=b"%08d" % i, partition=i % args.partitions)
        if i % 1000 == 0:
            producer.poll(0)
    producer.flush(60)
    started = time.perf_counter()
    threads = [
        threading.Thread(target=_consume, args=(m, s, topic_id, args.records, members))
        for m, s in zip(members, sessions, strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    writes = _writes(metrics) - before
    acked = sum(m.acknowledged for m in members)
    batches = sum(m.acked_batches for m in members)
    fetches = sum(m.fetches_with_acks for m in members)
    print(
        f"records {acked} in {elapsed:.2f} s: {acked / elapsed:,.0f} records/s; "
        f"ShareFetch with acks {fetches}, acknowledged partition batches {batches}; "
        f"WriteShareGroupState RPCs {writes:.0f}: {writes / max(fetches, 1):.2f} per ShareFetch, "
        f"{writes / max(batches, 1):.2f} per partition batch",
        flush=True,
    )


def _connect(address: str) -> BrokerConnection:
    host, port = address.rsplit(":", 1)
    return BrokerConnection(host, int(port), 30.0)


def _leaders(admin: BrokerConnection, partitions: int) -> tuple[uuid.UUID, dict[int, int]]:
    for _ in range(100):
        answer = admin.request(md.MetadataRequest(topics=[md.MetadataRequestTopic(name=TOPIC)]), 12)
        topic = answer.topics[0]
        leaders = {p.partition_index: p.leader_id for p in topic.partitions if p.leader_id >= 0}
        if topic.error_code == 0 and len(leaders) == partitions:
            return topic.topic_id, leaders
        time.sleep(0.1)
    raise RuntimeError("the topic's leaders are not known")


def _join(
    admin: BrokerConnection,
    brokers: dict[int, BrokerProcess],
    member: Member,
    topic_id: uuid.UUID,
    leaders: dict[int, int],
) -> dict[int, tuple[BrokerConnection, list[int]]]:
    """Join the group until assigned, then open a share session on each leader of its partitions."""
    for _ in range(200):
        found = admin.request(fc.FindCoordinatorRequest(key_type=0, coordinator_keys=[GROUP]), 4)
        if found.coordinators[0].error_code == 0:
            break
        time.sleep(0.1)
    coordinator = _connect(brokers[found.coordinators[0].node_id].bootstrap)
    epoch, assigned = 0, []
    for _ in range(300):
        beat = coordinator.request(
            hb.ShareGroupHeartbeatRequest(
                group_id=GROUP,
                member_id=member.member_id,
                member_epoch=epoch,
                subscribed_topic_names=[TOPIC] if epoch == 0 else None,
            ),
            1,
        )
        if beat.error_code in (14, 15, 16):  # the group coordinator loading, not there yet, or moved
            time.sleep(0.2)
            continue
        assert beat.error_code == 0, beat
        epoch = beat.member_epoch
        if beat.assignment is not None and beat.assignment.topic_partitions:
            assigned = [p for t in beat.assignment.topic_partitions for p in t.partitions]
            break
        time.sleep(0.2)
    assert assigned, "no partitions assigned"
    sessions: dict[int, tuple[BrokerConnection, list[int]]] = {}
    for partition in assigned:
        node = leaders[partition]
        if node not in sessions:
            sessions[node] = (_connect(brokers[node].bootstrap), [])
        sessions[node][1].append(partition)
    for connection, partitions in sessions.values():
        opened = connection.request(_fetch(member, topic_id, partitions, 0, {}), 1)
        assert opened.error_code == 0, opened
    return sessions


def _consume(
    member: Member,
    sessions: dict[int, tuple[BrokerConnection, list[int]]],
    topic_id: uuid.UUID,
    records: int,
    members: list[Member],
) -> None:
    epochs = dict.fromkeys(sessions, 1)
    pending: dict[int, dict[int, list[tuple[int, int]]]] = {node: {} for node in sessions}
    deadline = time.monotonic() + 300
    while sum(m.acknowledged for m in members) < records and time.monotonic() < deadline:
        for node, (connection, partitions) in sessions.items():
            acks = pending[node]
            answer = connection.request(_fetch(member, topic_id, partitions, epochs[node], acks), 1)
            assert answer.error_code == 0, answer
            epochs[node] += 1
            if acks:
                member.fetches_with_acks += 1
                member.acked_batches += len(acks)
                member.acknowledged += sum(
                    last - first + 1 for ranges in acks.values() for first, last in ranges
                )
            pending[node] = {}
            for topic in answer.responses:
                for p in topic.partitions:
                    assert p.acknowledge_error_code == 0 and p.error_code == 0, p
                    if p.acquired_records:
                        pending[node][p.partition_index] = [
                            (a.first_offset, a.last_offset) for a in p.acquired_records
                        ]


def _fetch(
    member: Member,
    topic_id: uuid.UUID,
    partitions: list[int],
    epoch: int,
    acks: dict[int, list[tuple[int, int]]],
) -> sf.ShareFetchRequest:
    return sf.ShareFetchRequest(
        group_id=GROUP,
        member_id=member.member_id,
        share_session_epoch=epoch,
        max_wait_ms=100,
        min_bytes=1,
        max_bytes=8 * 1024 * 1024,
        max_records=500,
        batch_size=500,
        topics=[
            sf.FetchTopic(
                topic_id=topic_id,
                partitions=[
                    sf.FetchPartition(
                        partition_index=p,
                        acknowledgement_batches=[
                            sf.AcknowledgementBatch(
                                first_offset=f, last_offset=last, acknowledge_types=[ACCEPT]
                            )
                            for f, last in acks.get(p, [])
                        ],
                    )
                    for p in partitions
                ],
            )
        ],
    )


def _writes(metrics: dict[int, int]) -> float:
    total = 0.0
    for port in metrics.values():
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
        found = _WRITES.search(text)
        total += float(found.group(1)) if found else 0.0
    return total


if __name__ == "__main__":
    main()
