"""Broker registration under /brokers/ids, as Kafka 3.9's KafkaZkClient.registerBroker does it.

The registration is ephemeral: it lives as long as the broker's session. Its creation zxid (czxid) is
the broker epoch, which the controller sends in LeaderAndIsr/UpdateMetadata/StopReplica so that a
broker can refuse requests meant for an earlier incarnation of itself.
"""

from __future__ import annotations

from kazoo.exceptions import NodeExistsError
from kazoo.protocol.states import ZnodeStat

from odradek.cluster.zookeeper import paths
from odradek.cluster.zookeeper.broker_znode import BrokerRegistration
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.errors import BrokerIdAlreadyRegisteredError


def register_broker(zk: ZooKeeperClient, registration: BrokerRegistration) -> int:
    """Create /brokers/ids/<id> (ephemeral) and return the broker epoch (its czxid).

    As Kafka: one multi creates the znode and sets its data, the set's stat giving the czxid. A znode
    already there is this session's own (a retry) or another broker's: that is refused.
    """
    path = paths.broker(registration.broker_id)
    transaction = zk.kazoo.transaction()
    transaction.create(path, b"", ephemeral=True)
    transaction.set_data(path, registration.serialize(), version=0)
    results = zk.commit(transaction)
    if isinstance(results[1], ZnodeStat):
        return int(results[1].czxid)
    if isinstance(results[0], NodeExistsError):
        found = zk.read(path)
        if found is not None and found[1].ephemeralOwner == zk.session_id:
            return int(found[1].czxid)
        owner = f"session 0x{found[1].ephemeralOwner:x}" if found else "a session that just ended"
        raise BrokerIdAlreadyRegisteredError(
            f"Broker id {registration.broker_id} is already registered in ZooKeeper ({path}, by {owner}): "
            "another broker runs with the same broker.id/node.id"
        )
    raise next(result for result in results if isinstance(result, Exception))


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


def live_broker_ids(zk: ZooKeeperClient) -> list[int]:
    """The ids of the registered brokers, in order (non-numeric children, never Kafka's, are skipped)."""
    return sorted(int(name) for name in zk.children(paths.BROKER_IDS) if name.isdigit())
