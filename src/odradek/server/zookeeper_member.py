"""A broker's membership of a ZooKeeper cluster: session, cluster id, registration, controller elector.

Kafka's KafkaServer.startup in ZooKeeper mode, in the same order: connect (the chroot is created),
agree on the cluster id with /cluster/id and meta.properties, register /brokers/ids/<id> (its czxid is
the broker epoch) and start the AlterPartition sender that leaders hand ISR changes to, then start the
controller, which runs for controller as soon as it starts. When the
session expires the registration is gone with it: on the new session the broker registers again and
takes the new epoch, as Kafka's session-expiration handler does (the controller re-elects by itself).
Registering, first or again, waits out another session's registration of the id (a killed
predecessor's, until ZooKeeper expires it); still held after that, it is a live broker's with the same
id: a start stops, and a running broker that lost its registration to it is stopped (``on_replaced``),
as a refused start: one line naming the holder. A stop asked for meanwhile ends the wait.

Every ZooKeeper call blocks, so each runs in a worker thread; state changes happen on the loop.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable

from odradek.cluster.controller.controller import KafkaController
from odradek.cluster.inter_broker_connection import InterBrokerSecurity, inter_broker_security
from odradek.cluster.metadata import BrokerEndpoint
from odradek.cluster.replica_manager import ReplicaManager
from odradek.cluster.replication.alter_partition import AlterPartitionManager
from odradek.cluster.zookeeper.broker_znode import BrokerRegistration, ListenerEndpoint
from odradek.cluster.zookeeper.brokers import register_broker
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.errors import BrokerIdAlreadyRegisteredError, ZooKeeperError
from odradek.cluster.zookeeper.log_dir_events import propagate_log_dir_event
from odradek.cluster.zookeeper.session import ZooKeeperSecurity
from odradek.config.broker import BrokerConfig

log = logging.getLogger("odradek.cluster.member")


def registration_wait_s(config: BrokerConfig) -> float:
    """How long a starting broker waits for another session's /brokers/ids/<id> to go: a predecessor
    killed without closing its session holds it until ZooKeeper expires that session, at most a
    session timeout and one server tick after its last heartbeat. The tick is unknown here; under
    ZooKeeper's default minSessionTimeout (2 ticks) it is at most half a session timeout."""
    return config.zookeeper_session_timeout_ms * 1.5 / 1000


