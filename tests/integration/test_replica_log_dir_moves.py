"""#29: AlterReplicaLogDirs moves a replica between a broker's log dirs while it serves (KIP-113), driven
by Apache Kafka's own tools: `kafka-reassign-partitions --reassignment-json-file` with `log_dirs`
(--execute, then --verify), and `kafka-log-dirs --describe` to see where each replica is. An acks=all
producer runs throughout; no acknowledged record may be lost, and the broker restarts on the moved logs.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from tests.support import kafka_tools
from tests.support.broker_process import BrokerProcess
from tests.support.interop import create_topic, wait_until
from tests.support.mixed_clients import ProducerUnderLoad
from tests.support.requirements import require_module
from tests.support.txn_reader import read_committed_values

PARTITIONS = 2
PATIENCE_S = 60


def _where(tools: kafka_tools.Installation, bootstrap: str, topic: str) -> dict[int, tuple[str, bool]]:
    """Each partition's log dir on broker 1 (and whether that entry is a future replica), as
    kafka-log-dirs --describe prints it; a partition moving shows its future replica's dir."""
    result = tools.run(
        "kafka-log-dirs", ["--bootstrap-server", bootstrap, "--describe", "--topic-list", topic]
    )
    assert result.exit_code == 0, result
    document = json.loads(next(line for line in result.stdout.splitlines() if line.startswith("{")))
    where: dict[int, tuple[str, bool]] = {}
    for broker in document["brokers"]:
        for log_dir in broker["logDirs"]:
            for replica in log_dir["partitions"]:
                partition = int(replica["partition"].rsplit("-", 1)[1])
                if partition not in where or replica["isFuture"]:
                    where[partition] = (log_dir["logDir"], replica["isFuture"])
    return where


def test_kafkas_reassignment_tool_moves_replicas_between_log_dirs_under_acks_all_load(tmp_path: Path) -> None:
    require_module("confluent_kafka")
    tools = kafka_tools.install("kafka-3.9")
    dirs = [tmp_path / "a", tmp_path / "b"]
    broker = BrokerProcess(tmp_path / "broker", {"log.dirs": ",".join(str(d) for d in dirs)})
    broker.start()
    topic = "moving"
    try:
        create_topic(broker.bootstrap, topic, partitions=PARTITIONS, configs={"segment.bytes": "1048576"})
        load = ProducerUnderLoad(broker.bootstrap, topic, PARTITIONS, "move").start()
        try:
            load.wait_acknowledged(2000)
            before = _where(tools, broker.bootstrap, topic)
            target = {p: str(next(d for d in dirs if str(d) != before[p][0])) for p in range(PARTITIONS)}
            plan = {
                "version": 1,
                "partitions": [
                    {"topic": topic, "partition": p, "replicas": [1], "log_dirs": [target[p]]}
                    for p in range(PARTITIONS)
                ],
            }
            plan_file = tmp_path / "plan.json"
            plan_file.write_text(json.dumps(plan))
            reassign = ["--bootstrap-server", broker.bootstrap, "--reassignment-json-file", str(plan_file)]
            executed = tools.run("kafka-reassign-partitions", [*reassign, "--execute"])
            assert executed.exit_code == 0, executed

            def moved() -> bool:
                return _where(tools, broker.bootstrap, topic) == {
                    p: (target[p], False) for p in range(PARTITIONS)
                }

            wait_until(moved, PATIENCE_S, "both replicas in their new log dirs", 0.5)
            verified = tools.run("kafka-reassign-partitions", [*reassign, "--verify"])
            assert verified.exit_code == 0 and "is complete" in verified.stdout, verified
            load.wait_acknowledged(load.acknowledged.count + 1000)  # served from the new dirs
        finally:
            acknowledged = load.stop()
        assert acknowledged.errors == []
        broker.restart()  # the moved logs are the partitions' logs now
        read = read_committed_values(broker.bootstrap, topic, PARTITIONS, timeout_s=PATIENCE_S)
        for partition, values in acknowledged.values.items():
            stored = Counter(read[partition])
            assert not [v for v in values if v not in stored], f"acknowledged and lost in {partition}"
            assert [v for v, n in stored.items() if n > 1] == [], f"duplicates in {partition}"
        for partition in range(PARTITIONS):
            assert (Path(target[partition]) / f"{topic}-{partition}").is_dir()
    finally:
        broker.kill()
