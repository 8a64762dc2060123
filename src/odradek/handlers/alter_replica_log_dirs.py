"""AlterReplicaLogDirs (key 34, v0-2): where a replica's log lives, as Kafka 3.9 answers for a move that
needs no copy.

Version notes:
- v0 and v1 are the same (v1: throttling after the response); v2 is flexible.
- Each partition, in Kafka's order of checks: a topic whose future-log directory name would pass 255
  characters is INVALID_TOPIC_EXCEPTION; a path that is not one of log.dirs (compared as absolute
  paths) LOG_DIR_NOT_FOUND; a topic or partition the broker does not know UNKNOWN_TOPIC_OR_PARTITION,
  one it knows but holds no replica of REPLICA_NOT_AVAILABLE; a replica already in that directory
  NONE (nothing to do).
- odradek does not move a replica between two of its log directories (Kafka copies it into a future
  log and swaps): such a move is refused with INVALID_REQUEST, and the replica stays where it is.
- Needs ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED for every partition, as in Kafka.
"""

from __future__ import annotations

import logging
from pathlib import Path

from odradek.handlers.authorization import authorize_cluster
from odradek.handlers.context import RequestContext
from odradek.handlers.registry import handles
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.alter_replica_log_dirs import (
    AlterReplicaLogDirPartitionResult,
    AlterReplicaLogDirsRequest,
    AlterReplicaLogDirsResponse,
    AlterReplicaLogDirTopicResult,
)
from odradek.security.acl import AclOperation

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
                    _alter(topic.name, index, destination.path, context)
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


def _alter(topic: str, index: int, path: str, context: RequestContext) -> ErrorCode:
    services = context.services
    if len(f"{topic}-{index}") + _FUTURE_DIR_SUFFIX_LENGTH > _MAX_DIR_NAME_LENGTH:
        return ErrorCode.INVALID_TOPIC_EXCEPTION
    destination = Path(path).absolute()
    if destination not in {log_dir.absolute() for log_dir in services.logs.log_dirs}:
        return ErrorCode.LOG_DIR_NOT_FOUND
    if services.cluster.partition(topic, index) is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    replica = services.logs.get_log(topic, index)
    if replica is None:
        return ErrorCode.REPLICA_NOT_AVAILABLE
    if replica.dir.parent.absolute() == destination:
        return ErrorCode.NONE
    log.warning(
        "AlterReplicaLogDirs: %s-%d not moved from %s to %s (odradek moves no replica between log dirs)",
        topic,
        index,
        replica.dir.parent,
        destination,
    )
    return ErrorCode.INVALID_REQUEST
