"""Where a broker's dynamic config layers (cluster/dynamic_configs.py) are stored: a single node's file
(`LocalBrokerConfigStore`), a ZooKeeper cluster's /config/brokers/<default> and /config/brokers/<id>
(`ZkBrokerConfigs`).

A single node keeps both layers, as the strings the client sent, in
``<first log dir>/__odradek_broker_configs.json`` (readable by the owner only, since it may hold
passwords), replaced atomically on every change, from a worker thread::

    {"version": 1, "cluster_default": {"log.retention.ms": "3600000"},
     "brokers": {"1": {"max.connections": "100"}}}

In ZooKeeper, as Kafka's ZooKeeper mode: AlterConfigs and IncrementalAlterConfigs on a BROKER resource (this
broker's id, or "" for the cluster-wide default) write the entity's whole config, then a
/config/changes notification (AdminZkClient.changeBrokerConfig). Every broker follows the
notifications (TopicConfigSync) and, for the two entities it is concerned by (the default and its
own id: DynamicConfigManager's BrokerConfigHandler), reads both again and applies them over its
static configuration. A broker reads them at start, before it serves.

Kafka stores a password config (a key store's password...) in ZooKeeper only encrypted with
`password.encoder.secret`, and refuses it without one ("Password encoder secret not configured").
odradek has no password encoder: such configs are refused in a cluster, never written in clear.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final

from odradek.cluster.dynamic_configs import DynamicBrokerConfigs
from odradek.cluster.zookeeper import paths
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.configs import change_entity_config, entity_config
from odradek.config.broker import BrokerConfig
from odradek.config.catalog import BROKER_CONFIGS, LISTENER_PREFIX, listener_base
from odradek.config.types import ConfigError
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.storage.files import atomic_write

FILE_NAME: Final = "__odradek_broker_configs.json"
_VERSION: Final = 1


class LocalBrokerConfigStore:
    """A single node's layers file (cluster/dynamic_configs.py's `LayerFile`)."""

    def __init__(self, log_dir: Path, node_id: int) -> None:
        self.path = log_dir / FILE_NAME
        self.node_id = node_id
        self._writing = threading.Lock()

    def read(self) -> tuple[dict[str, object], dict[str, object]]:
        try:
            doc = json.loads(self.path.read_text("utf-8"))
        except FileNotFoundError:
            return {}, {}
        except (OSError, ValueError) as error:
            raise ConfigError(f"cannot read dynamic broker configs {self.path}: {error}") from error
        if not isinstance(doc, dict):
            raise ConfigError(f"{self.path}: a JSON object was expected, not {_json_kind(doc)}")
        if doc.get("version") != _VERSION:
            raise ConfigError(f"{self.path}: unsupported version {doc.get('version')!r}")
        cluster_layer = _json_object(doc, "cluster_default", self.path)
        own_layer = _json_object(_json_object(doc, "brokers", self.path), str(self.node_id), self.path)
        return cluster_layer, own_layer

    def write(self, cluster_default: Mapping[str, str], per_broker: Mapping[str, str]) -> None:
        doc = {
            "version": _VERSION,
            "cluster_default": dict(sorted(cluster_default.items())),
            "brokers": {str(self.node_id): dict(sorted(per_broker.items()))} if per_broker else {},
        }
        with self._writing:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(self.path, (json.dumps(doc, indent=1) + "\n").encode(), mode=0o600)


class LocalBrokerConfigs:
    """A single node's `BrokerConfigStore`: a layer's change written to its file (the layers'
    `LayerFile`, `LocalBrokerConfigStore`), then applied at once."""

    def __init__(self, dynamic: DynamicBrokerConfigs) -> None:
        self.dynamic = dynamic

    def check_storable(self, configs: Mapping[str, str]) -> None:
        """Any layer: the file is readable by its owner only, so it may hold passwords."""

    async def alter(
        self,
        change: Callable[[dict[str, str]], Mapping[str, str]],
        *,
        cluster_default: bool,
        validate_only: bool = False,
    ) -> None:
        dynamic = self.dynamic
        if validate_only:
            change(dynamic.layer(cluster_default=cluster_default))
            return
        # applied to the layer as it is when the write's turn comes (another may be under way)
        config = await dynamic.alter(lambda layer: dict(change(layer)), cluster_default=cluster_default)
        dynamic.reconfigure(config)


class ZkBrokerConfigs:
    """A cluster member's `BrokerConfigStore` (/config/brokers), applied when a change notification that
    concerns this broker is read (DynamicConfigManager's)."""

    def __init__(self, zk: ZooKeeperClient, node_id: int, dynamic: DynamicBrokerConfigs) -> None:
        self.zk = zk
        self.node_id = node_id
        self.dynamic = dynamic
        # One read-and-apply at a time: a read begun before a write must not be applied after a
        # read begun after it (the writer's own apply and the notifications' would race).
        self._changing = asyncio.Lock()
        #: One alter (read, change, write) of this broker's at a time.
        self._altering = asyncio.Lock()

    def entity_name(self, *, cluster_default: bool) -> str:
        return paths.DEFAULT_ENTITY if cluster_default else str(self.node_id)

    def concerns(self, entity_name: str) -> bool:
        """Whether a change of /config/brokers/<entity_name> changes this broker's configuration."""
        return entity_name in (paths.DEFAULT_ENTITY, str(self.node_id))

    async def load(self) -> BrokerConfig:
        """Read both layers and adopt them; the configuration they make."""
        cluster_default, own = await asyncio.to_thread(self._read)
        return self.dynamic.adopt(cluster_default, own)

    async def on_change(self, entity_name: str) -> None:
        """A /config/changes notification named brokers/<entity_name>."""
        if not self.concerns(entity_name):
            return
        async with self._changing:
            self.dynamic.reconfigure(await self.load())

    async def current(self, *, cluster_default: bool) -> dict[str, str]:
        """A layer as ZooKeeper has it now (what an incremental change starts from)."""
        name = self.entity_name(cluster_default=cluster_default)
        return await asyncio.to_thread(entity_config, self.zk, paths.BROKER_CONFIG, name)

    async def alter(
        self,
        change: Callable[[dict[str, str]], Mapping[str, str]],
        *,
        cluster_default: bool,
        validate_only: bool = False,
    ) -> None:
        """A layer changed as ZooKeeper has it now (`change` raises KafkaError to refuse), then written
        (unless `validate_only`): this broker's changes one at a time, since each reads and writes in a
        worker thread and two at once would both start from the layer before either wrote. Changes
        through other brokers still race, as in Kafka 3.9 (no compare-and-set: last writer wins)."""
        async with self._altering:
            wanted = change(await self.current(cluster_default=cluster_default))
            if not validate_only:
                await self.write(wanted, cluster_default=cluster_default)

    async def write(self, configs: Mapping[str, str], *, cluster_default: bool) -> None:
        """Replace a layer and notify every broker. This one applies it at once too (Kafka's waits for
        the notification), so that a describe that follows the alter here sees it; the notification
        reads the same layers again."""
        self.check_storable(configs)
        name = self.entity_name(cluster_default=cluster_default)
        await asyncio.to_thread(change_entity_config, self.zk, paths.BROKER_CONFIG, name, dict(configs))
        await self.on_change(name)

    def check_storable(self, configs: Mapping[str, str]) -> None:
        """Refuse (INVALID_REQUEST) a layer with a password config: it would be stored in clear."""
        passwords = sorted(name for name in configs if _is_password(name))
        if passwords:
            raise KafkaError(
                ErrorCode.INVALID_REQUEST,
                f"Password encoder secret not configured: {', '.join(passwords)} cannot be stored in "
                "ZooKeeper (odradek does not encrypt dynamic passwords)",
            )

    def _read(self) -> tuple[dict[str, str], dict[str, str]]:
        return (
            entity_config(self.zk, paths.BROKER_CONFIG, paths.DEFAULT_ENTITY),
            entity_config(self.zk, paths.BROKER_CONFIG, str(self.node_id)),
        )


def _is_password(name: str) -> bool:
    key = BROKER_CONFIGS.get(listener_base(name) if name.startswith(LISTENER_PREFIX) else name)
    return key is None or key.sensitive  # a name no catalog knows might be a secret


def _json_object(doc: dict[str, object], key: str, path: Path) -> dict[str, object]:
    """The object stored under `key` ({} when absent); anything else stops start-up naming the file,
    rather than an AttributeError from deep inside it."""
    value = doc.get(key, {})
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: {key!r} must be a JSON object, not {_json_kind(value)}")
    return value


def _json_kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"
