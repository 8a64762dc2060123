"""The group coordinator as the handlers see it: one method per request, on plain values.

Each method finds the shard of the group (or raises the KafkaError a client retries on: NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE), runs the step, writes its records and
answers after they are appended. JoinGroup and SyncGroup wait for the group's rebalance. The offset
APIs and the offsets' expiry are `offsets` (group_offsets.py).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from odradek.config.broker import BrokerConfig
from odradek.config.group_catalog import GroupConfigLookup, no_group_configs
from odradek.coordinator import classic_join, classic_members, group_admin
from odradek.coordinator.classic_join import JoinContext
from odradek.coordinator.client_regex import RegexMatcher
from odradek.coordinator.consumer_describe import describe_consumer_group
from odradek.coordinator.consumer_group import ConsumerGroup
from odradek.coordinator.consumer_regexes import TopicFilter, describe_all
from odradek.coordinator.group_admin import ListedGroup
from odradek.coordinator.group_offsets import GroupOffsets
from odradek.coordinator.group_runtime import GroupRuntime
from odradek.coordinator.ports import InternalTopics, MetadataView
from odradek.coordinator.regex_lane import Requester
from odradek.coordinator.settings import OFFSETS_TOPIC, GroupSettings
from odradek.coordinator.share_coordinator import ShareGroups
from odradek.partition.end_offsets import PartitionEndOffsets
from odradek.partition.leadership import Leadership
from odradek.partition.share.persister import SharePersister
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.messages.consumer_group_describe import DescribedGroup as ConsumerDescribedGroup
from odradek.protocol.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from odradek.protocol.messages.describe_groups import DescribedGroup
from odradek.protocol.messages.heartbeat import HeartbeatRequest
from odradek.protocol.messages.join_group import JoinGroupRequest, JoinGroupResponse
from odradek.protocol.messages.leave_group import LeaveGroupRequest, MemberIdentity, MemberResponse
from odradek.protocol.messages.sync_group import SyncGroupRequest, SyncGroupResponse
from odradek.storage.log_manager import LogManager

log = logging.getLogger("odradek.coordinator")


class GroupCoordinator:
    def __init__(
        self,
        config: BrokerConfig,
        cluster: MetadataView,
        topics: InternalTopics,
        logs: LogManager,
        node_id: int,
        regexes: RegexMatcher | None = None,
        *,
        leadership: Leadership,
        share_persister: SharePersister | None = None,
        end_offsets: PartitionEndOffsets | None = None,
        group_configs: GroupConfigLookup = no_group_configs,
        **runtime_options: Any,
    ) -> None:
        self.settings = GroupSettings(config, group_configs)
        self.cluster = cluster
        self.topics = topics
        self.node_id = node_id
        #: Where members' regexes are checked and resolved (the broker's, shared with ListTransactions;
        #: one of its own otherwise, closed when it stops).
        self.regexes = regexes if regexes is not None else RegexMatcher()
        self._own_regexes = regexes is None
        #: `clock` and `timer_factory` may be given for tests (see GroupRuntime).
        self.runtime = GroupRuntime(
            self.settings,
            logs,
            cluster,
            node_id,
            self.regexes,
            leadership=leadership,
            **runtime_options,
        )
        #: Share groups (KIP-932); `share_persister` keeps their partitions' state (the share coordinator),
        #: `end_offsets` tells the partitions' ends for their lag.
        self.share = ShareGroups(self.runtime, cluster, share_persister, end_offsets)
        #: OffsetCommit, TxnOffsetCommit, OffsetFetch, OffsetDelete and the offsets' expiry.
        self.offsets = GroupOffsets(self.runtime, self.settings)
        self.started = False

    # ----- lifecycle -------------------------------------------------------------------------------

    async def start(self) -> None:
        """Create `__consumer_offsets` now if the internal-topic port says so (a single node), and load
        the partitions this broker leads."""
        self.started = True
        if self.topics.created_at_startup:
            await self.ensure_offsets_topic()
        self.refresh_leadership()
        self.offsets.schedule_expiry()

    def stop(self) -> None:
        self.started = False
        self.offsets.stop_expiry()
        self.runtime.stop_waiting()
        for partition in list(self.runtime.shards):
            self.runtime.resign(partition)
        if self._own_regexes:
            self.regexes.close()

    async def ensure_offsets_topic(self) -> bool:
        """Create `__consumer_offsets` (compacted, internal) if it is missing; True if it exists now.
        Its partitions are made off the loop; concurrent callers share one creation."""
        if self.cluster.topic(OFFSETS_TOPIC) is not None:
            return True
        return await asyncio.shield(self._offsets_topic_creation())

    def _offsets_topic_creation(self) -> asyncio.Task[bool]:
        """The creation of `__consumer_offsets` under way, started if there is none."""
        return self.runtime.topic_creation(self._create_offsets_topic)

    async def _create_offsets_topic(self) -> bool:
        configs = {
            "cleanup.policy": "compact",
            "compression.type": "producer",
            "segment.bytes": str(self.settings.offsets_topic_segment_bytes),
        }
        replication = self.settings.offsets_topic_replication_factor
        created = await self.runtime.create_topic(self.topics, replication, configs)
        if created and self.started:
            self.refresh_leadership()
        return created

    def refresh_leadership(self) -> None:
        """Load the partitions of `__consumer_offsets` this broker leads (as its replica manager says, not
        its metadata cache); drop the ones it no longer does."""
        topic = self.cluster.topic(OFFSETS_TOPIC)
        if topic is None:
            return
        for state in topic.partitions:
            if self.runtime.leads(state.partition):
                self.runtime.become_leader(state.partition)
            elif state.partition in self.runtime.shards:
                self.runtime.resign(state.partition)

    def coordinator_node(self, group_id: str) -> int | None:
        """The broker that coordinates `group_id` (the leader of its partition), None if none yet.
        A missing `__consumer_offsets` is created in the background meanwhile (None until it exists:
        COORDINATOR_NOT_AVAILABLE, which clients retry, as Kafka answers while it creates the topic)."""
        if not self.started:
            return None
        if self.cluster.topic(OFFSETS_TOPIC) is None:
            self._offsets_topic_creation()
            return None
        state = self.cluster.partition(OFFSETS_TOPIC, self.runtime.partition_for(group_id))
        if state is None or state.leader_id < 0:
            return None
        return int(state.leader_id)

    # ----- classic groups --------------------------------------------------------------------------

    async def join_group(
        self, request: JoinGroupRequest, api_version: int, client_id: str, client_host: str
    ) -> JoinGroupResponse:
        if not request.group_id:
            return JoinGroupResponse(error_code=ErrorCode.INVALID_GROUP_ID, member_id=request.member_id)
        timeout = request.session_timeout_ms
        if not self.settings.min_session_timeout_ms <= timeout <= self.settings.max_session_timeout_ms:
            return JoinGroupResponse(
                error_code=ErrorCode.INVALID_SESSION_TIMEOUT, member_id=request.member_id
            )
        if api_version == 0 or request.rebalance_timeout_ms == -1:
            request.rebalance_timeout_ms = timeout  # v0 has no rebalance timeout: the session's
        try:
            shard = self.runtime.shard_for(request.group_id)
        except KafkaError as error:
            return JoinGroupResponse(error_code=error.error_code, member_id=request.member_id)
        future: asyncio.Future[JoinGroupResponse] = asyncio.get_running_loop().create_future()
        context = JoinContext(api_version, client_id, client_host)
        self.runtime.write(shard, classic_join.join_group(shard.rebalancer, request, context, future))
        return await future

    async def sync_group(self, request: SyncGroupRequest) -> SyncGroupResponse:
        if not request.group_id:
            return SyncGroupResponse(error_code=ErrorCode.INVALID_GROUP_ID, assignment=b"")
        try:
            shard = self.runtime.shard_for(request.group_id)
        except KafkaError as error:
            return SyncGroupResponse(error_code=error.error_code, assignment=b"")
        future: asyncio.Future[SyncGroupResponse] = asyncio.get_running_loop().create_future()
        self.runtime.write(shard, classic_members.sync_group(shard.rebalancer, request, future))
        return await future

    def heartbeat(self, request: HeartbeatRequest) -> ErrorCode:
        if not request.group_id:
            return ErrorCode.INVALID_GROUP_ID
        try:
            shard = self.runtime.shard_for(request.group_id)
            return classic_members.heartbeat(shard.rebalancer, request)
        except KafkaError as error:
            if error.error_code is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                return ErrorCode.NONE  # Kafka answers heartbeats blindly while loading
            return error.error_code

    def leave_group(
        self, request: LeaveGroupRequest, members: list[MemberIdentity]
    ) -> tuple[ErrorCode, list[MemberResponse]]:
        if not request.group_id:
            return ErrorCode.INVALID_GROUP_ID, []
        try:
            shard = self.runtime.shard_for(request.group_id)
            error, responses, result = classic_members.leave_group(shard.rebalancer, request, members)
        except KafkaError as failure:
            return failure.error_code, []
        self.runtime.write(shard, result)
        return error, responses

    # ----- consumer groups (KIP-848) ---------------------------------------------------------------

    async def consumer_group_heartbeat_committed(
        self,
        request: ConsumerGroupHeartbeatRequest,
        api_version: int,
        client_id: str,
        client_host: str,
        describable: TopicFilter = describe_all,
        *,
        requester: Requester,
    ) -> ConsumerGroupHeartbeatResponse:
        """A heartbeat answered once what it wrote is on the in-sync replicas (the new coordinator's
        runtime completes a write's response only when it is committed): a member is never told an
        epoch or assignment a failover would take back. The error, if not: COORDINATOR_NOT_AVAILABLE
        (timed out, ISR too small) or NOT_COORDINATOR. `requester`: who sent it (a regex it brings is
        checked in that principal's name, and dropped if its connection closes meanwhile)."""
        regex = request.subscribed_topic_regex
        if regex and self._needs_check(request.group_id, regex):
            # RE2's verdict, from the worker: Kafka checks a regex with RE2/J when a member brings one
            # no member of the group subscribes to yet.
            try:
                await self.regexes.check(regex, "SubscribedTopicRegex", requester)
            except KafkaError as invalid:
                return ConsumerGroupHeartbeatResponse(
                    error_code=invalid.error_code, error_message=invalid.error_message
                )
        partition = self.runtime.partition_for(request.group_id)
        before = self.runtime.log_end(partition)
        response = self.consumer_group_heartbeat(request, api_version, client_id, client_host, describable)
        if response.error_code != ErrorCode.NONE:
            return response
        error = await self.runtime.committed(partition, before)
        if error is not None:
            return ConsumerGroupHeartbeatResponse(error_code=error, error_message=error.message)
        return response

    def _needs_check(self, group_id: str, regex: str) -> bool:
        """Whether a heartbeat's `regex` must be compiled: not when a member of the group subscribes to
        it already (it was checked when it came), nor when the heartbeat will be refused anyway (no
        group id, or a group this broker does not coordinate now)."""
        if not group_id:
            return False
        try:
            group = self.runtime.shard_for(group_id).groups.get(group_id)
        except KafkaError:
            return False
        return not (isinstance(group, ConsumerGroup) and group.subscribed_regexes()[regex] > 0)

    def consumer_group_heartbeat(
        self,
        request: ConsumerGroupHeartbeatRequest,
        api_version: int,
        client_id: str,
        client_host: str,
        describable: TopicFilter = describe_all,
    ) -> ConsumerGroupHeartbeatResponse:
        """One heartbeat; errors come back in the response (with their message). `describable`: the
        topics the member may DESCRIBE, of those its regex matches."""
        try:
            shard = self.runtime.shard_for(request.group_id) if request.group_id else None
            if shard is None:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "GroupId can't be empty.")
            result = shard.consumer.heartbeat(request, api_version, client_id, client_host, describable)
        except KafkaError as error:
            log.info(
                "consumer group %s heartbeat of %s (epoch %d): %s",
                request.group_id,
                request.member_id,
                request.member_epoch,
                error,
            )
            return ConsumerGroupHeartbeatResponse(
                error_code=error.error_code, error_message=error.error_message or error.error_code.message
            )
        written = self.runtime.write(shard, result)
        if written is not None:
            return ConsumerGroupHeartbeatResponse(error_code=written, error_message=written.message)
        assert result.response is not None
        return result.response

    def consumer_group_describe(self, group_id: str) -> ConsumerDescribedGroup:
        try:
            shard = self.runtime.shard_for(group_id)
        except KafkaError as error:
            return ConsumerDescribedGroup(error_code=error.error_code, group_id=group_id)
        return describe_consumer_group(shard, group_id, self.cluster)

    # ----- transactions ----------------------------------------------------------------------------

    def complete_transaction(self, partition: int, producer_id: int, committed: bool) -> None:
        """A transaction marker was appended to `__consumer_offsets-<partition>`: the offsets the
        transaction committed there become visible, or are dropped."""
        self.runtime.complete_transaction(partition, producer_id, committed)

    # ----- administration --------------------------------------------------------------------------

    def describe_group(self, group_id: str, api_version: int) -> DescribedGroup:
        try:
            shard = self.runtime.shard_for(group_id)
        except KafkaError as error:
            return DescribedGroup(error_code=error.error_code, group_id=group_id)
        return group_admin.describe_group(shard, group_id, api_version)

    def list_groups(self, states: set[str], types: set[str]) -> tuple[ErrorCode, list[ListedGroup]]:
        """Groups of every loaded partition; COORDINATOR_LOAD_IN_PROGRESS while any is still loading."""
        listed: list[ListedGroup] = []
        for shard in self.runtime.active_shards():
            listed += group_admin.list_groups(shard, states, types)
        error = ErrorCode.NONE if self.runtime.all_loaded() else ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return error, listed

    def delete_groups(self, group_ids: list[str]) -> dict[str, ErrorCode]:
        answers: dict[str, ErrorCode] = {}
        by_shard: dict[int, list[str]] = {}
        for group_id in group_ids:  # the empty group id included, as Kafka keeps it for old clients
            try:
                by_shard.setdefault(self.runtime.shard_for(group_id).partition, []).append(group_id)
            except KafkaError as failure:
                answers[group_id] = failure.error_code
        for partition, ids in by_shard.items():
            shard = self.runtime.shards[partition]
            result = group_admin.delete_groups(shard, ids)
            written = self.runtime.write(shard, result)
            assert result.response is not None
            for group_id, code in result.response.items():
                answers[group_id] = written if written is not None and code is ErrorCode.NONE else code
        return answers
