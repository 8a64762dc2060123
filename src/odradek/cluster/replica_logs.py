"""The logs of the replicas a controller's requests create and delete (ZooKeeper mode), made and
removed off the loop through storage's jobs, so other requests are served meanwhile."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from odradek.cluster.control_requests import PartitionLeadership
from odradek.cluster.metadata import ClusterMetadata
from odradek.cluster.replication.truncation_checkpoints import TruncationCheckpoints
from odradek.logs import shortened
from odradek.partition.hosted_partition import PartitionKey
from odradek.storage.errors import InvalidLogConfigError, LogStorageError, StorageError
from odradek.storage.log import Log
from odradek.storage.log_manager import LogManager

log = logging.getLogger("odradek.cluster.replicas")


async def prepare_logs(
    logs: LogManager,
    checkpoints: TruncationCheckpoints,
    node_id: int,
    states: list[PartitionLeadership],
    cluster: ClusterMetadata,
) -> tuple[list[tuple[PartitionLeadership, Log]], list[PartitionKey]]:
    """For a LeaderAndIsr: each partition's log (``local_log``), and the partitions whose log could not
    be made (a disk error). Returns once no log about to lead (``leader == node_id``) has a truncation
    whose lowered recovery point is not on disk: producers would write where the file on disk still
    claims fsynced records (Kafka's truncations write it before going on). Each wait lets other
    partitions' logs be truncated, so the check is made again until none is pending; a log whose write
    failed is offline (``checkpoints.offline``), for the caller to answer."""
    prepared: list[tuple[PartitionLeadership, Log]] = []
    failed: list[PartitionKey] = []
    for state in states:
        try:
            prepared.append((state, await local_log(logs, state, cluster)))
        except (OSError, StorageError) as error:  # one partition's disk failure is its own answer
            log.error("preparing the log of %s-%d failed", state.topic, state.partition, exc_info=error)
            failed.append((state.topic, state.partition))
    while waiting := [
        replica_log
        for state, replica_log in prepared
        if state.leader == node_id
        and checkpoints.pending(replica_log)
        and not checkpoints.offline(replica_log)
    ]:
        for replica_log in waiting:
            with contextlib.suppress(LogStorageError):  # offline now: logged where the write failed
                await checkpoints.written(replica_log)
    return prepared, failed


async def local_log(logs: LogManager, state: PartitionLeadership, cluster: ClusterMetadata) -> Log:
    """The partition's log, created (empty) if this broker has none yet, with the topic's configs as
    the metadata cache has them from /config/topics (as Kafka fetches them from ZooKeeper to create a
    log; the log dir's topic store holds no cluster topic's). A log of another topic id (the
    topic was deleted and made again while this broker did not see it) is set aside by storage and an
    empty one made, as KRaft Kafka's stray replicas; Kafka's ZooKeeper mode answers
    INCONSISTENT_TOPIC_ID for ever, leaving the replica out of its partition."""
    existing = logs.get_log(state.topic, state.partition)
    if existing is not None and existing.matches_topic_id(state.topic_id):
        return existing
    if existing is None and not state.is_new and logs.offline_log_dirs:
        # As Kafka's getOrCreateLog: the replica's log may be in a failed dir; an empty one made here
        # would be taken for it (KAFKA_STORAGE_ERROR: the controller marks the replica offline).
        raise LogStorageError(
            f"cannot create the log of {state.topic}-{state.partition}: log dirs "
            f"{', '.join(str(d) for d in logs.offline_log_dirs)} are offline"
        )
    known = cluster.topic(state.topic)
    config = None
    if known is not None:
        try:
            config = logs.topic_log_config(known.configs)
        except InvalidLogConfigError as error:  # written by another tool: the defaults, as before
            log.error(
                "configs of topic %s not usable for its new log: %s", state.topic, shortened(str(error))
            )
    job = logs.prepare_partitions(state.topic, [state.partition], topic_id=state.topic_id, config=config)
    await asyncio.to_thread(job.run)
    logs.complete_partitions(job)
    created = logs.get_log(state.topic, state.partition)
    assert created is not None
    return created


async def delete_logs(logs: LogManager, topic: str, partitions: list[int]) -> list[int]:
    """Remove the partitions' logs through storage's crash-safe deletion; returns those whose directory
    could not be renamed, or renamed not durably (a disk error: their log dir is offline; they answer
    KAFKA_STORAGE_ERROR and the controller retries once the broker registers again)."""
    job = logs.deletions.take_partition_deletion(topic, partitions)
    if not job.logs:
        return []
    await asyncio.to_thread(job.run)
    # a replica whose dir failed under the job is offline with it (renamed or not)
    failed = [replica_log.topic_partition.partition for replica_log in [*job.logs, *job.abandoned]]
    logs.deletions.complete_partition_deletion(job)
    return failed
