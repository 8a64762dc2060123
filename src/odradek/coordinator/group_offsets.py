"""The group coordinator's offset APIs (OffsetCommit, TxnOffsetCommit, OffsetFetch, OffsetDelete) and
the periodic expiry of committed offsets, as Kafka's OffsetMetadataManager and its cleanup timer.

Each method finds the shard of the group (or raises the KafkaError a client retries on), runs the step
(offset_requests.py), writes its records and answers once they are committed where the API says so.
"""

from __future__ import annotations

import asyncio
import logging

from odradek.coordinator import group_admin, offset_requests
from odradek.coordinator.group_runtime import GroupRuntime
from odradek.coordinator.offset_requests import OffsetCommitContext, OffsetCommitItem, TopicPartition
from odradek.coordinator.offsets import OffsetAndMetadata
from odradek.coordinator.records import offset_commit_record
from odradek.coordinator.result import CoordinatorResult
from odradek.coordinator.settings import GroupSettings
from odradek.protocol.error_codes import ErrorCode, KafkaError

log = logging.getLogger("odradek.coordinator")

FetchedOffsets = list[tuple[str, list[tuple[int, OffsetAndMetadata | None]]]]


class GroupOffsets:
    """The committed offsets of the groups on `runtime`'s shards."""

    def __init__(self, runtime: GroupRuntime, settings: GroupSettings) -> None:
        self.runtime = runtime
        self.settings = settings
        self._expiry: asyncio.TimerHandle | None = None

    def commit_offsets(
        self, context: OffsetCommitContext, items: list[OffsetCommitItem]
    ) -> dict[TopicPartition, ErrorCode]:
        """Per-partition errors; a KafkaError for a group-level one (it applies to every partition).
        The empty group id is a group like any other here, as Kafka keeps it for old clients."""
        shard = self.runtime.shard_for(context.group_id)
        result = offset_requests.commit_offsets(shard, context, items)
        error = self.runtime.write(shard, result)
        assert result.response is not None
        if error is not None:
            return {tp: error for tp in result.response}
        return result.response

    async def commit_offsets_committed(
        self, context: OffsetCommitContext, items: list[OffsetCommitItem]
    ) -> dict[TopicPartition, ErrorCode]:
        """OffsetCommit: `commit_offsets`, answered once the commit (or the earlier write it stands on)
        is on the in-sync replicas and fsynced if due, as Kafka's acks=-1 append; a KafkaError for the
        whole commit when it is not (REQUEST_TIMED_OUT, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR)."""
        errors = self.commit_offsets(context, items)
        error = await self.runtime.offsets_committed(context.group_id, errors)
        if error is not None:
            raise KafkaError(error)
        return errors

    async def commit_transactional_offsets(
        self,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        member_id: str,
        generation_id: int,
        items: list[OffsetCommitItem],
    ) -> dict[TopicPartition, ErrorCode]:
        """TxnOffsetCommit: the offsets are written in a transactional batch of the producer and become
        visible only when the COMMIT marker reaches this partition (GroupCoordinator's
        `complete_transaction`). Each partition written is answered once the batch is committed (on the
        in-sync replicas, fsynced if due), else with the error the write failed with."""
        shard = self.runtime.shard_for(group_id)
        group = shard.groups.get(group_id)
        # Kafka checks the member and generation only when the client sends them (TxnOffsetCommit v3+).
        if member_id and generation_id >= 0 and group is not None:
            generation = getattr(group, "generation_id", getattr(group, "group_epoch", generation_id))
            if generation != generation_id:
                raise KafkaError(ErrorCode.ILLEGAL_GENERATION)
        now = self.runtime.now_ms()
        max_bytes = self.settings.offset_metadata_max_bytes
        errors: dict[TopicPartition, ErrorCode] = {}
        records = []
        for item in items:
            metadata = item.metadata or ""
            if len(metadata.encode()) > max_bytes:
                errors[(item.topic, item.partition)] = ErrorCode.OFFSET_METADATA_TOO_LARGE
                continue
            records.append(
                offset_commit_record(
                    group_id, item.topic, item.partition, item.offset, item.leader_epoch, metadata, now, None
                )
            )
            errors[(item.topic, item.partition)] = ErrorCode.NONE
        if records:
            error = self.runtime.write_transactional(shard, records, producer_id, producer_epoch)
            if error is not None:
                return {tp: error for tp in errors}
        error = await self.runtime.offsets_committed(group_id, errors)
        if error is None:
            return errors
        return {tp: error if code is ErrorCode.NONE else code for tp, code in errors.items()}

    def fetch_offsets(
        self,
        group_id: str,
        wanted: list[tuple[str, list[int]]] | None,
        member_id: str | None = None,
        member_epoch: int = -1,
    ) -> FetchedOffsets:
        """Committed offsets (None where there is none); a KafkaError for a group-level error."""
        shard = self.runtime.shard_for(group_id)
        group = shard.groups.get(group_id)
        if group is not None and member_id is not None:
            shard.validate_offset_fetch(group, member_id, member_epoch)
        return offset_requests.fetch_offsets(shard, group_id, wanted)

    def unstable_offsets(self, group_id: str) -> set[TopicPartition]:
        """Partitions of the group with an offset commit not settled yet: a transaction's before its
        COMMIT or ABORT marker, any commit before the in-sync replicas hold it (OffsetFetch's
        require_stable answers them UNSTABLE_OFFSET_COMMIT meanwhile)."""
        return self.runtime.shard_for(group_id).pending_offsets(group_id)

    def delete_offsets(
        self, group_id: str, wanted: list[tuple[str, list[int]]]
    ) -> dict[TopicPartition, ErrorCode]:
        if not group_id:
            raise KafkaError(ErrorCode.INVALID_GROUP_ID)
        shard = self.runtime.shard_for(group_id)
        result = offset_requests.delete_offsets(shard, group_id, wanted)
        error = self.runtime.write(shard, result)
        if error is not None:
            raise KafkaError(error)
        assert result.response is not None
        return result.response

    # ----- offset expiry ---------------------------------------------------------------------------

    def schedule_expiry(self) -> None:
        interval = self.settings.offsets_retention_check_interval_ms / 1000
        self._expiry = asyncio.get_running_loop().call_later(interval, self._run_expiry)

    def stop_expiry(self) -> None:
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None

    def _run_expiry(self) -> None:
        try:
            self.expire_offsets()
        except Exception:
            log.exception("offset expiry failed")
        finally:
            self.schedule_expiry()

    def expire_offsets(self) -> int:
        """Delete expired offsets, and groups left empty without offsets (Kafka's cleanupGroupMetadata)."""
        removed = 0
        for shard in self.runtime.active_shards():
            for group_id in list(shard.groups):
                records, none_left = offset_requests.expire_offsets(shard, group_id)
                group = shard.groups.get(group_id)
                if none_left and group is not None and shard.is_group_deletable(group):
                    records += group_admin.group_tombstones(shard, group_id)
                result: CoordinatorResult[None] = CoordinatorResult(records, None, replay=True)
                if records and self.runtime.write(shard, result) is None:
                    removed += len(records)
        if removed:
            log.info("offset expiry removed %d offsets and groups", removed)
        return removed
