"""One sequence of share-state requests (FindCoordinator key type SHARE and the five *ShareGroupState
RPCs, hostile ones included) and the `__share_group_state` records it leaves, run against a broker:
recorded from Apache Kafka 4.4 in KRaft mode (tests/support/kafka_kraft_reference.py) into
tests/integration/share/kafka-4.4-share-state.json, and compared with odradek's by
tests/integration/share/test_share_state_like_kafka.py.

    .venv/bin/python -m tests.support.share_state_reference   # records Kafka 4.4's answers again
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from odradek.coordinator.share.records import decode_share_record
from odradek.partition.share.persister import SharePartitionKey
from odradek.protocol.messages import delete_share_group_state as delete
from odradek.protocol.messages import initialize_share_group_state as init
from odradek.protocol.messages import read_share_group_state as read
from odradek.protocol.messages import read_share_group_state_summary as summary
from odradek.protocol.messages import write_share_group_state as write
from odradek.protocol.messages.api_versions import ApiVersionsRequest
from odradek.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from odradek.protocol.messages.find_coordinator import FindCoordinatorRequest
from odradek.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from odradek.protocol.records import iter_record_batches
from tests.support.raw_client import RawClient

RECORDED = Path(__file__).resolve().parents[1] / "integration" / "share" / "kafka-4.4-share-state.json"
#: What both brokers are started with: one `__share_group_state` partition holds every record.
SETTINGS = {"share.coordinator.state.topic.num.partitions": "1", "num.partitions": "1"}


Batch = tuple[int, int, int, int]


class _Session:
    """The requests of the sequence on one connection, each answered as plain values."""

    def __init__(self, client: RawClient, topic_id: uuid.UUID) -> None:
        self.client = client
        self.topic_id = topic_id

    def initialize(
        self, group: str, partition: int, state_epoch: int, start: int, topic: uuid.UUID | None = None
    ) -> Any:
        data = init.InitializeStateData(
            topic_id=topic or self.topic_id,
            partitions=[init.PartitionData(partition=partition, state_epoch=state_epoch, start_offset=start)],
        )
        response = self.client.request(
            init.InitializeShareGroupStateRequest(group_id=group, topics=[data]), 0
        )
        return _error(response.results)

    def write(
        self,
        group: str,
        partition: int,
        state_epoch: int,
        leader_epoch: int,
        start: int,
        batches: list[Batch],
        delivery_complete_count: int = -1,
    ) -> Any:
        data = write.WriteStateData(
            topic_id=self.topic_id,
            partitions=[
                write.PartitionData(
                    partition=partition,
                    state_epoch=state_epoch,
                    leader_epoch=leader_epoch,
                    start_offset=start,
                    delivery_complete_count=delivery_complete_count,
                    state_batches=[
                        write.StateBatch(first_offset=f, last_offset=last, delivery_state=s, delivery_count=n)
                        for f, last, s, n in batches
                    ],
                )
            ],
        )
        response = self.client.request(write.WriteShareGroupStateRequest(group_id=group, topics=[data]), 1)
        return _error(response.results)

    def read(self, group: str, partition: int, leader_epoch: int) -> Any:
        data = read.ReadStateData(
            topic_id=self.topic_id,
            partitions=[read.PartitionData(partition=partition, leader_epoch=leader_epoch)],
        )
        response = self.client.request(read.ReadShareGroupStateRequest(group_id=group, topics=[data]), 0)
        if not (response.results and response.results[0].partitions):
            return "no results"
        answer = response.results[0].partitions[0]
        batches = [
            (b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in answer.state_batches
        ]
        return [answer.error_code, answer.state_epoch, answer.start_offset, batches]

    def summary(self, group: str, partition: int, leader_epoch: int) -> Any:
        data = summary.ReadStateSummaryData(
            topic_id=self.topic_id,
            partitions=[summary.PartitionData(partition=partition, leader_epoch=leader_epoch)],
        )
        response = self.client.request(
            summary.ReadShareGroupStateSummaryRequest(group_id=group, topics=[data]), 1
        )
        if not (response.results and response.results[0].partitions):
            return "no results"
        answer = response.results[0].partitions[0]
        return [
            answer.error_code,
            answer.state_epoch,
            answer.leader_epoch,
            answer.start_offset,
            answer.delivery_complete_count,
        ]

    def delete(self, group: str, partition: int, topic: uuid.UUID | None = None) -> Any:
        data = delete.DeleteStateData(
            topic_id=topic or self.topic_id, partitions=[delete.PartitionData(partition=partition)]
        )
        response = self.client.request(delete.DeleteShareGroupStateRequest(group_id=group, topics=[data]), 0)
        return _error(response.results)


def _error(results: Any) -> Any:
    if not (results and results[0].partitions):
        return "no results"
    return results[0].partitions[0].error_code


def run(port: int, host: str, log_dirs: Path) -> dict[str, Any]:
    """The answers and records of the sequence, as JSON-ready values."""
    client = RawClient(port, host=host, timeout=30)
    try:
        answers = _requests(client)
    finally:
        client.close()
    answers["records"] = _records(log_dirs, "g")
    return answers


def _requests(client: RawClient) -> dict[str, Any]:
    versions = client.request(ApiVersionsRequest(client_software_name="x", client_software_version="1"), 3)
    answers: dict[str, Any] = {
        "versions": {
            str(k.api_key): [k.min_version, k.max_version] for k in versions.api_keys if 83 <= k.api_key <= 87
        }
    }
    topic = CreatableTopic(name="t", num_partitions=2, replication_factor=1, assignments=[], configs=[])
    client.request(CreateTopicsRequest(topics=[topic], timeout_ms=30000), 5)
    described = wait_for(
        lambda: client.request(MetadataRequest(topics=[MetadataRequestTopic(name="t")]), 12).topics[0],
        lambda t: (
            t.error_code == 0 and len(t.partitions) == 2 and all(p.leader_id >= 0 for p in t.partitions)
        ),
    )
    key = SharePartitionKey("g", described.topic_id, 0).coordinator_key
    encoded_id = key.split(":")[1]

    def find(k: str) -> Any:
        return client.request(FindCoordinatorRequest(key_type=2, coordinator_keys=[k]), 6).coordinators[0]

    answers["find"] = wait_for(lambda: find(key), lambda f: f.error_code == 0).error_code
    malformed = ["", "g", "g:t:0", f":{encoded_id}:0", f"g:{encoded_id}:x"]
    answers["find malformed"] = [find(k).error_code for k in malformed]
    s = _Session(client, described.topic_id)
    unknown = uuid.UUID(int=12345)
    answers["steps"] = [
        ("read uninitialized", s.read("g", 0, 0)),
        ("write uninitialized", s.write("g", 0, 0, 0, 0, [])),
        ("summary uninitialized", s.summary("g", 0, 0)),
        ("initialize", s.initialize("g", 0, 1, 10)),
        ("initialize unknown topic", s.initialize("g", 0, 0, 0, topic=unknown)),
        ("initialize unknown partition", s.initialize("g", 9, 0, 0)),
        ("initialize negative partition", s.initialize("g", -1, 0, 0)),
        ("initialize negative state epoch", s.initialize("g", 0, -1, 0)),
        ("initialize empty group", s.initialize("", 0, 0, 0)),
        ("write empty group", s.write("", 0, 0, 0, 0, [])),
        ("read empty group", s.read("", 0, 0)),
        ("read as a new leader", s.read("g", 0, 2)),
        ("write", s.write("g", 0, 1, 2, 10, [(10, 14, 2, 1), (15, 19, 0, 1)], 5)),
        ("write over it", s.write("g", 0, 1, 2, 12, [(12, 12, 4, 3)])),
        ("write of an old leader", s.write("g", 0, 1, 1, 12, [])),
        ("write of an old state epoch", s.write("g", 0, 0, 2, 12, [])),
        ("write negative leader epoch", s.write("g", 0, 1, -1, 12, [])),
        ("write undefined delivery state", s.write("g", 0, 1, 2, 12, [(13, 13, 3, 1)])),
        ("read", s.read("g", 0, 2)),
        ("summary", s.summary("g", 0, 2)),
        ("read of an old leader", s.read("g", 0, 1)),
        ("read negative leader epoch", s.read("g", 0, -1)),
        ("initialize older state epoch", s.initialize("g", 0, 0, 0)),
        ("initialize same state epoch", s.initialize("g", 0, 1, 20)),
        ("read reinitialized", s.read("g", 0, 2)),
        ("delete", s.delete("g", 0)),
        ("delete again", s.delete("g", 0)),
        ("delete unknown topic", s.delete("g", 0, topic=unknown)),
        ("read deleted", s.read("g", 0, 2)),
    ]
    return answers


def _records(log_dirs: Path, group: str) -> list[Any]:
    """The group's `__share_group_state` records in log order: (record type, value fields or None)."""
    found: list[Any] = []
    for directory in sorted(log_dirs.glob("__share_group_state-*")):
        for segment in sorted(directory.glob("*.log")):
            for batch in iter_record_batches(segment.read_bytes()):
                for record in batch.records:
                    assert record.key is not None
                    value = None if record.value is None else bytes(record.value)
                    decoded = decode_share_record(bytes(record.key), value)
                    if decoded.key.group_id != group:
                        continue
                    fields = None
                    if decoded.value is not None:
                        names = (
                            "snapshot_epoch",
                            "state_epoch",
                            "leader_epoch",
                            "start_offset",
                            "delivery_complete_count",
                        )
                        fields = {n: getattr(decoded.value, n) for n in names if hasattr(decoded.value, n)}
                        fields["batches"] = [
                            [b.first_offset, b.last_offset, b.delivery_state, b.delivery_count]
                            for b in decoded.value.state_batches
                        ]
                    found.append([decoded.record_type, fields])
    return found


