"""Opening the broker's log dirs, before anything is loaded: the node id, the dynamic broker configs a
single node keeps there, the log manager."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from odradek.cluster.dynamic_configs import DynamicBrokerConfigs
from odradek.cluster.metadata.broker_configs import LocalBrokerConfigStore
from odradek.config.broker import BrokerConfig
from odradek.config.topic import resolve_topic_config
from odradek.storage.config import LogConfig
from odradek.storage.log_manager import LogManager
from odradek.storage.node_id import resolve_node_id
from odradek.storage.stray_logs import JudgedByLeaderAndIsr, JudgedByTopicStore


@dataclass(frozen=True)
class Storage:
    """The broker's log dirs, opened (not loaded yet), and the settings they hold."""

    node_id: int
    dynamic_configs: DynamicBrokerConfigs
    #: The configuration with the dynamic broker configs the first log dir keeps applied.
    config: BrokerConfig
    logs: LogManager


def open_storage(
    config: BrokerConfig,
    log_dirs: list[Path],
    live_dirs: list[Path],
    *,
    cluster_member: bool,
    on_work_due: Callable[[], None],
    on_log_dir_failure: Callable[[Path], None],
) -> Storage:
    """Settle the node id (configured, or kept in meta.properties of `live_dirs`), read the dynamic
    broker configs (a single node's file; a cluster member's come from ZooKeeper at start) and open
    the log manager over every log dir."""
    node_id = resolve_node_id(
        live_dirs, config.node_id, config.broker_id_generation_enable, cluster=cluster_member
    )
    if cluster_member:
        dynamic_configs = DynamicBrokerConfigs(node_id, config)
    else:
        layer_file = LocalBrokerConfigStore(log_dirs[0], node_id)
        dynamic_configs = DynamicBrokerConfigs.load(layer_file, node_id, config)
    config = dynamic_configs.config()
    default_log_config = LogConfig.from_mapping(dict(resolve_topic_config({}, config)))
    logs = LogManager(
        log_dirs,
        default_log_config,
        producer_id_expiration_ms=config.producer_id_expiration_ms,
        # A single node's topic store says which logs are its own (stray logs), a cluster member's
        # controller later; the high watermark is the replica manager's in both modes.
        strays=JudgedByLeaderAndIsr() if cluster_member else JudgedByTopicStore(),
        on_work_due=on_work_due,
        on_log_dir_failure=on_log_dir_failure,
    )
    return Storage(node_id, dynamic_configs, config, logs)
