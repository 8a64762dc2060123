"""Broker registration under /brokers/ids, as Kafka 3.9's KafkaZkClient.registerBroker does it.

The registration is ephemeral: it lives as long as the broker's session. Its creation zxid (czxid) is
the broker epoch, which the controller sends in LeaderAndIsr/UpdateMetadata/StopReplica so that a
broker can refuse requests meant for an earlier incarnation of itself.

Beyond Kafka: every registration also moves /brokers/ids' data version on, in the same multi. A
re-created ephemeral znode starts at version 0 again, so no check of its own version can tell a new
registration from the old one; the parent's version can. The controller writes partition states
behind a check of that version (cluster/controller/registrations.py), so no state it writes names a
broker that registered again since the controller last read the registrations.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime

from kazoo.exceptions import NodeExistsError
from kazoo.protocol.states import WatchedEvent, ZnodeStat

from odradek.cluster.zookeeper import paths
from odradek.cluster.zookeeper.broker_znode import BrokerRegistration
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.errors import BrokerIdAlreadyRegisteredError
from odradek.cluster.zookeeper.znode_json import MalformedZnodeError, excerpt

log = logging.getLogger("odradek.cluster.member")


#: How often a registration wait looks at its stop signal (a thread cannot wait on two events).
_STOP_CHECK_S = 0.1


def register_broker(
    zk: ZooKeeperClient,
    registration: BrokerRegistration,
    *,
    wait_s: float = 0.0,
    stop: threading.Event | None = None,
) -> int | None:
    """Create /brokers/ids/<id> (ephemeral) and return the broker epoch (its czxid).

    As Kafka: one multi creates the znode and sets its data, the set's stat giving the czxid. A znode
    already there is this session's own (a retry) or another session's. Beyond Kafka, which refuses
    another session's at once: for up to ``wait_s`` it is watched until it goes (a predecessor killed
    without closing its session holds it until ZooKeeper expires that session), then taken; still
    held after that, it belongs to a live broker with the same id, and is refused in one line naming
    it (BrokerIdAlreadyRegisteredError). ``stop`` set ends a wait: None, nothing registered.
    """
    path = paths.broker(registration.broker_id)
    deadline = time.monotonic() + wait_s
    waited = False
    while True:
        epoch, holder = _create(zk, path, registration)
        if epoch is not None:
            if waited:
                log.info("the old registration %s went: registering broker %d", path, registration.broker_id)
            return epoch
        if holder is None:
            continue  # it went between the create and the read: try again
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise BrokerIdAlreadyRegisteredError(
                f"Broker id {registration.broker_id} is already registered in ZooKeeper ({path}) by "
                f"{_describe(registration.broker_id, holder)}"
                + (f", still after waiting {wait_s:g} s for its session to expire" if wait_s > 0 else "")
                + ": another broker runs with the same broker.id/node.id"
            )
        if not waited:
            log.warning(
                "broker id %d is registered in ZooKeeper by %s: waiting up to %g s for it to go (a broker "
                "stopped without ending its session holds it until the session expires)",
                registration.broker_id,
                _describe(registration.broker_id, holder),
                remaining,
            )
            waited = True
        _wait_for_change(zk, path, remaining, stop)
        if stop is not None and stop.is_set():
            return None


def _create(
    zk: ZooKeeperClient, path: str, registration: BrokerRegistration
) -> tuple[int | None, tuple[bytes | None, ZnodeStat] | None]:
    """(the broker epoch, None) once registered; (None, the holder's data and stat) when another
    session holds the znode; (None, None) when it went meanwhile."""
    transaction = zk.kazoo.transaction()
    transaction.create(path, b"", ephemeral=True)
    transaction.set_data(path, registration.serialize(), version=0)
    transaction.set_data(paths.BROKER_IDS, b"", version=-1)  # see the module docstring
    results = zk.commit(transaction)
    if isinstance(results[1], ZnodeStat):
        return int(results[1].czxid), None
    if not isinstance(results[0], NodeExistsError):
        raise next(result for result in results if isinstance(result, Exception))
    found = zk.read(path)
    if found is not None and found[1].ephemeralOwner == zk.session_id:
        return int(found[1].czxid), None  # this session's own: a retry
    return None, found


def _wait_for_change(zk: ZooKeeperClient, path: str, timeout_s: float, stop: threading.Event | None) -> None:
    """Until the znode at ``path`` changes or goes, ``timeout_s`` passes (a one-shot watch), or
    ``stop`` is set."""
    changed = threading.Event()

    def on_event(_: WatchedEvent) -> None:
        changed.set()

    if zk.retry(zk.kazoo.exists_async, path, on_event) is None:
        return
    deadline = time.monotonic() + timeout_s
    while not changed.is_set() and (stop is None or not stop.is_set()):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return
        changed.wait(min(remaining, _STOP_CHECK_S))


def _describe(broker_id: int, holder: tuple[bytes | None, ZnodeStat]) -> str:
    """``PLAINTEXT://host:port,... (session 0x..., registered at ...)``: which broker holds the id."""
    data, stat = holder
    session = f"session 0x{stat.ephemeralOwner:x}"
    try:
        found = BrokerRegistration.parse(broker_id, data)
    except MalformedZnodeError:
        return f"{session} ({excerpt(data or b'')})"
    endpoints = ",".join(endpoint.connection_string for endpoint in found.endpoints)
    when = datetime.fromtimestamp(found.timestamp_ms / 1000, UTC).isoformat(timespec="seconds")
    return f"{endpoints} ({session}, registered at {when})"


def broker_registration(zk: ZooKeeperClient, broker_id: int) -> tuple[BrokerRegistration, int] | None:
    """A live broker's registration and broker epoch, or None when it is not registered."""
    found = zk.read(paths.broker(broker_id))
    if found is None:
        return None
    data, stat = found
    return BrokerRegistration.parse(broker_id, data), int(stat.czxid)


def broker_epoch(zk: ZooKeeperClient, broker_id: int) -> int | None:
    """A broker's epoch (its registration's czxid) as ZooKeeper has it now; None when not registered."""
    found = zk.read(paths.broker(broker_id))
    return None if found is None else int(found[1].czxid)


def registrations_version(zk: ZooKeeperClient) -> int:
    """The data version of /brokers/ids: every registration moves it on (register_broker)."""
    found = zk.read(paths.BROKER_IDS)
    return -1 if found is None else int(found[1].version)


def live_broker_ids(zk: ZooKeeperClient) -> list[int]:
    """The ids of the registered brokers, in order (non-numeric children, never Kafka's, are skipped)."""
    return sorted(int(name) for name in zk.children(paths.BROKER_IDS) if name.isdigit())
