"""AlterReplicaLogDirs was not served: Kafka's Java admin client got UnsupportedVersionException from
alterReplicaLogDirs (and kafka-reassign-partitions with log dirs failed), where Kafka 3.9 answers each
partition: a move to the log directory the replica is already in is done (NONE), a path that is not one
of the broker's log directories is LOG_DIR_NOT_FOUND, a topic it does not know UNKNOWN_TOPIC_OR_PARTITION.
(tests/compat/java AdminLogDirsTest)
"""

from __future__ import annotations

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.alter_replica_log_dirs import (
    AlterReplicaLogDir,
    AlterReplicaLogDirsRequest,
    AlterReplicaLogDirsResponse,
    AlterReplicaLogDirTopic,
)
from odradek.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import RawClient


def _results(response: AlterReplicaLogDirsResponse) -> dict[tuple[str, int], int]:
    return {(t.topic_name, p.partition_index): p.error_code for t in response.results for p in t.partitions}


def test_alter_replica_log_dirs_answers_each_partition_as_kafka_with_one_log_dir(
    broker: BrokerProcess,
) -> None:
    log_dir = str(broker.data_dir.absolute())
    with RawClient(broker.port, timeout=10) as client:
        client.request(
            CreateTopicsRequest(
                topics=[CreatableTopic(name="moved", num_partitions=1, replication_factor=1)]
            ),
            7,
        )
        answers = [
            client.request(
                AlterReplicaLogDirsRequest(
                    dirs=[
                        AlterReplicaLogDir(
                            path=log_dir,
                            topics=[
                                AlterReplicaLogDirTopic(name="moved", partitions=[0]),
                                AlterReplicaLogDirTopic(name="nowhere", partitions=[0]),
                            ],
                        ),
                        AlterReplicaLogDir(
                            path=log_dir + "-elsewhere",
                            topics=[AlterReplicaLogDirTopic(name="moved", partitions=[1])],
                        ),
                    ]
                ),
                version,
            )
            for version in (0, 1, 2)
        ]
    for answer in answers:
        assert _results(answer) == {
            ("moved", 0): ErrorCode.NONE,
            ("nowhere", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ("moved", 1): ErrorCode.LOG_DIR_NOT_FOUND,
        }
