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
import functools
import logging
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

from kazoo.exceptions import NodeExistsError
from kazoo.protocol.states import ZnodeStat

from odradek.cluster.controller import election, events, rebalance, requests, zk_state
from odradek.cluster.controller.channel import ControllerChannelManager
from odradek.cluster.controller.context import ControllerContext, PartitionState, TopicPartition
from odradek.cluster.controller.event_manager import ControllerEventManager
from odradek.cluster.zookeeper import paths, topics
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.controller_election import active_controller, elect_controller
from odradek.cluster.zookeeper.controller_fence import ControllerFence, DeleteOp
from odradek.cluster.zookeeper.errors import ControllerMovedError, ZooKeeperConnectionError
from odradek.cluster.zookeeper.loop_delivery import deliver_on_loop
from odradek.cluster.zookeeper.topic_znodes import PartitionStateZnode
from odradek.protocol.error_codes import ErrorCode

logger = logging.getLogger(__name__)

#: ElectLeaders election_type values (ElectionType.java).
PREFERRED_ELECTION = 0
UNCLEAN_ELECTION = 1
#: How many times a compare-and-set of a partition state is tried again after losing to another writer.
STATE_WRITE_ATTEMPTS = 3


@dataclass(frozen=True, slots=True)
class ControllerConfig:
    broker_id: int
    #: inter.broker.listener.name; when unset, Kafka names it after security.inter.broker.protocol.
    inter_broker_listener_name: str | None = None
    security_inter_broker_protocol: str = "PLAINTEXT"
    unclean_leader_election_enable: bool = False
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_seconds: float = 300.0
    leader_imbalance_per_broker_percentage: int = 10

    @property
    def inter_broker_listener(self) -> str:
        return self.inter_broker_listener_name or self.security_inter_broker_protocol


