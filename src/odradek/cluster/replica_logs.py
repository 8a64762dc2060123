"""The logs of the replicas a controller's requests create and delete (ZooKeeper mode), made and
removed off the loop through storage's jobs, so other requests are served meanwhile."""

from __future__ import annotations

import asyncio

from odradek.cluster.control_requests import PartitionLeadership
from odradek.storage.log import Log
from odradek.storage.log_manager import LogManager


async def local_log(logs: LogManager, state: PartitionLeadership) -> Log:
    """The partition's log, created (empty) if this broker has none yet. A log of another topic id (the
    topic was deleted and made again while this broker did not see it) is set aside by storage and an
    empty one made, as KRaft Kafka's stray replicas; Kafka's ZooKeeper mode answers
    INCONSISTENT_TOPIC_ID for ever, leaving the replica out of its partition."""
    existing = logs.get_log(state.topic, state.partition)
    if existing is not None and existing.matches_topic_id(state.topic_id):
        return existing
    job = logs.prepare_partitions(state.topic, [state.partition], topic_id=state.topic_id)
    await asyncio.to_thread(job.run)
    logs.complete_partitions(job)
    created = logs.get_log(state.topic, state.partition)
    assert created is not None
    return created


async def delete_logs(logs: LogManager, topic: str, partitions: list[int]) -> list[int]:
    """Remove the partitions' logs through storage's crash-safe deletion; returns those whose directory
    could not be renamed (a disk error: KAFKA_STORAGE_ERROR, the controller retries)."""
    job = logs.take_partition_deletion(topic, partitions)
    if not job.logs:
        return []
    await asyncio.to_thread(job.run)
    failed = [replica_log.topic_partition.partition for replica_log in job.logs]
    logs.complete_partition_deletion(job)
    return failed
