"""/log_dir_event_notification: how a broker tells the controller that one of its log dirs failed
(Kafka 3.9's LogDirEventNotificationSequenceZNode and KafkaZkClient.propagateLogDirEvent).

A broker creates the persistent sequential znode ``log_dir_event_<10 digits>`` holding
``{"version":1,"broker":<id>,"event":1}`` (1: LogDirFailure, Kafka's only event); the controller lists
them, reads the broker ids, asks those brokers which of their replicas are still online (LeaderAndIsr)
and deletes the znodes it read, fenced by its epoch.
"""

from __future__ import annotations

import logging
from typing import Final

from odradek.cluster.zookeeper import paths, znode_json
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.controller_fence import ControllerFence, DeleteOp

log = logging.getLogger(__name__)

#: The prefix of each notification's name (ZooKeeper appends the sequence number).
LOG_DIR_EVENT_PREFIX: Final = "log_dir_event_"
#: The notification's format version and its one event type (Kafka's LogDirFailureEvent).
VERSION: Final = 1
LOG_DIR_FAILURE_EVENT: Final = 1


def encode(broker_id: int) -> bytes:
    return znode_json.encode({"version": VERSION, "broker": broker_id, "event": LOG_DIR_FAILURE_EVENT})


def propagate_log_dir_event(zk: ZooKeeperClient, broker_id: int) -> str:
    """Tell the controller that a log dir of ``broker_id`` failed; returns the znode's name."""
    zk.create_persistent_path(paths.LOG_DIR_EVENT_NOTIFICATION)
    created = zk.write(
        zk.kazoo.create_async,
        f"{paths.LOG_DIR_EVENT_NOTIFICATION}/{LOG_DIR_EVENT_PREFIX}",
        encode(broker_id),
        sequence=True,
    )
    return str(created).rsplit("/", 1)[1]


def read_log_dir_events(zk: ZooKeeperClient) -> dict[str, int]:
    """Every notification's name with the broker it names. One deleted meanwhile is skipped; one that
    cannot be read is logged, kept in the answer with broker -1 (so that it is deleted too), as
    Kafka's controller reads only the broker id and drops what it cannot parse."""
    events: dict[str, int] = {}
    for name in sorted(zk.children(paths.LOG_DIR_EVENT_NOTIFICATION)):
        if not name.startswith(LOG_DIR_EVENT_PREFIX):
            continue
        path = f"{paths.LOG_DIR_EVENT_NOTIFICATION}/{name}"
        found = zk.read(path)
        if found is None:
            continue
        try:
            events[name] = znode_json.int_field(znode_json.decode_object(found[0], path), "broker", path)
        except ValueError as error:
            log.warning("ignoring a log dir event notification that cannot be read: %s", error)
            events[name] = -1
    return events


def delete_log_dir_events(fence: ControllerFence, names: list[str]) -> None:
    """Delete the notifications the controller handled (as Kafka, fenced by the controller epoch)."""
    if names:
        fence.commit([DeleteOp(f"{paths.LOG_DIR_EVENT_NOTIFICATION}/{name}") for name in names])
