"""A mixed cluster: Apache Kafka 3.9 brokers and odradek brokers on one ZooKeeper (issue #27).

Broker `n` listens on 127.0.0.{n+1} whatever its kind. Every broker gets the settings Kafka's reference
brokers get (tests/support/kafka_reference.py's `KafkaBrokers.settings`), odradek's with its own log
directory, so both kinds agree on internal topics, replication and `inter.broker.protocol.version`.
The cluster lives in a ZooKeeper chroot of its own; the controller is read from /controller there,
partition leaders and ISRs from Metadata, and what each replica holds with a Fetch v11 (both kinds
serve it from a follower, KIP-392) up to that replica's high watermark.
"""

from __future__ import annotations

import enum
import json
import os
import signal
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from odradek.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic, MetadataResponse
from odradek.protocol.records.batch import RecordBatch, iter_record_batches
from tests.support.broker_process import BrokerProcess
from tests.support.interop import raw_fetch, wait_until
from tests.support.kafka_reference import KAFKA_JVM_OPTIONS, KafkaBrokers
from tests.support.raw_client import RawClient
from tests.support.requirements import require_module
from tests.support.zookeeper import ZooKeeperServer

#: Bounds of the waits on a loaded 2-core machine: the checks pass as soon as they hold.
PATIENCE_S = 90
#: Both kinds: a SIGKILLed broker's registration and /controller go this long after it died.
SESSION_TIMEOUT_MS = 6000
#: The odradek-only settings (Kafka 3.9 would reject nothing here, but these are not its keys).
ODRADEK_ONLY = {"controlled.shutdown.retry.backoff.ms": "500"}


class Kind(enum.Enum):
    KAFKA = "kafka"
    ODRADEK = "odradek"


@dataclass(frozen=True, slots=True)
class PartitionView:
    """A partition as a broker's Metadata describes it."""

    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


