"""KafkaController: election, failover, broker and topic changes (kafka/controller/KafkaController.scala).

Start it in every broker: `controller = KafkaController(zk, ControllerConfig(broker_id=...))`,
`await controller.start()` (on the broker's loop, after the broker registered), `await controller.stop()`.
The broker that wins /controller loads the cluster state, tells every live broker with UpdateMetadata,
then elects leaders for partitions that have none; the others wait for /controller to go. Every
ZooKeeper call runs in a thread; every write goes through the controller epoch fence, and a write
that fails on it (ControllerMovedError) makes this controller resign: it drops its state and its
channels, so it sends nothing more.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence

from kazoo.exceptions import KazooException

from odradek.cluster.controller import (
    broker_changes,
    events,
    features,
    isr_changes,
    producer_ids,
    unclean,
    zk_state,
)
from odradek.cluster.controller.channel import ControllerChannelManager
from odradek.cluster.controller.config import ControllerConfig
from odradek.cluster.controller.context import ControllerContext, TopicPartition
from odradek.cluster.controller.dispatch import process_in_term
from odradek.cluster.controller.event_manager import ControllerEventManager
from odradek.cluster.controller.failover import on_controller_failover
from odradek.cluster.controller.registrations import BrokerRegistrations
from odradek.cluster.controller.replica_assignment import ReassignmentError, ReplicaAssignment
from odradek.cluster.controller.term import ControllerTerm
from odradek.cluster.controller.znode_watches import ZnodeWatches
from odradek.cluster.zookeeper import brokers, paths
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.controller_election import active_controller, elect_controller
from odradek.cluster.zookeeper.controller_fence import ControllerFence, DeleteOp
from odradek.cluster.zookeeper.errors import ControllerMovedError, ZooKeeperConnectionError, ZooKeeperError
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.leader_and_isr import LeaderAndIsrResponse
from odradek.protocol.schema import Request, Response

logger = logging.getLogger(__name__)

#: How long a stopping controller waits for the other brokers to answer what it had queued for them.
DELIVER_ON_STOP_S = 2.0


class KafkaController:
    def __init__(self, zk: ZooKeeperClient, config: ControllerConfig) -> None:
        self.zk = zk
        self.config = config
        self.events = ControllerEventManager(self._process)
        #: Set while this broker is controller: its fence, context and channels for one epoch.
        self.term: ControllerTerm | None = None
        #: Topics whose /brokers/topics/<topic> data is watched (PartitionModifications).
        self._watched_topics = ZnodeWatches(zk, paths.topic, events.PartitionModifications, self.events.put)
        #: Brokers whose /brokers/ids/<id> data is watched (BrokerModification).
        self._watched_brokers = ZnodeWatches(zk, paths.broker, events.BrokerModification, self.events.put)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._rebalance_timer: asyncio.Task[None] | None = None
        self._stopped = False

    @property
    def broker_id(self) -> int:
        return self.config.broker_id

    @property
    def is_active(self) -> bool:
        return self.term is not None

    @property
    def fence(self) -> ControllerFence | None:
        return None if self.term is None else self.term.fence

    @property
    def context(self) -> ControllerContext | None:
        return None if self.term is None else self.term.context

    @property
    def channel(self) -> ControllerChannelManager | None:
        return None if self.term is None else self.term.channel

    # -- lifecycle ---------------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the event task and the watches, and try to become controller."""
        self._loop = loop = asyncio.get_running_loop()
        self.events.start()
        await asyncio.to_thread(self.zk.ensure_persistent_paths)
        put = self.events.put
        # watches only queue events: the work is done by the event task, one event at a time
        self.zk.watch_data(paths.CONTROLLER, lambda _: put(events.ControllerChange()), loop)
        self.zk.watch_children(paths.BROKER_IDS, self._on_broker_ids, loop)
        self.zk.watch_children(paths.TOPICS, lambda _: put(events.TopicChange()), loop)
        self.zk.watch_children(paths.DELETE_TOPICS, lambda _: put(events.TopicDeletion()), loop)
        self.zk.watch_children(
            paths.LOG_DIR_EVENT_NOTIFICATION, lambda _: put(events.LogDirEventNotification()), loop
        )
        self.zk.watch_data(paths.REASSIGN_PARTITIONS, self._on_reassign_partitions(), loop)
        self.zk.watch_session(self._on_session_state, loop)
        put(events.Startup())

    async def stop(self) -> None:
        """Stop handling events and resign (the broker's session, closed after, removes /controller)."""
        self._stopped = True
        await self.events.stop()
        for event in self.events.drain():
            _answer_not_controller(event)
        if self.term is not None:
            # the other brokers get what was decided (a controlled shutdown's ISR changes) before the
            # channels close; this broker has stopped serving and needs nothing more
            await self.term.channel.deliver_queued(DELIVER_ON_STOP_S, skip=self.broker_id)
        await self._resign()

    async def wait_idle(self, timeout: float = 10.0) -> None:
        """Wait until every queued event was handled (for tests and orderly shutdown)."""
        deadline = asyncio.get_running_loop().time() + timeout
        while not self.events.is_idle():
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"controller {self.broker_id} still busy with {self.events.current}")
            await asyncio.sleep(0.02)

    async def controlled_shutdown(
        self, broker_id: int, broker_epoch: int, timeout: float = 30.0
    ) -> events.ControlledShutdownResult:
        """ControlledShutdown v3 on the controller: move `broker_id`'s leaderships away, take it out of
        the ISRs it follows; NOT_CONTROLLER when this broker is not (or stops being) controller."""
        done: asyncio.Future[events.ControlledShutdownResult] = asyncio.get_running_loop().create_future()
        self.events.put(events.ControlledShutdown(broker_id, broker_epoch, done))
        try:
            return await asyncio.wait_for(asyncio.shield(done), timeout)
        except TimeoutError:
            return events.ControlledShutdownResult(ErrorCode.REQUEST_TIMED_OUT, [])

    async def elect_leaders(
        self, election_type: int, partitions: list[TopicPartition] | None, timeout: float = 60.0
    ) -> dict[TopicPartition, ErrorCode]:
        """ElectLeaders (key 43): an error per partition (NONE when it got the leader the election picks).
        Raises NotControllerError when this broker is not controller."""
        done: asyncio.Future[dict[TopicPartition, ErrorCode]] = asyncio.get_running_loop().create_future()
        self.events.put(events.ElectLeaders(election_type, partitions, done))
        return await asyncio.wait_for(asyncio.shield(done), timeout)

    async def alter_partition_reassignments(
        self,
        reassignments: Mapping[TopicPartition, Sequence[int] | None],
        allow_replication_factor_change: bool = True,
        timeout: float = 60.0,
    ) -> dict[TopicPartition, ReassignmentError]:
        """AlterPartitionReassignments (key 45): an answer per partition once its reassignment started
        (or was cancelled). Raises NotControllerError when this broker is not controller."""
        done: asyncio.Future[dict[TopicPartition, ReassignmentError]] = (
            asyncio.get_running_loop().create_future()
        )
        self.events.put(
            events.AlterPartitionReassignments(reassignments, allow_replication_factor_change, done)
        )
        return await asyncio.wait_for(asyncio.shield(done), timeout)

    async def list_partition_reassignments(
        self, partitions: list[TopicPartition] | None, timeout: float = 60.0
    ) -> dict[TopicPartition, ReplicaAssignment]:
        """ListPartitionReassignments (key 46). Raises NotControllerError when not controller."""
        done: asyncio.Future[dict[TopicPartition, ReplicaAssignment]] = (
            asyncio.get_running_loop().create_future()
        )
        self.events.put(events.ListPartitionReassignments(partitions, done))
        return await asyncio.wait_for(asyncio.shield(done), timeout)

    def isr_changed(self, topic: str, partition: int) -> None:
        """Queue a check of `topic`-`partition`'s reassignment after its ISR changed elsewhere than on
        the event task (on it, call reassignment.on_isr_change directly)."""
        self.events.put(events.PartitionReassignmentIsrChange(TopicPartition(topic, partition)))

    def _on_reassign_partitions(self) -> Callable[[bytes | None], None]:
        """ZkPartitionReassignment when the plan znode appears (as Kafka's handler, not when the
        controller rewrites it as partitions complete)."""
        existed = False

        def changed(data: bytes | None) -> None:
            nonlocal existed
            if data is not None and not existed:
                self.events.put(events.ZkPartitionReassignment())
            existed = data is not None

        return changed

    async def alter_partition(
        self,
        broker_id: int,
        broker_epoch: int,
        changes: list[isr_changes.IsrChangeRequest],
        timeout: float = 30.0,
    ) -> isr_changes.AlterPartitionResult:
        """AlterPartition (key 56) on the controller: NOT_CONTROLLER (top level) when this broker is
        not (or stops being) controller, REQUEST_TIMED_OUT when the event queue is too slow."""
        done: asyncio.Future[isr_changes.AlterPartitionResult] = asyncio.get_running_loop().create_future()
        self.events.put(events.AlterPartition(broker_id, broker_epoch, changes, done))
        try:
            return await asyncio.wait_for(asyncio.shield(done), timeout)
        except TimeoutError:
            return isr_changes.AlterPartitionResult(ErrorCode.REQUEST_TIMED_OUT, [])

    async def allocate_producer_ids(
        self, broker_id: int, broker_epoch: int, timeout: float = 30.0
    ) -> producer_ids.AllocateProducerIdsResult:
        """AllocateProducerIds (key 67) on the controller: a block of producer ids for `broker_id`;
        NOT_CONTROLLER when this broker is not (or stops being) controller, REQUEST_TIMED_OUT when the
        event queue is too slow (the broker asks again)."""
        done: asyncio.Future[producer_ids.AllocateProducerIdsResult] = (
            asyncio.get_running_loop().create_future()
        )
        self.events.put(events.AllocateProducerIds(broker_id, broker_epoch, done))
        try:
            return await asyncio.wait_for(asyncio.shield(done), timeout)
        except TimeoutError:
            return producer_ids.AllocateProducerIdsResult(ErrorCode.REQUEST_TIMED_OUT)

    def set_unclean_leader_election_enable(self, enabled: bool) -> None:
        """The broker's unclean.leader.election.enable changed at run time (AlterConfigs); turned on,
        the offline partitions are elected again (KafkaController.enableDefaultUncleanLeaderElection)."""
        if enabled == self.config.unclean_leader_election_enable:
            return
        # the term's too: it reads the controller's settings as they are now
        self.config = dataclasses.replace(self.config, unclean_leader_election_enable=enabled)
        if enabled:
            self.events.put(events.UncleanLeaderElectionEnable())

    def topic_configs_changed(self, topic: str, configs: Mapping[str, str]) -> None:
        """A topic's configs changed (/config/changes): if they turn unclean election on, its offline
        partitions are elected again (KafkaController.enableTopicUncleanLeaderElection)."""
        if unclean.enabled_in(configs) and self.is_active:
            self.events.put(events.TopicUncleanLeaderElectionEnable(topic))

    def _on_broker_response(self, broker_id: int, request: Request, response: Response) -> None:
        """A broker's LeaderAndIsr answer: an event, as Kafka's LeaderAndIsrResponseReceived."""
        if isinstance(response, LeaderAndIsrResponse):
            self.events.put(events.LeaderAndIsrResponseReceived(broker_id, response))

    def _on_session_state(self, state: str) -> None:
        if state == "LOST":
            self.events.put(events.Expire())

    # -- the event task ----------------------------------------------------------------------------

    async def _process(self, event: events.ControllerEvent) -> None:
        try:
            if not self._stopped:
                await self._dispatch(event)
        except ControllerMovedError as error:
            logger.warning("Controller %d resigns while handling %s: %s", self.broker_id, event.name, error)
            await self._resign()
        except ZooKeeperConnectionError as error:
            logger.warning("Controller %d could not handle %s: %s", self.broker_id, event.name, error)
        finally:
            _answer_not_controller(event)

    async def _dispatch(self, event: events.ControllerEvent) -> None:
        if isinstance(event, events.Startup | events.Elect | events.ControllerChange):
            await self._maybe_resign_then_elect()
        elif isinstance(event, events.Expire | events.Resign):
            await self._resign()
            if isinstance(event, events.Expire):
                self.events.put(events.Elect())  # the new session may win /controller again
        elif self.term is None:
            # the watches fire on every broker: only the controller acts on them (a request waiting
            # for an answer gets NOT_CONTROLLER from _process)
            return
        else:
            if not await process_in_term(self.term, event):
                logger.warning("Controller %d does not handle %s", self.broker_id, event.name)

    # -- election and failover (reference §2) ------------------------------------------------------

    async def _maybe_resign_then_elect(self) -> None:
        controller = await asyncio.to_thread(active_controller, self.zk)
        if controller is not None:
            if controller.broker_id != self.broker_id and self.is_active:
                logger.info(
                    "Controller %d resigns: broker %d is controller", self.broker_id, controller.broker_id
                )
                await self._resign()
            return
        if self.is_active:
            await self._resign()  # our /controller went (session expired): elect from scratch
        try:
            fence = await asyncio.to_thread(elect_controller, self.zk, self.broker_id)
        except ControllerMovedError:
            return  # another broker won; its /controller's watch tells us when it goes
        logger.info("Broker %d is controller, epoch %d", self.broker_id, fence.epoch)
        try:
            await self._on_controller_failover(fence)
        except ZooKeeperConnectionError:
            # as Kafka's triggerControllerMove: a controller that could not take over must not keep
            # /controller (every broker would wait on it): give it up, and let the brokers elect again
            await self._resign()
            with contextlib.suppress(ZooKeeperError, KazooException):
                await asyncio.to_thread(fence.commit, [DeleteOp(paths.CONTROLLER)])
            raise

    async def _on_controller_failover(self, fence: ControllerFence) -> None:
        # first, as Kafka's maybeSetupFeatureVersioning
        layout = self.config.inter_broker_versions.feature_znode_version
        await asyncio.to_thread(features.enable_feature_versioning, self.zk, fence, layout)
        # read before the registrations are (registrations.py)
        registrations_version = await asyncio.to_thread(brokers.registrations_version, self.zk)
        context = await asyncio.to_thread(zk_state.load_context, self.zk, fence.epoch, fence.epoch_zk_version)
        channel = ControllerChannelManager(
            self.broker_id,
            self.config.inter_broker_security,
            self.config.request_timeout_s,
            self.config.connect_timeout_s,
            self._on_broker_response,
        )
        self.term = term = ControllerTerm(
            self.zk,
            lambda: self.config,
            fence,
            context,
            channel,
            self._watch_topic,
            self._watched_topics.discard,
            BrokerRegistrations(self.zk, registrations_version, context.live_brokers),
            broker_changes.on_broker_change,
        )
        await on_controller_failover(term)
        if self.config.auto_leader_rebalance_enable:
            self._rebalance_timer = asyncio.get_running_loop().create_task(
                self._rebalance_every_interval(), name="controller-auto-rebalance"
            )

    async def _resign(self) -> None:
        """Drop the context and the channels: nothing more is written or sent (onControllerResignation)."""
        term, self.term = self.term, None
        timer, self._rebalance_timer = self._rebalance_timer, None
        if timer is not None:
            timer.cancel()
        if term is not None:
            await term.channel.close()
            logger.info("Broker %d is no longer controller", self.broker_id)

    # -- automatic preferred election --------------------------------------------------------------

    async def _rebalance_every_interval(self) -> None:
        while True:
            await asyncio.sleep(self.config.leader_imbalance_check_interval_seconds)
            self.events.put(events.AutoPreferredReplicaLeaderElection())

    # -- watches -----------------------------------------------------------------------------------

    def _on_broker_ids(self, children: list[str]) -> None:
        for name in children:
            if name.isdigit():
                self._watched_brokers.watch(int(name), self._loop)
        self.events.put(events.BrokerChange())

    def _watch_topic(self, topic: str) -> None:
        self._watched_topics.watch(topic, self._loop)


def _answer_not_controller(event: events.ControllerEvent) -> None:
    """A request still unanswered once its event was handled: this broker is not (or no longer) the
    controller, and the broker that asked must find the new one (KafkaApis answers NOT_CONTROLLER)."""
    if isinstance(event, events.ControlledShutdown) and not event.done.done():
        event.done.set_result(events.ControlledShutdownResult(ErrorCode.NOT_CONTROLLER, []))
    elif isinstance(event, events.AlterPartition) and not event.done.done():
        event.done.set_result(isr_changes.AlterPartitionResult(ErrorCode.NOT_CONTROLLER, []))
    elif isinstance(event, events.AllocateProducerIds) and not event.done.done():
        event.done.set_result(producer_ids.AllocateProducerIdsResult(ErrorCode.NOT_CONTROLLER))
    elif (
        isinstance(
            event,
            events.ElectLeaders | events.AlterPartitionReassignments | events.ListPartitionReassignments,
        )
        and not event.done.done()
    ):
        event.done.set_exception(NotControllerError(f"not the controller (event {event.name})"))


class NotControllerError(Exception):
    """This broker is not the controller: the request must go to the one that is (NOT_CONTROLLER)."""