class KafkaController:
    def __init__(self, zk: ZooKeeperClient, config: ControllerConfig) -> None:
        self.zk = zk
        self.config = config
        self.events = ControllerEventManager(self._process)
        self.fence: ControllerFence | None = None
        self.context: ControllerContext | None = None
        self.channel: ControllerChannelManager | None = None
        #: Topics whose /brokers/topics/<topic> data is watched (PartitionModifications).
        self._watched_topics: set[str] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._rebalance_timer: asyncio.Task[None] | None = None
        self._stopped = False

    @property
    def broker_id(self) -> int:
        return self.config.broker_id

    @property
    def is_active(self) -> bool:
        return self.fence is not None

    # -- lifecycle ---------------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the event task and the watches, and try to become controller."""
        self._loop = loop = asyncio.get_running_loop()
        self.events.start()
        await asyncio.to_thread(self.zk.ensure_persistent_paths)
        put = self.events.put
        # watches only queue events: the work is done by the event task, one event at a time
        self.zk.watch_data(paths.CONTROLLER, lambda _: put(events.ControllerChange()), loop)
        self.zk.watch_children(paths.BROKER_IDS, lambda _: put(events.BrokerChange()), loop)
        self.zk.watch_children(paths.TOPICS, lambda _: put(events.TopicChange()), loop)
        self.zk.watch_children(paths.DELETE_TOPICS, lambda _: put(events.TopicDeletion()), loop)
        self.zk.watch_session(self._on_session_state, loop)
        put(events.Startup())

    async def stop(self) -> None:
        """Stop handling events and resign (the broker's session, closed after, removes /controller)."""
        self._stopped = True
        await self.events.stop()
        for event in self.events.drain():
            _answer_not_controller(event)
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
        elif not self.is_active:
            # the watches fire on every broker: only the controller acts on them (a request waiting
            # for an answer gets NOT_CONTROLLER from _process)
            return
        elif isinstance(event, events.BrokerChange | events.BrokerModification):
            # both re-read every registration: joins, departures, bounces (epochs) and new endpoints
            await self._on_broker_change()
        elif isinstance(event, events.TopicChange):
            await self._on_topic_change()
        elif isinstance(event, events.PartitionModifications):
            await self._on_partition_modifications(event.topic)
        elif isinstance(event, events.TopicDeletion):
            await self._on_topic_deletion()
        elif isinstance(event, events.ControlledShutdown):
            result = await self._on_controlled_shutdown(event.broker_id, event.broker_epoch)
            if not event.done.done():
                event.done.set_result(result)
        elif isinstance(event, events.ElectLeaders):
            errors = await self._on_elect_leaders(event.election_type, event.partitions)
            if not event.done.done():
                event.done.set_result(errors)
        elif isinstance(event, events.AutoPreferredReplicaLeaderElection):
            await self._on_auto_rebalance()
        else:
            # AlterPartition comes with replication (the leaders' ISR changes): not handled yet
            logger.warning("Controller %d does not handle %s yet", self.broker_id, event.name)

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
        self.fence = fence
        await self._on_controller_failover(fence)

    async def _on_controller_failover(self, fence: ControllerFence) -> None:
        context = await asyncio.to_thread(zk_state.load_context, self.zk, fence.epoch, fence.epoch_zk_version)
        self.context = context
        self.channel = ControllerChannelManager(self.broker_id)
        for broker_id in sorted(context.live_brokers):
            self._open_channel(broker_id)
        for topic in context.assignments:
            self._watch_topic(topic)
        # UpdateMetadata to every live broker before any LeaderAndIsr (KafkaController.onControllerFailover)
        self._send_update_metadata(context.live_broker_ids(), list(context.all_partitions()))
        await self._online_partitions(context.partitions_without_live_leader())
        await self._on_topic_deletion()
        if self.config.auto_leader_rebalance_enable:
            self._rebalance_timer = asyncio.get_running_loop().create_task(
                self._rebalance_every_interval(), name="controller-auto-rebalance"
            )

    async def _resign(self) -> None:
        """Drop the context and the channels: nothing more is written or sent (onControllerResignation)."""
        was_active = self.is_active
        self.fence = None
        timer, self._rebalance_timer = self._rebalance_timer, None
        if timer is not None:
            timer.cancel()
        self.context = None
        channel, self.channel = self.channel, None
        if channel is not None:
            await channel.close()
        if was_active:
            logger.info("Broker %d is no longer controller", self.broker_id)

    # -- brokers -----------------------------------------------------------------------------------

    async def _on_broker_change(self) -> None:
        context = self._context()
        current = await asyncio.to_thread(zk_state.read_live_brokers, self.zk)
        known = context.live_brokers
        joined = sorted(set(current) - set(known))
        dead = sorted(set(known) - set(current))
        bounced = sorted(b for b in set(current) & set(known) if current[b].epoch != known[b].epoch)
        modified = sorted(
            b
            for b in set(current) & set(known)
            if b not in bounced and current[b].registration != known[b].registration
        )
        if joined or dead or bounced:
            logger.info(
                "Controller %d: brokers joined %s, left %s, bounced %s", self.broker_id, joined, dead, bounced
            )
        if joined:
            for broker_id in joined:
                context.live_brokers[broker_id] = current[broker_id]
                self._open_channel(broker_id)
            await self._on_broker_startup(joined)
        if bounced:
            # KafkaController.processBrokerChange: a bounced broker is a failure, then a start-up
            for broker_id in bounced:
                del context.live_brokers[broker_id]
                self._close_channel(broker_id)
            await self._on_broker_failure(bounced)
            for broker_id in bounced:
                context.live_brokers[broker_id] = current[broker_id]
                self._open_channel(broker_id)
            await self._on_broker_startup(bounced)
        if dead:
            for broker_id in dead:
                del context.live_brokers[broker_id]
                context.shutting_down.discard(broker_id)
                self._close_channel(broker_id)
            await self._on_broker_failure(dead)
        if modified:
            for broker_id in modified:
                context.live_brokers[broker_id] = current[broker_id]
                self._open_channel(broker_id)
            self._send_update_metadata(context.live_broker_ids(), [])

    async def _on_broker_startup(self, started: list[int]) -> None:
        context = self._context()
        existing = context.live_broker_ids() - set(started)
        # the others learn of the new brokers; the new ones get every partition
        self._send_update_metadata(existing, [])
        self._send_update_metadata(started, list(context.all_partitions()))
        for broker_id in started:
            theirs = [
                tp
                for tp in context.partitions_on(broker_id)
                if tp in context.states and tp.topic not in context.topics_being_deleted
            ]
            if theirs:
                self._send(
                    broker_id,
                    requests.leader_and_isr(context, self.broker_id, broker_id, theirs, self._listener()),
                )
        await self._online_partitions(context.partitions_without_live_leader())

    async def _on_broker_failure(self, failed: Collection[int]) -> None:
        """New leaders for what the failed brokers led, and the failed brokers out of every ISR."""
        context = self._context()
        failed = set(failed)
        changed: list[TopicPartition] = []
        for tp in list(context.all_partitions()):
            state = context.states.get(tp)
            if state is None or tp.topic in context.topics_being_deleted:
                continue
            if state.leader in failed or any(r in failed for r in state.isr):
                written = await self._update_state(tp, functools.partial(self._after_failure, failed, tp))
                if written is not None:
                    changed.append(tp)
        self._send_leader_and_isr(changed)
        self._send_update_metadata(context.live_broker_ids(), changed)

    def _after_failure(
        self, failed: Collection[int], tp: TopicPartition, state: PartitionState
    ) -> PartitionStateZnode | None:
        context = self._context()
        live = context.live_broker_ids()
        znode = state.znode
        if znode.leader not in live:
            # OfflinePartition → OnlinePartition with the offline election
            elected = election.offline_partition_leader(
                context.replicas(tp),
                znode.isr,
                context.eligible_broker_ids(),
                self.config.unclean_leader_election_enable,
            )
            if elected is not None:
                return self._next_state(znode, elected.leader, elected.isr)
        # OfflineReplica: out of the ISR (never the last member), leaderless if it led
        leader, isr = znode.leader, list(znode.isr)
        for replica in sorted(failed):
            if replica in isr or leader == replica:
                leader, isr = election.isr_without_replica(leader, isr, replica)
        if leader not in live:
            leader = -1  # never a stale leader
        if (leader, isr) == (znode.leader, list(znode.isr)):
            return None
        return self._next_state(znode, leader, isr)

    # -- topics ------------------------------------------------------------------------------------

    async def _on_topic_change(self) -> None:
        context = self._context()
        names = set(await asyncio.to_thread(topics.topic_names, self.zk))
        for gone in sorted(set(context.assignments) - names):
            context.remove_topic(gone)
        new_partitions: list[TopicPartition] = []
        for topic in sorted(names - set(context.assignments)):
            assignment = await asyncio.to_thread(zk_state.read_topic, self.zk, topic)
            if assignment is None:
                continue
            await asyncio.to_thread(zk_state.add_topic, self.zk, context, topic, assignment)
            self._watch_topic(topic)
            new_partitions += [tp for tp in context.partitions_of(topic) if tp not in context.states]
            logger.info(
                "Controller %d: new topic %s with %d partitions",
                self.broker_id,
                topic,
                len(assignment.partitions),
            )
        await self._online_partitions(new_partitions)

    async def _on_partition_modifications(self, topic: str) -> None:
        context = self._context()
        if topic not in context.assignments or topic in context.topics_being_deleted:
            return
        assignment = await asyncio.to_thread(zk_state.read_topic, self.zk, topic)
        if assignment is None:
            return
        known = context.assignments[topic]
        added = {p: list(r) for p, r in assignment.partitions.items() if p not in known}
        if not added:
            return
        known.update(added)
        logger.info("Controller %d: topic %s gets partitions %s", self.broker_id, topic, sorted(added))
        await self._online_partitions([TopicPartition(topic, p) for p in sorted(added)])

    async def _on_topic_deletion(self) -> None:
        context = self._context()
        fence = self._fence()
        for topic in await asyncio.to_thread(topics.topics_marked_for_deletion, self.zk):
            if topic not in context.assignments:
                # TopicDeletionManager: a marker for a topic that does not exist is just removed
                with contextlib.suppress(Exception):
                    await asyncio.to_thread(fence.commit, [DeleteOp(paths.delete_topic_marker(topic))])
                continue
            await self._delete_topic(topic)

    async def _delete_topic(self, topic: str) -> None:
        """TopicDeletionManager.onTopicDeletion: brokers forget the topic (UpdateMetadata with leader -2),
        every live replica deletes its copy (StopReplica delete=true, leader epoch -2), then its znodes
        and the marker go (the marker last, so that a controller failing half-way is finished by the next)."""
        context = self._context()
        context.topics_being_deleted.add(topic)
        partitions = context.partitions_of(topic)
        topic_id = context.topic_ids.get(topic, requests.NO_TOPIC_ID)
        for broker_id in sorted(context.live_brokers):
            self._send(
                broker_id,
                requests.update_metadata(context, self.broker_id, broker_id, partitions, {topic: topic_id}),
            )
        by_broker: dict[int, list[TopicPartition]] = {}
        for tp in partitions:
            for replica in context.replicas(tp):
                if context.is_live(replica):
                    by_broker.setdefault(replica, []).append(tp)
        for broker_id, theirs in sorted(by_broker.items()):
            self._send(
                broker_id, requests.stop_replica(context, self.broker_id, broker_id, theirs, delete=True)
            )
        await asyncio.to_thread(topics.delete_topic_znodes, self._fence(), topic)
        context.remove_topic(topic)
        self._watched_topics.discard(topic)
        logger.info("Controller %d deleted topic %s", self.broker_id, topic)

    # -- controlled shutdown, preferred and requested elections ------------------------------------

    async def _on_controlled_shutdown(
        self, broker_id: int, broker_epoch: int
    ) -> events.ControlledShutdownResult:
        """KafkaController.doControlledShutdown."""
        context = self._context()
        known = context.live_brokers.get(broker_id)
        if known is None:
            return events.ControlledShutdownResult(ErrorCode.BROKER_NOT_AVAILABLE, [])
        # -1: a broker that does not send its epoch (ControlledShutdown v0-v1) is not checked
        if broker_epoch != -1 and broker_epoch < known.epoch:
            return events.ControlledShutdownResult(ErrorCode.STALE_BROKER_EPOCH, [])
        logger.info("Controller %d: controlled shutdown of broker %d", self.broker_id, broker_id)
        context.shutting_down.add(broker_id)
        # with a single replica there is nowhere to move: those stay led until the broker stops
        to_act = [
            tp
            for tp in context.partitions_on(broker_id)
            if len(context.replicas(tp)) > 1
            and tp in context.states
            and tp.topic not in context.topics_being_deleted
        ]
        led = [tp for tp in to_act if context.states[tp].leader == broker_id]
        followed = [tp for tp in to_act if context.states[tp].leader != broker_id]
        moved = [
            tp
            for tp in led
            if await self._update_state(tp, functools.partial(self._controlled_shutdown_election, tp))
            is not None
        ]
        self._send_leader_and_isr(moved)
        self._send_update_metadata(context.live_broker_ids(), moved)
        if followed:
            self._send(
                broker_id, requests.stop_replica(context, self.broker_id, broker_id, followed, delete=False)
            )
        shrunk = [
            tp
            for tp in followed
            if await self._update_state(tp, functools.partial(self._without_replica, broker_id)) is not None
        ]
        self._send_leader_and_isr(shrunk, exclude={broker_id})
        self._send_update_metadata(context.live_broker_ids(), shrunk)
        remaining = context.partitions_led_by([broker_id])
        return events.ControlledShutdownResult(ErrorCode.NONE, remaining)

    def _controlled_shutdown_election(
        self, tp: TopicPartition, state: PartitionState
    ) -> PartitionStateZnode | None:
        context = self._context()
        if state.leader not in context.shutting_down:
            return None
        chosen = election.controlled_shutdown_leader(
            context.replicas(tp), state.isr, context.live_broker_ids(), context.shutting_down
        )
        return None if chosen is None else self._next_state(state.znode, chosen.leader, chosen.isr)

    def _without_replica(self, replica: int, state: PartitionState) -> PartitionStateZnode | None:
        """ReplicaStateMachine's OfflineReplica: out of the ISR (not if it is the last member)."""
        if replica not in state.isr:
            return None
        leader, isr = election.isr_without_replica(state.leader, state.isr, replica)
        if isr == list(state.isr) and leader == state.leader:
            return None
        return self._next_state(state.znode, leader, isr)

    async def _on_elect_leaders(
        self, election_type: int, partitions: list[TopicPartition] | None
    ) -> dict[TopicPartition, ErrorCode]:
        """KafkaController.processReplicaLeaderElection for ElectLeaders: None means every partition."""
        context = self._context()
        wanted = list(context.all_partitions()) if partitions is None else partitions
        errors: dict[TopicPartition, ErrorCode] = {}
        elected: list[TopicPartition] = []
        for tp in wanted:
            state = context.states.get(tp)
            if state is None or tp.topic in context.topics_being_deleted:
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif election_type == PREFERRED_ELECTION:
                if state.leader == context.replicas(tp)[0]:
                    errors[tp] = ErrorCode.ELECTION_NOT_NEEDED
                elif (
                    await self._update_state(tp, functools.partial(self._preferred_election, tp)) is not None
                ):
                    errors[tp] = ErrorCode.NONE
                    elected.append(tp)
                else:
                    errors[tp] = ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
            elif election_type == UNCLEAN_ELECTION:
                if context.is_live(state.leader):
                    errors[tp] = ErrorCode.ELECTION_NOT_NEEDED
                elif await self._update_state(tp, functools.partial(self._unclean_election, tp)) is not None:
                    errors[tp] = ErrorCode.NONE
                    elected.append(tp)
                else:
                    errors[tp] = ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
            else:
                errors[tp] = ErrorCode.INVALID_REQUEST
        self._send_leader_and_isr(elected)
        self._send_update_metadata(context.live_broker_ids(), elected)
        return errors

    async def _on_auto_rebalance(self) -> None:
        context = self._context()
        partitions = [tp for tp in context.all_partitions() if tp.topic not in context.topics_being_deleted]
        candidates = rebalance.imbalanced_partitions(
            {tp: context.replicas(tp) for tp in partitions},
            {tp: context.states[tp].leader for tp in partitions if tp in context.states},
            self.config.leader_imbalance_per_broker_percentage,
            context.eligible_broker_ids(),
        )
        elected = [
            tp
            for tp in candidates
            if await self._update_state(tp, functools.partial(self._preferred_election, tp)) is not None
        ]
        if elected:
            logger.info("Controller %d: preferred leaders back for %s", self.broker_id, elected)
            self._send_leader_and_isr(elected)
            self._send_update_metadata(context.live_broker_ids(), elected)

    async def _rebalance_every_interval(self) -> None:
        while True:
            await asyncio.sleep(self.config.leader_imbalance_check_interval_seconds)
            self.events.put(events.AutoPreferredReplicaLeaderElection())

    def _preferred_election(self, tp: TopicPartition, state: PartitionState) -> PartitionStateZnode | None:
        context = self._context()
        replicas = context.replicas(tp)
        if replicas and state.leader == replicas[0]:
            return None
        chosen = election.preferred_replica_leader(replicas, state.isr, context.eligible_broker_ids())
        return None if chosen is None else self._next_state(state.znode, chosen.leader, chosen.isr)

    def _unclean_election(self, tp: TopicPartition, state: PartitionState) -> PartitionStateZnode | None:
        context = self._context()
        if context.is_live(state.leader):
            return None
        chosen = election.offline_partition_leader(
            context.replicas(tp), state.isr, context.eligible_broker_ids(), unclean=True
        )
        return None if chosen is None else self._next_state(state.znode, chosen.leader, chosen.isr)

    # -- partition states --------------------------------------------------------------------------

    async def _online_partitions(self, partitions: Iterable[TopicPartition]) -> None:
        """New partitions get their first state, offline ones a leader if a replica may lead
        (PartitionStateMachine.triggerOnlinePartitionStateChange); then LeaderAndIsr and UpdateMetadata."""
        context = self._context()
        created: list[TopicPartition] = []
        elected: list[TopicPartition] = []
        for tp in partitions:
            if tp.topic in context.topics_being_deleted:
                continue
            if tp not in context.states:
                if await self._create_state(tp):
                    created.append(tp)
                    continue
                if tp not in context.states:
                    continue  # no live replica: stays a new partition until one comes
            written = await self._update_state(tp, functools.partial(self._offline_election, tp))
            if written is not None:
                elected.append(tp)
        changed = created + elected
        if not changed:
            return
        self._send_leader_and_isr(changed, is_new=set(created))
        self._send_update_metadata(context.live_broker_ids(), changed)

    def _offline_election(self, tp: TopicPartition, state: PartitionState) -> PartitionStateZnode | None:
        context = self._context()
        if context.is_live(state.leader):
            return None  # someone else (a previous try) already elected one
        chosen = election.offline_partition_leader(
            context.replicas(tp),
            state.isr,
            context.eligible_broker_ids(),
            self.config.unclean_leader_election_enable,
        )
        if chosen is None:
            logger.warning(
                "Partition %s-%d stays offline: no live replica of %s is in the ISR %s",
                tp.topic,
                tp.partition,
                context.replicas(tp),
                list(state.isr),
            )
            return None
        return self._next_state(state.znode, chosen.leader, chosen.isr)

    async def _create_state(self, tp: TopicPartition) -> bool:
        """The first state of a new partition; False when no replica is live (or one exists already:
        then it is read into the context)."""
        context = self._context()
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
                topics.create_partition_states, self._fence(), tp.topic, {tp.partition: znode}
            )
        except NodeExistsError:
            state = await asyncio.to_thread(zk_state.read_partition_state, self.zk, tp)
            if state is not None:
                context.states[tp] = state
            return False
        context.states[tp] = PartitionState(znode, 0)
        return True

    async def _update_state(
        self, tp: TopicPartition, decide: Callable[[PartitionState], PartitionStateZnode | None]
    ) -> PartitionState | None:
        """Compare-and-set a partition's state to `decide(current)` (None: leave it), reading it again
        when another writer changed it meanwhile. The new state, or None when nothing was written."""
        context = self._context()
        state = context.states[tp]
        for _ in range(STATE_WRITE_ATTEMPTS):
            znode = decide(state)
            if znode is None:
                return None
            version = await asyncio.to_thread(
                topics.update_partition_state,
                self._fence(),
                tp.topic,
                tp.partition,
                znode,
                state.partition_epoch,
            )
            if version is not None:
                written = PartitionState(znode, version)
                context.states[tp] = written
                return written
            reread = await asyncio.to_thread(zk_state.read_partition_state, self.zk, tp)
            if reread is None:
                return None
            context.states[tp] = state = reread
        logger.warning("Partition %s-%d: state kept changing while being written", tp.topic, tp.partition)
        return None

    def _next_state(self, znode: PartitionStateZnode, leader: int, isr: list[int]) -> PartitionStateZnode:
        # every change the controller makes bumps the leader epoch (LeaderAndIsr.newLeaderAndIsr)
        return PartitionStateZnode(leader, znode.leader_epoch + 1, isr, self._context().epoch)

    # -- requests ----------------------------------------------------------------------------------

    def _send_leader_and_isr(
        self,
        partitions: Iterable[TopicPartition],
        is_new: Collection[TopicPartition] = (),
        exclude: Collection[int] = (),
    ) -> None:
        """LeaderAndIsr to every live replica of `partitions` but `exclude` (one request per broker)."""
        context = self._context()
        by_broker: dict[int, list[TopicPartition]] = {}
        for tp in partitions:
            for replica in context.replicas(tp):
                if context.is_live(replica) and replica not in exclude:
                    by_broker.setdefault(replica, []).append(tp)
        for broker_id, theirs in sorted(by_broker.items()):
            self._send(
                broker_id,
                requests.leader_and_isr(context, self.broker_id, broker_id, theirs, self._listener(), is_new),
            )

    def _send_update_metadata(self, broker_ids: Iterable[int], partitions: list[TopicPartition]) -> None:
        context = self._context()
        for broker_id in sorted(broker_ids):
            self._send(broker_id, requests.update_metadata(context, self.broker_id, broker_id, partitions))

    def _send(self, broker_id: int, item: requests.BrokerRequest) -> None:
        if self.channel is not None:
            self.channel.send(broker_id, item)

    def _open_channel(self, broker_id: int) -> None:
        context = self._context()
        endpoint = requests.inter_broker_endpoint(context, broker_id, self._listener())
        if endpoint is None:
            logger.warning(
                "Broker %d advertises no %s listener: the controller cannot reach it",
                broker_id,
                self._listener(),
            )
            return
        if self.channel is not None:
            self.channel.add_broker(broker_id, endpoint.host, endpoint.port)

    def _close_channel(self, broker_id: int) -> None:
        if self.channel is not None:
            self.channel.remove_broker(broker_id)

    def _listener(self) -> str:
        return self.config.inter_broker_listener

    # -- watches -----------------------------------------------------------------------------------

    def _watch_topic(self, topic: str) -> None:
        """PartitionModifications for `topic` until it is deleted (kazoo stops a DataWatch whose
        callback returns False)."""
        if topic in self._watched_topics or self._loop is None:
            return
        self._watched_topics.add(topic)
        deliver = deliver_on_loop(self._loop, lambda _: self.events.put(events.PartitionModifications(topic)))

        def changed(data: bytes | None, stat: ZnodeStat | None) -> bool:
            if stat is None or topic not in self._watched_topics:
                self._watched_topics.discard(topic)
                return False
            deliver(None)
            return True

        self.zk.kazoo.DataWatch(paths.topic(topic), changed)

    def _context(self) -> ControllerContext:
        if self.context is None:
            raise ControllerMovedError(f"broker {self.broker_id} is not controller")
        return self.context

    def _fence(self) -> ControllerFence:
        if self.fence is None:
            raise ControllerMovedError(f"broker {self.broker_id} is not controller")
        return self.fence


def _answer_not_controller(event: events.ControllerEvent) -> None:
    """A request still unanswered once its event was handled: this broker is not (or no longer) the
    controller, and the broker that asked must find the new one (KafkaApis answers NOT_CONTROLLER)."""
    if isinstance(event, events.ControlledShutdown) and not event.done.done():
        event.done.set_result(events.ControlledShutdownResult(ErrorCode.NOT_CONTROLLER, []))
    elif isinstance(event, events.ElectLeaders) and not event.done.done():
        event.done.set_exception(NotControllerError(f"not the controller (event {event.name})"))


class NotControllerError(Exception):
    """This broker is not the controller: the request must go to the one that is (NOT_CONTROLLER)."""
