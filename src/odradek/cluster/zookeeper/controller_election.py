"""Controller election through /controller and /controller_epoch, as Kafka 3.9's
KafkaZkClient.registerControllerAndIncrementControllerEpoch does it.

Read /controller_epoch (value e, zkVersion v; created at 0 when absent), then one multi: create the
ephemeral /controller and set /controller_epoch to e+1 at version v. Exactly one of several brokers
racing can succeed. The winner's new zkVersion of /controller_epoch fences every write it makes as
controller (ControllerFence): a later controller moves that version on, and the old one's writes fail.
"""

from __future__ import annotations

import time

from kazoo.exceptions import BadVersionError, NodeExistsError
from kazoo.protocol.states import ZnodeStat

from odradek.cluster.zookeeper import paths
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.cluster_znodes import (
    ControllerZnode,
    parse_controller_epoch,
    serialize_controller_epoch,
)
from odradek.cluster.zookeeper.controller_fence import ControllerEpoch, ControllerFence
from odradek.cluster.zookeeper.errors import ControllerMovedError

#: KafkaController.InitialControllerEpoch: the value /controller_epoch is created with.
INITIAL_CONTROLLER_EPOCH = 0


def elect_controller(zk: ZooKeeperClient, broker_id: int, timestamp_ms: int | None = None) -> ControllerFence:
    """Become controller, or raise ControllerMovedError when another broker is (or just became) one.

    The returned fence carries the new controller epoch; every controller write goes through it.
    """
    current = read_controller_epoch(zk) or _create_controller_epoch(zk)
    new_epoch = current.epoch + 1
    if timestamp_ms is None:
        timestamp_ms = int(time.time() * 1000)
    transaction = zk.kazoo.transaction()
    transaction.create(paths.CONTROLLER, ControllerZnode(broker_id, timestamp_ms).serialize(), ephemeral=True)
    new_epoch_data = serialize_controller_epoch(new_epoch)
    transaction.set_data(paths.CONTROLLER_EPOCH, new_epoch_data, current.epoch_zk_version)
    results = zk.commit(transaction)
    if isinstance(results[1], ZnodeStat):
        return ControllerFence(zk, ControllerEpoch(new_epoch, int(results[1].version)))
    if isinstance(results[0], NodeExistsError) or isinstance(results[1], BadVersionError):
        # As Kafka: perhaps our own multi succeeded and only its answer was lost; if /controller is ours
        # and the epoch is the one we wrote, we won. Otherwise someone else did.
        return ControllerFence(zk, _check_won(zk, broker_id, new_epoch))
    raise next(result for result in results if isinstance(result, Exception))


def read_controller_epoch(zk: ZooKeeperClient) -> ControllerEpoch | None:
    """/controller_epoch's value and zkVersion, or None when no controller was ever elected."""
    found = zk.read(paths.CONTROLLER_EPOCH)
    if found is None:
        return None
    data, stat = found
    return ControllerEpoch(parse_controller_epoch(data), int(stat.version))


def active_controller(zk: ZooKeeperClient) -> ControllerZnode | None:
    """Who is controller now (/controller), or None while there is none."""
    found = zk.read(paths.CONTROLLER)
    return None if found is None else ControllerZnode.parse(found[0])


def _create_controller_epoch(zk: ZooKeeperClient) -> ControllerEpoch:
    try:
        zk.write(
            zk.kazoo.create_async,
            paths.CONTROLLER_EPOCH,
            serialize_controller_epoch(INITIAL_CONTROLLER_EPOCH),
        )
        return ControllerEpoch(INITIAL_CONTROLLER_EPOCH, 0)
    except NodeExistsError:  # another broker created it first
        current = read_controller_epoch(zk)
        if current is None:
            raise ControllerMovedError(f"{paths.CONTROLLER_EPOCH} vanished while being read") from None
        return current


def _check_won(zk: ZooKeeperClient, broker_id: int, new_epoch: int) -> ControllerEpoch:
    controller = active_controller(zk)
    if controller is None:
        raise ControllerMovedError(f"{paths.CONTROLLER} went away while checking the controller election")
    if controller.broker_id == broker_id:
        current = read_controller_epoch(zk)
        if current is not None and current.epoch == new_epoch:
            return current
    raise ControllerMovedError(f"broker {controller.broker_id} is controller; broker {broker_id} is not")
