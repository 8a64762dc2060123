"""AlterReplicaLogDirs (key 34, v0-2): move a replica between this broker's log dirs (KIP-113), as
Kafka 3.9 does.

Version notes:
- v0 and v1 are the same (v1: throttling after the response); v2 is flexible.
- Each partition, in Kafka's order of checks: a topic whose future-log directory name would pass 255
  characters is INVALID_TOPIC_EXCEPTION; a path that is not one of log.dirs (compared as absolute
  paths) LOG_DIR_NOT_FOUND, one that failed KAFKA_STORAGE_ERROR; an offline partition (its log dir
  failed) KAFKA_STORAGE_ERROR; a move of the partition to another dir under way stops; a topic or
  partition the broker does not know UNKNOWN_TOPIC_OR_PARTITION, one it knows but holds no replica of
  REPLICA_NOT_AVAILABLE (the dir is remembered: the replica is made there when it comes, as Kafka's
  preferred log dir); a replica already in that directory NONE (nothing to do).
- Otherwise NONE once its future log ``<topic>-<partition>.<uuid>-future`` exists in the target dir
  (KAFKA_STORAGE_ERROR while any log dir is offline, as Kafka): the broker copies the replica into it
  while it serves (server/log_dir_moves.py) and swaps it in once caught up (storage/log_moves.py).
- Needs ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED for every partition, as in Kafka.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from odradek.handlers._common.authorization import authorize_cluster
from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.registry import handles
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.alter_replica_log_dirs import (
    AlterReplicaLogDirPartitionResult,
    AlterReplicaLogDirsRequest,
    AlterReplicaLogDirsResponse,
    AlterReplicaLogDirTopicResult,
)
from odradek.security.acl import AclOperation
from odradek.storage.errors import LogStorageError
from odradek.storage.log_deletion import FileDeletionJob
from odradek.storage.log_manager import LogManager
from odradek.storage.partition import TopicPartition

log = logging.getLogger(__name__)

#: A future log's directory is "<topic>-<partition>.<32 hex digits>-future" (KAFKA-4893's limit).
_FUTURE_DIR_SUFFIX_LENGTH = len(".") + 32 + len("-future")
_MAX_DIR_NAME_LENGTH = 255


@handles(ApiKey.ALTER_REPLICA_LOG_DIRS, 0, 2)
async def handle_alter_replica_log_dirs(
    request: AlterReplicaLogDirsRequest, context: RequestContext
) -> AlterReplicaLogDirsResponse:
    authorized = authorize_cluster(context, AclOperation.ALTER)
    by_topic: dict[str, list[AlterReplicaLogDirPartitionResult]] = {}
    for destination in request.dirs:
        for topic in destination.topics:
            for index in topic.partitions:
                code = (
                    await _alter(topic.name, index, destination.path, context)
                    if authorized
                    else ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                )
                by_topic.setdefault(topic.name, []).append(
                    AlterReplicaLogDirPartitionResult(partition_index=index, error_code=code)
                )
    return AlterReplicaLogDirsResponse(
        throttle_time_ms=0,
        results=[AlterReplicaLogDirTopicResult(topic_name=t, partitions=ps) for t, ps in by_topic.items()],
    )


async def _alter(topic: str, index: int, path: str, context: RequestContext) -> ErrorCode:
    services = context.services
    logs = services.logs
    if len(f"{topic}-{index}") + _FUTURE_DIR_SUFFIX_LENGTH > _MAX_DIR_NAME_LENGTH:
        return ErrorCode.INVALID_TOPIC_EXCEPTION
    wanted = Path(path).absolute()
    destination = next((d for d in logs.log_dirs if d.absolute() == wanted), None)
    if destination is None:
        return ErrorCode.LOG_DIR_NOT_FOUND
    if destination in logs.offline_log_dirs or logs.is_offline(topic, index):
        return ErrorCode.KAFKA_STORAGE_ERROR
    tp = TopicPartition(topic, index)
    target = logs.moves.target(tp)
    if target is not None and target != destination:
        _remove(logs.moves.cancel_move(topic, index), logs)  # Kafka's futureReplicaDirChanged
    replica = logs.get_log(topic, index)
    if replica is None:
        if services.cluster.partition(topic, index) is None:
            # Kafka remembers a dir for any name; only known partitions here, so that names a client
            # makes up do not pile up in memory
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        logs.moves.preferred[tp] = destination  # made there when a LeaderAndIsr brings it
        return ErrorCode.REPLICA_NOT_AVAILABLE
    if replica.dir.parent == destination or logs.moves.target(tp) == destination:
        return ErrorCode.NONE
    try:
        future = await asyncio.to_thread(logs.moves.create_future_log, topic, index, destination)
    except (OSError, LogStorageError) as error:
        log.warning("AlterReplicaLogDirs: no future log of %s-%d in %s: %s", topic, index, destination, error)
        return ErrorCode.KAFKA_STORAGE_ERROR
    _remove(logs.moves.install_future_log(future), logs)
    log.info("moving %s-%d from %s to %s", topic, index, replica.dir.parent, destination)
    return ErrorCode.NONE


def _remove(job: FileDeletionJob | None, logs: LogManager) -> None:
    if job is not None:
        logs.deletions.schedule_file_deletion(job, 0)
