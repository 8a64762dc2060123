"""DeleteRecords on the leader (KIP-107; Kafka's ReplicaManager.deleteRecords and
Partition.deleteRecordsOnLeader): the one way a partition led here has its log start moved up, for a
client's request (handlers/delete_records.py keeps the request's shape: authorization, the topic's
existence and internal topics) as for the share coordinator's prune of `__share_group_state` (Kafka
4.x's share coordinator asks the replica manager through its PartitionWriter).

The partition must be led here (NOT_LEADER_OR_FOLLOWER; UNKNOWN_TOPIC_OR_PARTITION without a log here),
in a log dir that has not failed (KAFKA_STORAGE_ERROR, even before the dir is handled), its
cleanup.policy must include delete (POLICY_VIOLATION), and the offset must be -1 (the high watermark)
or not negative (OFFSET_OUT_OF_RANGE); one past the high watermark is refused by the log
(storage's OffsetOutOfRangeError). Whole segments below the new log start go at the next retention
check; reads below it are out of range. The answer's low watermark is the leader's new log start (as
today for a cluster too: Kafka's DelayedDeleteRecords, which waits for every follower's, is not done).
"""

from __future__ import annotations

from odradek.partition.leadership import Leadership
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.storage.log_manager import LogManager

#: The offset that means the partition's high watermark.
HIGH_WATERMARK = -1


def delete_records(leadership: Leadership, logs: LogManager, topic: str, partition: int, offset: int) -> int:
    """Move the log start of the partition, led here (`leadership`, the replica manager), up to `offset`
    (HIGH_WATERMARK: its high watermark); returns its new log start (the low watermark). Raises
    KafkaError for the rules above, StorageError from the log."""
    replica_log = logs.get_log(topic, partition)
    if replica_log is None or leadership.leader_epoch(topic, partition) is None:
        here = replica_log is not None
        raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER if here else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if logs.failures.is_offline(replica_log.dir.parent):  # as an append's (Kafka's log checks it)
        raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, f"{topic}-{partition}: its log dir is offline")
    if not replica_log.config.delete:
        raise KafkaError(ErrorCode.POLICY_VIOLATION, f"{topic}-{partition}: cleanup.policy has no delete")
    target = replica_log.high_watermark if offset == HIGH_WATERMARK else offset
    if target < 0:
        raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE, f"{topic}-{partition}: offset {target} is not valid")
    return replica_log.delete_records(target)
