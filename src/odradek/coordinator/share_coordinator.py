"""The group coordinator's share groups (KIP-932) as the handlers see them: heartbeat and describe.

A heartbeat is answered once what it wrote is on the in-sync replicas, as a consumer group's. Before it
runs, the partitions its group subscribes to whose share-group state the share coordinators do not
hold yet are initialised there (`SharePersister.initialize`, Kafka's InitializeShareGroupState step)
and recorded (ShareGroupStatePartitionMetadata); only then are they assigned, so a share partition
never serves a group whose state could be lost. A partition whose initialisation fails is left out of
the assignment and tried again at a later heartbeat.
"""

from __future__ import annotations

import logging
import uuid

from odradek.coordinator.group_runtime import GroupRuntime
from odradek.coordinator.share_group import Partitions, ShareGroup
from odradek.coordinator.share_members import SIMPLE_ASSIGNOR, PartitionsToInitialize, TopicsMetadata
from odradek.coordinator.share_offsets import ShareOffsets
from odradek.partition.end_offsets import PartitionEndOffsets
from odradek.partition.share.persister import SharePartitionKey, SharePersister, ShareStateError
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.messages.share_group_describe import (
    Assignment,
    DescribedGroup,
    Member,
    TopicPartitions,
)
from odradek.protocol.messages.share_group_heartbeat import (
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)

log = logging.getLogger("odradek.coordinator.share")

#: Start offset of an initialised share partition that the leader resolves with share.auto.offset.reset.
UNRESOLVED_START_OFFSET = -1


