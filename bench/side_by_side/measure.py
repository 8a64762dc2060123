"""One measurement: a fresh deployment of one kind through one scenario, every figure of it.

In order, on one deployment: start-up; topics (RF = brokers; with three, min.insync.replicas=2 and
three partitions so each broker leads one); an unmeasured warm-up pass (the producer and the consumer
below, as many records, on a topic of their own); ProducerPerformance writes the scenario's records as fast as
it can (`--throughput -1`), the brokers' CPU read around it; ConsumerPerformance reads them all back,
CPU read again; EndToEndLatency sends one record at a time and waits for it to be consumed (so the rate
is modest by construction and measures latency, not queueing), on a topic of its own; for the single
node at 1 KiB, the librdkafka producer/consumer bench of bench/broker_bench too; peak RSS last (VmHWM is
the whole life's peak). The machine's load average is recorded before and after.
"""

from __future__ import annotations

import os
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from broker_bench import peers, scenarios
from side_by_side import tools
from side_by_side.deployments import Deployment, deploy
from tests.support.zookeeper import ZooKeeperServer

MB = 1_000_000
TOPIC_TIMEOUT_S = 90.0
TOOL_TIMEOUT_S = 600.0
WARM_UP_TOPIC = "warm-up"


@dataclass(frozen=True)
class Scenario:
    brokers: int
    record_size: int
    acks: str
    compression: str
    records: int
    e2e_messages: int
    librdkafka_seconds: float = 0.0
    #: Records produced and read back, unmeasured, before the measured pass (same size, acks, codec).
    warm_up_records: int = 0

    @property
    def label(self) -> str:
        size = {100: "100 B", 1024: "1 KiB", 10240: "10 KiB"}.get(self.record_size, f"{self.record_size} B")
        shape = (
            "1 broker RF=1" if self.brokers == 1 else f"{self.brokers} brokers RF={self.brokers} min.isr=2"
        )
        return f"{shape}, {size}, acks={self.acks}, {self.compression}"

    @property
    def partitions(self) -> int:
        return 1 if self.brokers == 1 else self.brokers


def measure(
    kind: str, scenario: Scenario, perf: tools.PerfTools, zookeeper: ZooKeeperServer
) -> dict[str, Any]:
    """Every figure of one run; `error` (and the brokers' log tail) instead where a step failed."""
    work = Path(tempfile.mkdtemp(prefix=f"side-by-side-{kind}-"))
    record: dict[str, Any] = {"kind": kind, "load_before": os.getloadavg(), "ok": False}
    deployment = deploy(kind, scenario.brokers, work, zookeeper)
    started = time.monotonic()
    try:
        record["startup_s"] = deployment.start()
        record.update(_workload(deployment, scenario, perf))
        record["peak_rss_bytes"] = deployment.usage().peak_rss_bytes
        record["ok"] = True
    except Exception as error:
        record["error"] = f"{type(error).__name__}: {error}"[:3000]
        record["traceback"] = traceback.format_exc()[-3000:]
        record["broker_log_tail"] = deployment.log_tail()[-4000:]
    finally:
        deployment.stop()
    record["load_after"] = os.getloadavg()
    record["wall_s"] = time.monotonic() - started
    return record


def _workload(deployment: Deployment, scenario: Scenario, perf: tools.PerfTools) -> dict[str, Any]:
    bootstrap = deployment.bootstrap
    topic, e2e_topic = "perf", "e2e"
    for name in (WARM_UP_TOPIC, topic, e2e_topic):
        create_topic(bootstrap, name, scenario.partitions, scenario.brokers)
    figures: dict[str, Any] = {}
    if scenario.warm_up_records:
        # Unmeasured: a broker fresh from start-up (Kafka's JIT above all) is not the broker of a
        # long-running cluster; the measured pass comes after one like it.
        warm_up = replace(scenario, records=scenario.warm_up_records)
        figures["warm_up"] = {
            "produce": asdict(_produce(perf, bootstrap, WARM_UP_TOPIC, warm_up)),
            "consume": asdict(_consume(perf, bootstrap, WARM_UP_TOPIC, warm_up)),
        }
    megabytes = scenario.records * scenario.record_size / MB
    before = deployment.usage().cpu_seconds
    produced = _produce(perf, bootstrap, topic, scenario)
    after_produce = deployment.usage().cpu_seconds
    consumed = _consume(perf, bootstrap, topic, scenario)
    after_consume = deployment.usage().cpu_seconds
    if consumed.records < scenario.records:
        raise tools.ToolFailed(f"ConsumerPerformance read {consumed.records} of {scenario.records} records")
    figures |= {
        "produce": asdict(produced),
        "consume": asdict(consumed),
        "megabytes": megabytes,
        "produce_cpu_s": after_produce - before,
        "consume_cpu_s": after_consume - after_produce,
        "produce_cpu_s_per_mb": (after_produce - before) / megabytes,
        "consume_cpu_s_per_mb": (after_consume - after_produce) / megabytes,
    }
    properties = Path(tempfile.mkdtemp(prefix="e2e-")) / "client.properties"
    properties.write_text(f"compression.type={scenario.compression}\n")
    figures["e2e"] = asdict(
        tools.parse_end_to_end(
            tools.run(
                perf,
                tools.END_TO_END,
                [
                    bootstrap,
                    e2e_topic,
                    str(scenario.e2e_messages),
                    scenario.acks,
                    str(scenario.record_size),
                    str(properties),
                ],
                timeout=TOOL_TIMEOUT_S,
            )
        )
    )
    if scenario.librdkafka_seconds:
        figures["librdkafka"] = librdkafka_bench(deployment, scenario)
    return figures


