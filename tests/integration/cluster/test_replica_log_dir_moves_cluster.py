"""#29: in a cluster, AlterReplicaLogDirs moves a broker's replicas between its log dirs while they
serve: those it leads (produce goes on into the copy) and those it follows (its fetcher goes on into
the copy once swapped), driven by Kafka 3.9's `kafka-reassign-partitions` with `log_dirs` and
`kafka-log-dirs --describe`. An acks=all producer runs throughout; nothing acknowledged is lost, and the
moved replicas stay in sync."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from tests.integration.cluster.test_log_dir_failure import (  # noqa: F401 - cluster is a fixture
    JBOD,
    PARTITIONS,
    PATIENCE_S,
    JbodCluster,
    _create,
    _partitions_in,
    cluster,
)
from tests.support import kafka_tools
from tests.support.interop import wait_until
from tests.support.mixed_clients import ProducerUnderLoad
from tests.support.txn_reader import read_committed_values


def _on_jbod(tools: kafka_tools.Installation, bootstrap: str, topic: str) -> dict[int, tuple[str, bool]]:
    result = tools.run(
        "kafka-log-dirs",
        ["--bootstrap-server", bootstrap, "--describe", "--topic-list", topic, "--broker-list", str(JBOD)],
    )
    assert result.exit_code == 0, result
    document = json.loads(next(line for line in result.stdout.splitlines() if line.startswith("{")))
    where: dict[int, tuple[str, bool]] = {}
    for log_dir in document["brokers"][0]["logDirs"]:
        for replica in log_dir["partitions"]:
            partition = int(replica["partition"].rsplit("-", 1)[1])
            if partition not in where or replica["isFuture"]:
                where[partition] = (log_dir["logDir"], replica["isFuture"])
    return where


def test_replicas_led_and_followed_move_between_log_dirs_under_acks_all_load(
    cluster: JbodCluster,  # noqa: F811 - the fixture imported above
    tmp_path: Path,
) -> None:
    tools = kafka_tools.install("kafka-3.9")
    topic = "jbod-moves"
    _create(cluster, topic)
    first, second = cluster.dirs
    target = {p: str(second) for p in _partitions_in(first, topic)}
    target |= {p: str(first) for p in _partitions_in(second, topic)}
    assert sorted(target) == list(range(PARTITIONS))
    load = ProducerUnderLoad(cluster.bootstrap(), topic, PARTITIONS, "moves").start()
    try:
        load.wait_acknowledged(1000)
        plan = {"version": 1, "partitions": []}
        for p in range(PARTITIONS):
            replicas = [JBOD, 2, 3] if p < PARTITIONS // 2 else [2, 3, JBOD]
            plan["partitions"].append(  # type: ignore[attr-defined]
                {
                    "topic": topic,
                    "partition": p,
                    "replicas": replicas,
                    "log_dirs": [target[p] if r == JBOD else "any" for r in replicas],
                }
            )
        plan_file = tmp_path / "plan.json"
        plan_file.write_text(json.dumps(plan))
        reassign = ["--bootstrap-server", cluster.bootstrap(), "--reassignment-json-file", str(plan_file)]
        executed = tools.run("kafka-reassign-partitions", [*reassign, "--execute"])
        assert executed.exit_code == 0, executed

        def moved() -> bool:
            return _on_jbod(tools, cluster.bootstrap(), topic) == {p: (target[p], False) for p in target}

        wait_until(moved, PATIENCE_S, "every replica of broker 1 in its other log dir", 0.5)
        verified = tools.run("kafka-reassign-partitions", [*reassign, "--verify"])
        assert verified.exit_code == 0, verified
        load.wait_acknowledged(load.acknowledged.count + 1000)
        wait_until(
            lambda: all(JBOD in cluster.state(topic, p)["isr"] for p in range(PARTITIONS)),
            PATIENCE_S,
            "broker 1 in sync on every moved replica",
            0.2,
        )
    finally:
        acknowledged = load.stop()
    assert acknowledged.errors == []
    read = read_committed_values(cluster.bootstrap(), topic, PARTITIONS, timeout_s=PATIENCE_S)
    for partition, values in acknowledged.values.items():
        stored = Counter(read[partition])
        assert not [v for v in values if v not in stored], f"acknowledged and lost in {partition}"
    for p, log_dir in target.items():
        assert (Path(log_dir) / f"{topic}-{p}").is_dir()