class ZooKeeperMember:
    """This broker in the cluster: its ZooKeeper session, its registration and its controller."""

    def __init__(
        self,
        config: BrokerConfig,
        node_id: int,
        security: InterBrokerSecurity | None = None,
        zk_security: ZooKeeperSecurity | None = None,
        on_replaced: Callable[[BrokerIdAlreadyRegisteredError], None] | None = None,
    ) -> None:
        """``on_replaced``: called on the loop when this broker, running, found its id registered by a
        live broker's session as it registered again: it must stop."""
        self.config = config
        self.node_id = node_id
        #: How this broker connects to the others (raises ConfigError at start-up when it cannot).
        self.inter_broker_security = security if security is not None else inter_broker_security(config)
        #: How its ZooKeeper sessions are secured (TLS, SASL login, zookeeper.set.acl).
        self.zk_security = zk_security if zk_security is not None else ZooKeeperSecurity()
        self.zk: ZooKeeperClient | None = None
        self.controller: KafkaController | None = None
        self.replicas: ReplicaManager | None = None
        self.registration: BrokerRegistration | None = None
        self.alter_partition: AlterPartitionManager | None = None
        self._on_replaced = on_replaced
        self._session_lost = False
        self._closing = False
        self._reregistering: asyncio.Task[None] | None = None
        #: Set to end a registration wait (``stop_waiting``): the broker is stopping.
        self._stop_waiting = threading.Event()
        #: Registered once (the controller knows this broker; a controlled shutdown may ask it).
        self.registered = False

    @property
    def broker_epoch(self) -> int:
        return self.replicas.broker_epoch if self.replicas is not None else -1

    async def connect(self) -> None:
        """Open the session (raises ZooKeeperConnectionError in zookeeper.connection.timeout.ms)."""
        config = self.config
        connect_string = config.zookeeper_connect
        assert connect_string, "only a broker with zookeeper.connect joins a cluster"
        self.zk = await asyncio.to_thread(
            ZooKeeperClient.connect,
            connect_string,
            session_timeout_ms=config.zookeeper_session_timeout_ms,
            connection_timeout_ms=config.zookeeper_connection_timeout_ms,
            security=self.zk_security,
        )
        await asyncio.to_thread(self.zk.ensure_persistent_paths)

    async def cluster_id(self, proposed: str) -> str:
        """The cluster's id: /cluster/id, written as `proposed` by the first broker of the cluster."""
        assert self.zk is not None
        return await asyncio.to_thread(self.zk.get_or_create_cluster_id, proposed)

    async def register(
        self,
        advertised: dict[str, list[BrokerEndpoint]],
        replicas: ReplicaManager,
        alter_partition: AlterPartitionManager,
    ) -> bool:
        """Register /brokers/ids/<id> with every advertised listener (waiting out a killed
        predecessor's session; raises BrokerIdAlreadyRegisteredError when a live broker holds it), set
        the broker epoch, watch for session expiry and start `alter_partition`, the replica manager's
        sender of ISR changes. False: stopped while waiting, not registered."""
        assert self.zk is not None
        protocols = self.config.protocol_map
        endpoints = tuple(
            ListenerEndpoint(name, ends[0].host, ends[0].port, protocols.get(name, name))
            for name, ends in advertised.items()
        )
        self.registration = BrokerRegistration(
            broker_id=self.node_id,
            endpoints=endpoints,
            timestamp_ms=int(time.time() * 1000),
            rack=self.config.broker_rack,
        )
        self.replicas = replicas
        epoch = await asyncio.to_thread(
            register_broker,
            self.zk,
            self.registration,
            wait_s=registration_wait_s(self.config),
            stop=self._stop_waiting,
        )
        if epoch is None:
            log.info("stopped while waiting to register as broker %d: not registered", self.node_id)
            return False
        replicas.broker_epoch = epoch
        self.registered = True
        log.info("registered in ZooKeeper as broker %d, epoch %d", self.node_id, replicas.broker_epoch)
        self.zk.watch_session(self._on_session_state, asyncio.get_running_loop())
        self.alter_partition = alter_partition
        alter_partition.start()
        return True

    async def propagate_log_dir_event(self) -> None:
        """Tell the controller that a log dir of this broker failed (Kafka's propagateLogDirEvent)."""
        assert self.zk is not None
        name = await asyncio.to_thread(propagate_log_dir_event, self.zk, self.node_id)
        log.info("told the controller of a failed log dir: %s", name)

    async def start_controller(self, controller: KafkaController) -> None:
        """Start the controller elector (after registering, as Kafka: the controller reads brokers);
        from now on it is stopped with the session."""
        self.controller = controller
        await controller.start()

    async def close(self) -> None:
        """Stop the controller, then end the session: the registration (and /controller) go at once."""
        self._closing = True  # kazoo reports the session it closes as LOST: not an expiry
        self._stop_waiting.set()  # a registration wait's thread ends now, not a session timeout later
        if self._reregistering is not None:
            self._reregistering.cancel()
        if self.alter_partition is not None:
            await self.alter_partition.stop()  # ISR changes waiting fail: the leaders stop too
        if self.controller is not None:
            try:
                await self.controller.stop()
            except Exception:  # the session still has to end
                log.exception("stopping the controller failed")
        if self.zk is not None:
            await asyncio.to_thread(self.zk.close)
            self.zk = None

    def _on_session_state(self, state: str) -> None:
        # kazoo reports LOST when the session expired, then CONNECTED once it has a new one.
        if self._closing:
            return
        if state == "LOST":
            log.warning("ZooKeeper session of broker %d expired: registering again", self.node_id)
            self._session_lost = True
        elif state == "CONNECTED" and self._session_lost:
            self._session_lost = False
            self._reregistering = asyncio.get_running_loop().create_task(self._register_again())

    def stop_waiting(self) -> None:
        """The broker is stopping: a registration waiting for another session's to go gives up."""
        self._stop_waiting.set()

    async def _register_again(self) -> None:
        assert self.zk is not None and self.registration is not None and self.replicas is not None
        while self.zk is not None:
            try:
                epoch = await asyncio.to_thread(
                    register_broker,
                    self.zk,
                    self.registration,
                    wait_s=registration_wait_s(self.config),
                    stop=self._stop_waiting,
                )
            except BrokerIdAlreadyRegisteredError as error:
                # A live broker with this id took the registration while the session was lost (a twin
                # waiting for it): this broker is no longer the one the cluster knows as its id.
                if self._on_replaced is not None:
                    self._on_replaced(error)
                else:  # nobody to stop (a member on its own): at least say so
                    log.error("%s", error)
                return
            except ZooKeeperError as error:  # connection trouble: the new session may not be usable yet
                log.warning("registering broker %d again failed (%s); retrying", self.node_id, error)
                await asyncio.sleep(1)
                continue
            if epoch is None:  # stopping
                return
            self.replicas.broker_epoch = epoch
            log.info("registered again in ZooKeeper as broker %d, epoch %d", self.node_id, epoch)
            return