def dump(answers: dict[str, Any]) -> str:
    """JSON with one step or record a line, so a change of Kafka's answers reads as a small diff."""
    lines = ["{"]
    for index, (name, value) in enumerate(answers.items()):
        comma = "," if index < len(answers) - 1 else ""
        if isinstance(value, list):
            items = ",\n".join(f"  {json.dumps(item)}" for item in value)
            lines.append(f" {json.dumps(name)}: [\n{items}\n ]{comma}")
        else:
            lines.append(f" {json.dumps(name)}: {json.dumps(value)}{comma}")
    return "\n".join([*lines, "}"]) + "\n"


def wait_for(ask: Any, done: Any, timeout_s: float = 60) -> Any:
    """`ask()` again until `done(answer)`, at most `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        answer = ask()
        if done(answer) or time.monotonic() > deadline:
            return answer
        time.sleep(0.2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    from tests.support.kafka_kraft_reference import KafkaKRaftBrokers

    with tempfile.TemporaryDirectory(prefix="share-state-reference-") as work:
        kafka = KafkaKRaftBrokers(1, Path(work), extra=SETTINGS).start()
        try:
            host, port = kafka.addresses[1]
            answers = run(port, host, kafka.log_dir(1))
        finally:
            kafka.stop()
    RECORDED.write_text(dump(answers))
    print(f"recorded {RECORDED}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