class MixedCluster:
    """Brokers `kinds` (id -> kind); start, stop (SIGTERM: a controlled shutdown), kill (SIGKILL),
    pause (SIGSTOP) and restart any of them by id."""

    def __init__(
        self,
        work: Path,
        zookeeper: ZooKeeperServer,
        kinds: Mapping[int, Kind],
        extra: Mapping[str, str] | None = None,
        node_settings: Callable[[int, int], Mapping[str, str]] | None = None,
        kafka_jvm_options: Sequence[str] = KAFKA_JVM_OPTIONS,
    ) -> None:
        """`extra`: settings of every broker; `node_settings`: of one broker, given its id and PLAINTEXT
        port (more listeners, say), for both kinds alike."""
        assert sorted(kinds) == list(range(1, len(kinds) + 1)), "broker ids are 1..n"
        self.kinds = dict(kinds)
        work.mkdir(parents=True, exist_ok=True)
        self.chroot = f"/mixed-{uuid.uuid4().hex[:8]}"
        settings = {
            "zookeeper.connect": f"{zookeeper.connect_string}{self.chroot}",
            "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
            "inter.broker.protocol.version": "3.9",
            "group.initial.rebalance.delay.ms": "0",
            **(extra or {}),
        }
        self.zookeeper = zookeeper
        #: Kafka's brokers; its address book covers every id, odradek's brokers take their addresses.
        self.kafka = KafkaBrokers(
            len(kinds), work / "kafka", zookeeper, settings, node_settings, jvm_options=kafka_jvm_options
        )
        self.odradek = {
            node: BrokerProcess(
                work / f"odradek-{node}",
                {
                    **{k: v for k, v in self.kafka.settings(node).items() if k != "log.dirs"},
                    "node.id": str(node),
                    **ODRADEK_ONLY,
                },
                port=self.kafka.addresses[node][1],
                host=self.kafka.addresses[node][0],
            )
            for node, kind in kinds.items()
            if kind is Kind.ODRADEK
        }
        self._zk: KazooClient | None = None

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self, first: int | None = None) -> MixedCluster:
        """Every broker, `first` alone before the others (it then becomes controller); returns once
        every broker's Metadata names them all."""
        if first is not None:
            self.start_broker(first)
            wait_until(lambda: self.controller() == first, PATIENCE_S, f"broker {first} controller", 0.2)
        for node in self.kinds:
            if node != first:
                self.start_broker(node, wait=False)
        for node in self.kinds:
            self.wait_listening(node)
        self.wait_registered()
        return self

    def stop(self) -> None:
        for node in self.kinds:
            self.kill(node)
        if self._zk is not None:
            self._zk.stop()
            self._zk.close()

    def start_broker(self, node: int, wait: bool = True) -> None:
        if self.kinds[node] is Kind.KAFKA:
            self.kafka.start_broker(node, wait=wait)
        else:
            self.odradek[node].start(timeout=PATIENCE_S, wait=wait)

    def wait_listening(self, node: int) -> None:
        if self.kinds[node] is Kind.KAFKA:
            self.kafka.wait_listening(node)
        else:
            self.odradek[node].wait_listening(PATIENCE_S)

    def stop_broker(self, node: int) -> None:
        """SIGTERM: both kinds shut down in a controlled way (leaderships moved away first)."""
        if self.kinds[node] is Kind.KAFKA:
            self.kafka.stop_broker(node)
        else:
            self.odradek[node].stop(timeout=60)

    def kill(self, node: int) -> None:
        """SIGKILL, as a crash would."""
        if self.kinds[node] is Kind.KAFKA:
            self.kafka.kill_broker(node)
        else:
            self.odradek[node].kill()

    def replace(self, node: int, crash: bool = False) -> Kind:
        """Broker `node` stopped (SIGTERM: a controlled shutdown; SIGKILL with `crash`) and a broker of
        the other kind started in its place with the same broker.id, the same log directory and the
        Kafka broker's own server.properties as written (issue #27's rolling replacement); returns the
        kind now running. Only a broker that started as Kafka's has a log directory both kinds share."""
        if crash:
            self.kill(node)
            # Kafka refuses to start while the dead broker's registration is still in ZooKeeper
            # (NodeExists): an operator waits out its session, as this does
            wait_until(
                lambda: node not in self.registered(), PATIENCE_S, f"broker {node}'s session gone", 0.2
            )
        else:
            self.stop_broker(node)
        log_dir = self.kafka.log_dir(node)
        if self.kinds[node] is Kind.KAFKA:
            host, port = self.kafka.addresses[node]
            config = self.kafka.config_file(node)
            self.odradek[node] = BrokerProcess(log_dir, {}, port=port, host=host, config_file=config)
            self.kinds[node] = Kind.ODRADEK
        else:
            assert self.odradek[node].data_dir == log_dir, f"broker {node} never ran on Kafka's log dir"
            self.kinds[node] = Kind.KAFKA
        self.start_broker(node)
        return self.kinds[node]

    def pause(self, node: int) -> None:
        os.kill(self.pid(node), signal.SIGSTOP)

    def resume(self, node: int) -> None:
        os.kill(self.pid(node), signal.SIGCONT)

    def pid(self, node: int) -> int:
        if self.kinds[node] is Kind.KAFKA:
            return self.kafka.processes[node].pid
        process = self.odradek[node].process
        assert process is not None, f"broker {node} is not running"
        return process.pid

    def running(self) -> list[int]:
        alive = [n for n, p in self.kafka.processes.items() if p.poll() is None]
        alive += [
            n
            for n, b in self.odradek.items()
            if self.kinds[n] is Kind.ODRADEK and b.process is not None and b.process.poll() is None
        ]
        return sorted(alive)

    def of_kind(self, kind: Kind) -> list[int]:
        return sorted(n for n, k in self.kinds.items() if k is kind)

    def bootstrap(self, *nodes: int) -> str:
        wanted = nodes or tuple(self.kinds)
        return ",".join(f"{h}:{p}" for n, (h, p) in self.kafka.addresses.items() if n in wanted)

    def log_excerpts(self) -> str:
        """The tail of every broker's log, for a failed test's message."""
        logs = [f"--- odradek {n}\n{b.log_text()[-3000:]}" for n, b in self.odradek.items()]
        for node in self.of_kind(Kind.KAFKA):
            path = self.kafka.work / f"kafka-{node}.log"
            text = path.read_text(errors="replace")[-3000:] if path.exists() else ""
            logs.append(f"--- kafka {node}\n{text}")
        return "\n".join(logs)

    def log_dirs(self) -> list[Path]:
        """Every broker's log directory (that exists yet)."""
        dirs = [self.kafka.log_dir(n) for n in self.of_kind(Kind.KAFKA)]
        dirs += [b.data_dir for b in self.odradek.values()]
        return [d for d in dirs if d.is_dir()]

    # -- what ZooKeeper says -----------------------------------------------------------------------

    @property
    def zk(self) -> KazooClient:
        if self._zk is None:
            self._zk = KazooClient(hosts=f"{self.zookeeper.connect_string}{self.chroot}")
            self._zk.start(30)
        return self._zk

    def controller(self) -> int | None:
        """The broker /controller names, or None while there is none."""
        try:
            data, _ = self.zk.get("/controller")
        except NoNodeError:
            return None
        broker: int = json.loads(data)["brokerid"]
        return broker

    def controller_epoch(self) -> int:
        data, _ = self.zk.get("/controller_epoch")
        return int(data)

    def registered(self) -> list[int]:
        try:
            return sorted(int(n) for n in self.zk.get_children("/brokers/ids"))
        except NoNodeError:
            return []

    def wait_controller(self, among: list[int]) -> int:
        """Wait until one of `among` is controller; returns it."""
        found: list[int] = []

        def elected() -> bool:
            controller = self.controller()
            if controller in among:
                found.append(controller)
                return True
            return False

        wait_until(elected, PATIENCE_S, f"a controller among {among}", 0.2)
        return found[-1]

    def wait_registered(self) -> None:
        """Until every running broker is registered and each one's Metadata names them all."""
        running = self.running()

        def known() -> bool:
            try:
                return self.registered() == running and all(
                    sorted(b.node_id for b in self.metadata(n, []).brokers) == running for n in running
                )
            except Exception:
                return False

        wait_until(known, PATIENCE_S, f"brokers {running} known to each other", 0.3)

    # -- what the brokers say ----------------------------------------------------------------------

    def metadata(self, asked: int, topics: list[str] | None) -> MetadataResponse:
        host, port = self.kafka.addresses[asked]
        with RawClient(port, timeout=5, host=host) as client:
            wanted = None if topics is None else [MetadataRequestTopic(name=t) for t in topics]
            response: MetadataResponse = client.request(
                MetadataRequest(topics=wanted, allow_auto_topic_creation=False), 12
            )
            return response

    def partitions(self, topic: str, asked: int) -> dict[int, PartitionView]:
        """`topic`'s partitions as broker `asked` describes them (empty if it knows no such topic)."""
        (described,) = self.metadata(asked, [topic]).topics
        return {
            p.partition_index: PartitionView(p.leader_id, tuple(p.replica_nodes), tuple(p.isr_nodes))
            for p in described.partitions
        }

    def wait_in_sync(self, topic: str, partitions: int) -> dict[int, PartitionView]:
        """Until every running broker describes every partition with a live leader and every live
        replica in the ISR; returns the partitions as the first running broker describes them."""
        seen: list[dict[int, PartitionView]] = []

        def in_sync() -> bool:
            running = set(self.running())
            try:
                views = [self.partitions(topic, n) for n in sorted(running)]
            except Exception:
                return False
            if any(len(v) != partitions for v in views) or any(v != views[0] for v in views):
                return False
            seen.append(views[0])
            return all(
                p.leader in running and set(p.isr) >= set(p.replicas) & running for p in views[0].values()
            )

        wait_until(in_sync, PATIENCE_S, f"{topic}'s live replicas in sync", 0.3)
        return seen[-1]

    def replica(self, node: int, topic: str, partition: int) -> tuple[int, list[RecordBatch]]:
        """Broker `node`'s high watermark of the partition and its batches below it (leader or follower)."""
        host, port = self.kafka.addresses[node]
        batches: list[RecordBatch] = []
        offset = 0
        with RawClient(port, timeout=10, host=host) as client:
            while True:
                records, high_watermark = raw_fetch(client, topic, partition, offset, 1 << 22)
                fetched = list(iter_record_batches(records))
                batches += fetched
                if not fetched or fetched[-1].next_offset >= high_watermark:
                    return high_watermark, batches
                offset = fetched[-1].next_offset

    def wait_replicas_agree(self, topic: str, partitions: int) -> dict[int, int]:
        """Until every replica of every partition on a running broker has the same high watermark and
        the same batches below it; returns each partition's high watermark."""
        agreed: dict[int, int] = {}

        def agree() -> bool:
            views = self.wait_in_sync(topic, partitions)
            running = set(self.running())
            for partition, view in views.items():
                copies = [self.replica(n, topic, partition) for n in view.replicas if n in running]
                if any(copy != copies[0] for copy in copies):
                    return False
                agreed[partition] = copies[0][0]
            return True

        wait_until(agree, PATIENCE_S, f"{topic}'s replicas alike on every broker", 0.5)
        return agreed


@contextmanager
def running_mixed_cluster(
    tmp_path_factory: pytest.TempPathFactory,
    zookeeper: ZooKeeperServer,
    kinds: Mapping[int, Kind],
    first: int,
    node_settings: Callable[[int, int], Mapping[str, str]] | None = None,
) -> Iterator[MixedCluster]:
    """A module's mixed cluster: started with `first` as controller, stopped at the end."""
    require_module("confluent_kafka")
    name = "mixed-" + "".join(kind.name[0].lower() for kind in kinds.values())
    cluster = MixedCluster(tmp_path_factory.mktemp(name), zookeeper, kinds, node_settings=node_settings)
    try:
        yield cluster.start(first=first)
    finally:
        cluster.stop()
