"""What a broker holds while it is controller, for one controller epoch: the fence of its writes, its
context and its channels; and what every handler does with them: compare-and-set partition states
through the fence (the writes of Kafka's PartitionStateMachine) and send requests built from the
context (Kafka's ControllerBrokerRequestBatch). Dropped whole when the controller resigns.

A state is written only while every broker it names is registered as the controller last saw it
(registrations.py): one that registered again meanwhile has its change handled first (the broker
change, as if its event came now), then the state is decided again."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Collection, Iterable

from kazoo.exceptions import NodeExistsError

from odradek.cluster.controller import election, requests, zk_state
from odradek.cluster.controller.channel import ControllerChannelManager
from odradek.cluster.controller.config import ControllerConfig
from odradek.cluster.controller.context import ControllerContext, LiveBroker, PartitionState, TopicPartition
from odradek.cluster.controller.registrations import BrokerRegistrations
from odradek.cluster.zookeeper import brokers, topics
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.controller_fence import ControllerFence
from odradek.cluster.zookeeper.errors import ZnodeVersionMovedError
from odradek.cluster.zookeeper.topic_znodes import RECOVERING, PartitionStateZnode

logger = logging.getLogger(__name__)

#: How many times a compare-and-set of a partition state is tried again after losing to another writer.
STATE_WRITE_ATTEMPTS = 3
#: How many times a state write is tried again after brokers registered meanwhile (each attempt reads
#: /brokers/ids' version again; brokers starting together move it a few times).
REGISTRATION_MOVES = 20


class ControllerTerm:
    def __init__(
        self,
        zk: ZooKeeperClient,
        settings: Callable[[], ControllerConfig],
        fence: ControllerFence,
        context: ControllerContext,
        channel: ControllerChannelManager,
        watch_topic: Callable[[str], None],
        unwatch_topic: Callable[[str], None],
        registrations: BrokerRegistrations,
        on_broker_change: Callable[[ControllerTerm], Awaitable[None]],
    ) -> None:
        self.zk = zk
        #: The controller's settings as they are now (unclean.leader.election.enable changes at run time).
        self._settings = settings
        self.fence = fence
        self.context = context
        self.channel = channel
        #: PartitionModifications for a topic (the controller owns the watches, which outlive a term)
        self.watch_topic = watch_topic
        self.unwatch_topic = unwatch_topic
        #: The registrations the controller has seen (`context.live_brokers` is read from them).
        self.registrations = registrations
        #: Kafka's BrokerChange: joins, departures and bounces (broker_changes.on_broker_change).
        self._on_broker_change = on_broker_change
        self._in_broker_change = False

    @property
    def config(self) -> ControllerConfig:
        return self._settings()

    @property
    def controller_id(self) -> int:
        return self.config.broker_id

    @property
    def listener(self) -> str:
        return self.config.inter_broker_listener

    async def handle_broker_change(self) -> None:
        """Read every registration and act on what changed (the BrokerChange event's work)."""
        self._in_broker_change = True
        try:
            await self._on_broker_change(self)
        finally:
            self._in_broker_change = False

    async def read_registrations(self) -> dict[int, LiveBroker]:
        """Every registered broker with its epoch, now seen by the controller (registrations.py)."""
        version = await asyncio.to_thread(brokers.registrations_version, self.zk)
        live = await asyncio.to_thread(zk_state.read_live_brokers, self.zk)
        self.registrations.saw(version, live)
        return live

    async def update_state(
        self, tp: TopicPartition, decide: Callable[[PartitionState], PartitionStateZnode | None]
    ) -> PartitionState | None:
        """Compare-and-set a partition's state to `decide(current)` (None: leave it), reading it again
        when another writer changed it meanwhile. The new state, or None when nothing was written.

        A state naming a broker that registered again since the controller saw its registration is
        not written: the broker change is handled first and the state decided again; while a broker
        change is being handled (or after one did not settle it), the state is left as it is, for the
        next BrokerChange event, which the new registration queued."""
        context = self.context
        state = context.states[tp]
        handled = False
        attempts = moves = 0
        while attempts < STATE_WRITE_ATTEMPTS and moves < REGISTRATION_MOVES:
            znode = decide(state)
            if znode is None:
                return None
            unseen = await self.registrations.unseen(_named(znode))
            if unseen:
                if handled or self._in_broker_change:
                    logger.warning(
                        "Controller %d leaves %s-%d as it is: brokers %s registered again since it read "
                        "their registrations (their broker change comes next)",
                        self.controller_id,
                        tp.topic,
                        tp.partition,
                        unseen,
                    )
                    return None
                logger.info(
                    "Controller %d: brokers %s registered again before %s-%d was written: their change first",
                    self.controller_id,
                    unseen,
                    tp.topic,
                    tp.partition,
                )
                handled = True
                await self.handle_broker_change()
                found = context.states.get(tp)
                if found is None:
                    return None
                state = found
                continue
            try:
                version = await asyncio.to_thread(
                    topics.update_partition_state,
                    self.fence,
                    tp.topic,
                    tp.partition,
                    znode,
                    state.partition_epoch,
                    self.registrations.version,
                )
            except ZnodeVersionMovedError:
                moves += 1  # a broker registered: whether the state names it is checked again
                await self.registrations.read_version()
                continue
            if version is not None:
                written = PartitionState(znode, version)
                context.states[tp] = written
                return written
            attempts += 1
            reread = await asyncio.to_thread(zk_state.read_partition_state, self.zk, tp)
            if reread is None:
                return None
            context.states[tp] = state = reread
        logger.warning("Partition %s-%d: state kept changing while being written", tp.topic, tp.partition)
        return None

    async def create_state(self, tp: TopicPartition) -> bool:
        """The first state of a new partition; False when no replica is live (or one exists already:
        then it is read into the context)."""
        context = self.context
        chosen = election.new_partition_leader(context.replicas(tp), context.eligible_broker_ids())
        if chosen is None:
            logger.warning(
                "New partition %s-%d has no live replica among %s",
                tp.topic,
                tp.partition,
                context.replicas(tp),
            )
            return False
        znode = PartitionStateZnode(chosen.leader, 0, chosen.isr, context.epoch)
        try:
            await asyncio.to_thread(
                topics.create_partition_states, self.fence, tp.topic, {tp.partition: znode}
            )
        except NodeExistsError:
            state = await asyncio.to_thread(zk_state.read_partition_state, self.zk, tp)
            if state is not None:
                context.states[tp] = state
            return False
        context.states[tp] = PartitionState(znode, 0)
        return True

    def next_state(self, znode: PartitionStateZnode, leader: int, isr: list[int]) -> PartitionStateZnode:
        # every change the controller makes bumps the leader epoch and keeps the leader recovery state
        # (LeaderAndIsr.newLeaderAndIsr): only the leader's AlterPartition marks a partition recovered
        return PartitionStateZnode(
            leader, znode.leader_epoch + 1, isr, self.context.epoch, znode.leader_recovery_state
        )

    def offline_state(self, znode: PartitionStateZnode, leader: int, isr: list[int]) -> PartitionStateZnode:
        """An offline partition's new leader (Election.leaderForOffline): one from outside the ISR (an
        unclean election) is RECOVERING when inter.broker.protocol.version has KIP-704 (3.2-IV0 on)."""
        state = self.next_state(znode, leader, isr)
        if leader not in znode.isr and self.config.inter_broker_versions.leader_recovery:
            return dataclasses.replace(state, leader_recovery_state=RECOVERING)
        return state

    def send_leader_and_isr(
        self,
        partitions: Iterable[TopicPartition],
        is_new: Collection[TopicPartition] = (),
        exclude: Collection[int] = (),
    ) -> None:
        """LeaderAndIsr to every live replica of `partitions` but `exclude` (one request per broker)."""
        context = self.context
        by_broker: dict[int, list[TopicPartition]] = {}
        for tp in partitions:
            for replica in context.replicas(tp):
                if context.is_live(replica) and replica not in exclude:
                    by_broker.setdefault(replica, []).append(tp)
        for broker_id, theirs in sorted(by_broker.items()):
            self.send(
                broker_id,
                requests.leader_and_isr(
                    context, self.controller_id, broker_id, theirs, self.listener, is_new
                ),
            )

    def send_update_metadata(self, broker_ids: Iterable[int], partitions: list[TopicPartition]) -> None:
        context = self.context
        for broker_id in sorted(broker_ids):
            self.send(broker_id, requests.update_metadata(context, self.controller_id, broker_id, partitions))

    def send(self, broker_id: int, item: requests.BrokerRequest) -> None:
        """Queue `item` for `broker_id` at inter.broker.protocol.version's version of its request."""
        if self.channel is not None:
            version = self.config.inter_broker_versions.controller_request(item.request.API_KEY)
            self.channel.send(broker_id, requests.BrokerRequest(item.request, version))

    def open_channel(self, broker_id: int) -> None:
        context = self.context
        endpoint = requests.inter_broker_endpoint(context, broker_id, self.listener)
        if endpoint is None:
            logger.warning(
                "Broker %d advertises no %s listener: the controller cannot reach it",
                broker_id,
                self.listener,
            )
            return
        if self.channel is not None:
            self.channel.add_broker(broker_id, endpoint.host, endpoint.port)

    def close_channel(self, broker_id: int) -> None:
        if self.channel is not None:
            self.channel.remove_broker(broker_id)


def _named(znode: PartitionStateZnode) -> list[int]:
    """The brokers a state names: its leader and ISR."""
    return [r for r in (znode.leader, *znode.isr) if r >= 0]
