"""DescribeLogDirs (key 35): each log directory and the size of every partition in it (KIP-113).

Version notes:
- v0 and v1 are the same (v1: throttling after the response); v2 is flexible; v3 adds a top-level
  error code; v4 each directory's total and usable bytes (of its volume); v5 whether the directory is
  cordoned (KIP-1066: never, here).
- A null topic list means every partition; partitions asked for but not hosted are left out, and so
  are topics left with no partitions, as in Kafka. The offset lag of a partition is how far its log
  end is behind its high watermark (0 on a single node); a replica moving to another dir
  (AlterReplicaLogDirs) is also listed in its target dir with is_future_key, its offset lag how far its
  copy is behind the current log's end, as Kafka's.
- A log directory that failed (an I/O error in it took it offline until restart) or cannot be read is
  reported with KAFKA_STORAGE_ERROR, no partitions and no sizes, as Kafka's.
- With an authorizer: DESCRIBE on the cluster, else no directories and (v3+)
  CLUSTER_AUTHORIZATION_FAILED, as Kafka.
"""

from __future__ import annotations

import os
from pathlib import Path

from odradek.handlers._common.authorization import authorize_cluster
from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.registry import handles
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.describe_log_dirs import (
    DescribeLogDirsPartition,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    DescribeLogDirsResult,
    DescribeLogDirsTopic,
)
from odradek.security.acl import AclOperation
from odradek.storage.log import Log
from odradek.storage.partition import TopicPartition

_LONG_MAX = 2**63 - 1


@handles(ApiKey.DESCRIBE_LOG_DIRS, 0, 5)
async def handle_describe_log_dirs(
    request: DescribeLogDirsRequest, context: RequestContext
) -> DescribeLogDirsResponse:
    if not authorize_cluster(context, AclOperation.DESCRIBE):
        return DescribeLogDirsResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, results=[])
    logs = context.services.logs.logs
    if request.topics is None:
        wanted = set(logs)
    else:
        wanted = {TopicPartition(t.topic, p) for t in request.topics for p in t.partitions}
    futures = context.services.logs.future_logs
    by_dir: dict[Path, dict[str, list[tuple[int, Log, Log | None]]]] = {}
    replicas: list[tuple[TopicPartition, Log, Log | None]] = [(tp, log, None) for tp, log in logs.items()]
    replicas += [(tp, future, logs.get(tp)) for tp, future in futures.items()]
    for partition, log, current in sorted(replicas, key=lambda item: (item[0].topic, item[0].partition)):
        if partition in wanted:
            by_dir.setdefault(log.dir.parent, {}).setdefault(partition.topic, []).append(
                (partition.partition, log, current)
            )
    offline = set(context.services.logs.offline_log_dirs)
    return DescribeLogDirsResponse(
        error_code=ErrorCode.NONE,
        results=[
            _describe(log_dir, by_dir.get(log_dir, {}), log_dir in offline)
            for log_dir in context.services.logs.log_dirs
        ],
    )


def _describe(
    log_dir: Path, topics: dict[str, list[tuple[int, Log, Log | None]]], offline: bool
) -> DescribeLogDirsResult:
    path = str(log_dir.absolute())
    if offline:
        return DescribeLogDirsResult(error_code=ErrorCode.KAFKA_STORAGE_ERROR, log_dir=path, topics=[])
    try:
        volume = os.statvfs(log_dir)
    except OSError:
        return DescribeLogDirsResult(error_code=ErrorCode.KAFKA_STORAGE_ERROR, log_dir=path, topics=[])
    return DescribeLogDirsResult(
        error_code=ErrorCode.NONE,
        log_dir=path,
        topics=[
            DescribeLogDirsTopic(
                name=name,
                partitions=[
                    DescribeLogDirsPartition(
                        partition_index=index,
                        partition_size=log.size_in_bytes,
                        # Kafka's getLogEndOffsetLag: a future log's lag is to the current log's end
                        offset_lag=(
                            max(log.high_watermark - log.log_end_offset, 0)
                            if current is None
                            else current.log_end_offset - log.log_end_offset
                        ),
                        is_future_key=current is not None,
                    )
                    for index, log, current in partitions
                ],
            )
            for name, partitions in topics.items()
        ],
        total_bytes=min(volume.f_blocks * volume.f_frsize, _LONG_MAX),
        usable_bytes=min(volume.f_bavail * volume.f_frsize, _LONG_MAX),
        is_cordoned=False,
    )