def _produce(perf: tools.PerfTools, bootstrap: str, topic: str, scenario: Scenario) -> tools.ProducerFigures:
    arguments = ["--topic", topic, "--num-records", str(scenario.records)]
    arguments += ["--record-size", str(scenario.record_size), "--throughput", "-1", "--producer-props"]
    arguments += [f"bootstrap.servers={bootstrap}", f"acks={scenario.acks}"]
    arguments += [f"compression.type={scenario.compression}"]
    return tools.parse_producer(tools.run(perf, tools.PRODUCER, arguments, timeout=TOOL_TIMEOUT_S))


def _consume(perf: tools.PerfTools, bootstrap: str, topic: str, scenario: Scenario) -> tools.ConsumerFigures:
    arguments = ["--bootstrap-server", bootstrap, "--topic", topic, "--messages", str(scenario.records)]
    arguments += ["--timeout", "60000"]
    return tools.parse_consumer(tools.run(perf, tools.CONSUMER, arguments, timeout=TOOL_TIMEOUT_S))


def create_topic(bootstrap: str, topic: str, partitions: int, brokers: int) -> None:
    """CreateTopics (retried while a young cluster has fewer brokers registered than the replication
    factor), then wait until every partition has a leader and, with replication, a full ISR."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": bootstrap})
    config = {"min.insync.replicas": "2"} if brokers > 1 else {}
    deadline = time.monotonic() + TOPIC_TIMEOUT_S
    while True:
        request = [NewTopic(topic, partitions, brokers, config=config)]
        future = admin.create_topics(request, request_timeout=TOPIC_TIMEOUT_S)[topic]
        try:
            future.result(max(1.0, deadline - time.monotonic()))
            break
        except KafkaException as error:
            # a retried request may find the topic its first attempt made
            if "already exists" in str(error).lower():
                break
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    while time.monotonic() < deadline:
        metadata = admin.list_topics(topic, timeout=10).topics.get(topic)
        if (
            metadata is not None
            and metadata.error is None
            and len(metadata.partitions) == partitions
            and all(p.leader >= 0 and len(p.isrs) == brokers for p in metadata.partitions.values())
        ):
            return
        time.sleep(0.1)
    raise TimeoutError(f"topic {topic} not ready within {TOPIC_TIMEOUT_S:.0f} s")


class _DeploymentAsPeer(peers.Broker):
    """A single-node deployment seen as bench/broker_bench's broker (its scenarios take one)."""

    def __init__(self, deployment: Deployment) -> None:
        super().__init__(deployment.work)
        self.deployment = deployment

    @property
    def bootstrap(self) -> str:
        return self.deployment.bootstrap

    def sample(self) -> peers.ProcessSample:
        usage = self.deployment.usage()
        return peers.ProcessSample(usage.cpu_seconds, usage.peak_rss_bytes, 0)

    def alive(self) -> bool:
        return self.deployment.alive()


def librdkafka_bench(deployment: Deployment, scenario: Scenario) -> dict[str, Any]:
    """bench/broker_bench's produce-then-consume (one librdkafka producer for `librdkafka_seconds`,
    then one consumer reads everything back), on a topic of its own."""
    params = scenarios.ProduceParams(1, scenario.acks, scenario.record_size, scenario.compression, 1)
    settings = scenarios.Settings(duration=scenario.librdkafka_seconds)
    figures = scenarios.produce_consume(_DeploymentAsPeer(deployment), params, settings, "librdkafka")
    keep = (
        "produce_mb_per_s",
        "produce_msgs_per_s",
        "consume_mb_per_s",
        "produce_cpu_s_per_mb",
        "fetch_cpu_s_per_mb",
        "produce_latency_p50_ms",
        "produce_latency_p99_ms",
        "produced",
        "consumed",
        "consume_verified",
    )
    return {key: figures.get(key) for key in keep}