class ShareGroups:
    def __init__(
        self,
        runtime: GroupRuntime,
        topics: TopicsMetadata,
        persister: SharePersister | None,
        end_offsets: PartitionEndOffsets | None = None,
    ) -> None:
        self.runtime = runtime
        self.topics = topics
        self.persister = persister
        #: The admin side of the group's start offsets (and lag, with `end_offsets`); None without the
        #: share coordinator.
        self.offsets = (
            ShareOffsets(runtime, topics, persister, end_offsets) if persister is not None else None
        )
        #: Partitions whose initialisation is under way, by group: no other heartbeat starts them again.
        self._initializing: dict[str, Partitions] = {}

    @property
    def enabled(self) -> bool:
        return self.runtime.settings.share_groups_enabled

    async def heartbeat(
        self, request: ShareGroupHeartbeatRequest, client_id: str, client_host: str
    ) -> ShareGroupHeartbeatResponse:
        """One heartbeat, answered once its records are committed; errors come back in the response."""
        if self.persister is None:
            # Without the share coordinators a share partition's state could not outlive its leader.
            return ShareGroupHeartbeatResponse(
                error_code=ErrorCode.UNSUPPORTED_VERSION,
                error_message="Share groups need the share coordinator, which this broker does not run.",
            )
        if request.group_id and request.member_epoch >= 0:
            await self._initialize_subscribed(request.group_id)
        partition = self.runtime.partition_for(request.group_id)
        before = self.runtime.log_end(partition)
        try:
            shard = self.runtime.shard_for(request.group_id) if request.group_id else None
            if shard is None:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "GroupId can't be empty.")
            result = shard.share.heartbeat(request, client_id, client_host)
        except KafkaError as error:
            log.info(
                "share group %s heartbeat of %s (epoch %d): %s",
                request.group_id,
                request.member_id,
                request.member_epoch,
                error,
            )
            return ShareGroupHeartbeatResponse(
                error_code=error.error_code, error_message=error.error_message or error.error_code.message
            )
        written = self.runtime.write(shard, result)
        if written is None:
            written = await self.runtime.committed(partition, before)
        if written is not None:
            return ShareGroupHeartbeatResponse(error_code=written, error_message=written.message)
        assert result.response is not None
        if request.member_epoch == 0:
            # A new subscription's partitions: initialised now, assigned from the next heartbeat on.
            await self._initialize_subscribed(request.group_id)
        return result.response

    def describe(self, group_id: str) -> DescribedGroup:
        try:
            shard = self.runtime.shard_for(group_id)
        except KafkaError as error:
            return DescribedGroup(error_code=error.error_code, group_id=group_id)
        group = shard.groups.get(group_id)
        if not isinstance(group, ShareGroup):
            reason = "not found" if group is None else "is not a share group"
            return DescribedGroup(
                error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                error_message=f"Group {group_id} {reason}.",
                group_id=group_id,
                group_state="Dead",
            )
        return DescribedGroup(
            error_code=ErrorCode.NONE,
            group_id=group_id,
            group_state=group.state_name,
            group_epoch=group.group_epoch,
            assignment_epoch=group.assignment_epoch,
            assignor_name=SIMPLE_ASSIGNOR,
            members=[
                Member(
                    member_id=m.member_id,
                    rack_id=m.rack_id,
                    member_epoch=m.member_epoch,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    subscribed_topic_names=list(m.subscribed_topic_names),
                    assignment=self._assignment(m.assigned),
                )
                for m in group.members.values()
            ],
        )

    async def delete_state(self, group_ids: list[str]) -> dict[str, ErrorCode]:
        """DeleteGroups' first step for the empty share groups among `group_ids`: their partitions'
        state deleted on the share coordinators. The groups whose state could not all be deleted, with
        the error (they are not deleted); the others, and groups of other types, are left out."""
        refused: dict[str, ErrorCode] = {}
        for group_id in group_ids:
            try:
                group = self.runtime.shard_for(group_id).groups.get(group_id)
            except KafkaError:
                continue  # delete_groups answers why
            if not isinstance(group, ShareGroup) or not group.is_empty or self.persister is None:
                continue
            for topic_id, (_, partitions) in group.initialized.items():
                for number in sorted(partitions):
                    try:
                        await self.persister.delete(SharePartitionKey(group_id, topic_id, number))
                    except ShareStateError as failure:
                        refused[group_id] = failure.error_code
        return refused

    # ----- share-group state initialisation ----------------------------------------------------------

    def topics_deleted(self, topic_ids: set[uuid.UUID]) -> None:
        """Topics were deleted: every share group coordinated here forgets their partitions' state
        initialisation (a new ShareGroupStatePartitionMetadata record), as Kafka 4.4's
        maybeCleanupShareGroupState on a deletion; the writes are not waited for. The members'
        assignments drop them at their next heartbeat (the subscribed topics' hash changes)."""
        for shard in self.runtime.active_shards():
            for group in [g for g in shard.groups.values() if isinstance(g, ShareGroup)]:
                if not topic_ids & group.initialized.keys():
                    continue
                error = self.runtime.write(shard, shard.share.mark_uninitialized(group.group_id, topic_ids))
                if error is not None:  # no longer coordinated here: the next coordinator's load has it
                    log.info("share group %s: a deleted topic not forgotten here (%s)", group.group_id, error)

    async def _initialize_subscribed(self, group_id: str) -> None:
        """Initialise the state of the group's subscribed partitions that have none yet, then record it."""
        try:
            shard = self.runtime.shard_for(group_id)
        except KafkaError:
            return  # the heartbeat itself answers why
        wanted = shard.share.to_initialize(group_id, self._initializing.get(group_id, {}))
        if wanted is None or self.persister is None:
            return
        busy = self._initializing.setdefault(group_id, {})
        for topic_id, (_, partitions) in wanted.partitions.items():
            busy[topic_id] = busy.get(topic_id, frozenset()) | partitions
        try:
            done = await self._initialize(wanted, self.persister)
        finally:
            self._release(group_id, wanted)
        # a topic deleted meanwhile is not recorded again (its cleanup may have run already)
        done = {t: v for t, v in done.items() if self.topics.topic_by_id(t) is not None}
        if not done:
            return
        try:
            shard = self.runtime.shard_for(group_id)
        except KafkaError:
            return  # no longer coordinated here: the next coordinator initialises them again
        partition = shard.partition
        before = self.runtime.log_end(partition)
        if self.runtime.write(shard, shard.share.mark_initialized(group_id, done)) is None:
            await self.runtime.committed(partition, before)

    async def _initialize(
        self, wanted: PartitionsToInitialize, persister: SharePersister
    ) -> dict[uuid.UUID, tuple[str, frozenset[int]]]:
        done: dict[uuid.UUID, tuple[str, frozenset[int]]] = {}
        for topic_id, (name, partitions) in wanted.partitions.items():
            for number in sorted(partitions):
                key = SharePartitionKey(wanted.group_id, topic_id, number)
                try:
                    await persister.initialize(key, wanted.group_epoch, UNRESOLVED_START_OFFSET)
                except ShareStateError as refused:
                    log.warning("share group state of %s not initialised: %s", key.coordinator_key, refused)
                    continue
                done[topic_id] = (name, done.get(topic_id, (name, frozenset()))[1] | {number})
        return done

    def _release(self, group_id: str, wanted: PartitionsToInitialize) -> None:
        busy = self._initializing.get(group_id, {})
        for topic_id, (_, partitions) in wanted.partitions.items():
            left = busy.get(topic_id, frozenset()) - partitions
            if left:
                busy[topic_id] = left
            else:
                busy.pop(topic_id, None)
        if not busy:
            self._initializing.pop(group_id, None)

    def _assignment(self, partitions: Partitions) -> Assignment:
        """By topic, named; a topic no longer in the metadata is left out, as Kafka does."""
        topics = []
        for topic_id, numbers in sorted(partitions.items()):
            described = self.topics.topic_by_id(topic_id)
            if described is not None:
                topics.append(
                    TopicPartitions(topic_id=topic_id, topic_name=described.name, partitions=sorted(numbers))
                )
        return Assignment(topic_partitions=topics)
