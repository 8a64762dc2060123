"""CLIENT_METRICS config resources (KIP-714 subscriptions): a single node's
(`LocalClientMetricsConfigs`, `<first log dir>/__odradek_client_metrics.json`) and a ZooKeeper
cluster's (`ZkClientMetricsConfigs`), kept as entity_configs.py keeps every such entity type. In
ZooKeeper they are where Kafka's ConfigType names them (ConfigType.CLIENT_METRICS; Kafka 3.9 serves
them in KRaft mode only, so no Kafka broker writes these):

```
/config/client-metrics/<subscription>   {"version":1,"config":{"metrics":"*","interval.ms":"1000"}}
/config/changes/config_change_<n>       {"version":2,"entity_path":"client-metrics/<subscription>"}
```
Either applies what it reads to the broker's client metrics manager; a stored subscription that is no
longer valid (written by another tool) is logged and not applied, the previous one stays.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Final

from odradek.cluster.metadata.entity_configs import LocalEntityConfigs, ZkEntityConfigs
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.protocol.error_codes import KafkaError
from odradek.telemetry.manager import ClientMetricsManager

log = logging.getLogger(__name__)

FILE_NAME: Final = "__odradek_client_metrics.json"
CLIENT_METRICS_CONFIG: Final = "client-metrics"


class LocalClientMetricsConfigs(LocalEntityConfigs):
    file_name = FILE_NAME
    entries = "subscriptions"

    def __init__(self, log_dir: Path, manager: ClientMetricsManager) -> None:
        super().__init__(log_dir)
        self._manager = manager

    def _apply(self, name: str, configs: dict[str, str]) -> None:
        _apply_subscription(self._manager, name, configs)


class ZkClientMetricsConfigs(ZkEntityConfigs):
    config_type = CLIENT_METRICS_CONFIG
    what = "client metrics subscription"
    changes = "client metrics config"

    def __init__(self, zk: ZooKeeperClient, manager: ClientMetricsManager) -> None:
        super().__init__(zk)
        self._manager = manager

    def _apply(self, name: str, configs: dict[str, str]) -> None:
        _apply_subscription(self._manager, name, configs)


def _apply_subscription(manager: ClientMetricsManager, name: str, configs: dict[str, str]) -> None:
    try:
        manager.update_subscription(name, configs)
    except KafkaError as error:  # written by another tool: the previous subscription stays
        log.error("client metrics subscription %r not applied: %s", name, error.error_message)
