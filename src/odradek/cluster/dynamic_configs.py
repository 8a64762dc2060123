"""Dynamic broker configs (KIP-226): the cluster-wide default layer and this broker's own layer.

AlterConfigs and IncrementalAlterConfigs on a BROKER resource change them: the empty resource name
is the cluster-wide default, the broker's id its own layer. Both are kept, as the strings the client
sent, by a store (cluster/metadata/broker_configs.py: a single node's file in its first log dir, a
ZooKeeper cluster member's znodes, whose layers are adopted from there) and applied here over the
static configuration with ``BrokerConfig.with_dynamic``.

Validation follows Kafka's broker (DynamicBrokerConfig.validate as ConfigAdminManager calls it): read-only
configs, SSL keystore/truststore configs without a listener prefix, per-broker configs at the cluster
level, bad values and broken relations between configs are all refused (INVALID_REQUEST). Names no
catalog knows, and configs odradek cannot honour yet (``ConfigKey.refused``), are refused as
INVALID_CONFIG: Kafka keeps unknown names as custom configs for its plugins, which odradek cannot load.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final, Protocol

from odradek.cluster.config_changes import describe_change, describe_configs
from odradek.cluster.metadata import ClusterMetadata
from odradek.config.broker import BrokerConfig
from odradek.config.broker_checks import (
    refuse_unsupported_broker_configs,
    scala_set,
    validate_dynamic_broker_configs,
)
from odradek.config.catalog import BROKER_CONFIGS, LISTENER_PREFIX, listener_base
from odradek.config.topic import resolve_topic_config
from odradek.config.types import ConfigError, ConfigKey
from odradek.logs import shortened
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.storage.config import LogConfig
from odradek.storage.errors import InvalidLogConfigError
from odradek.storage.log_manager import LogManager

log = logging.getLogger(__name__)

#: Kafka's SslConfigs.RECONFIGURABLE_CONFIGS: dynamic only per listener (listener.name.<l>.<config>).
_LISTENER_ONLY: Final = frozenset(
    {
        "ssl.keystore.type",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.key.password",
        "ssl.keystore.key",
        "ssl.keystore.certificate.chain",
        "ssl.truststore.type",
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.truststore.certificates",
    }
)
#: Listener configs that may be set cluster-wide (Kafka's ClusterLevelListenerConfigs).
_CLUSTER_LEVEL_LISTENER: Final = frozenset(
    {"max.connections", "max.connection.creation.rate", "num.network.threads"}
)


class LayerFile(Protocol):
    """Where a single node keeps its two layers (cluster/metadata/broker_configs.py)."""

    #: The file, as log lines name it.
    path: Path

    def read(self) -> tuple[dict[str, object], dict[str, object]]:
        """The cluster-wide default and this broker's own layer as stored ({} if none); ConfigError
        naming the file if it cannot be read."""
        ...

    def write(self, cluster_default: Mapping[str, str], per_broker: Mapping[str, str]) -> None:
        """Replace both layers (blocking: an fsynced file; called from a worker thread)."""


class BrokerConfigStore(Protocol):
    """Where AlterConfigs writes a broker layer (cluster/metadata/broker_configs.py: a single node's file,
    a cluster member's /config/brokers); the configuration it makes is applied through the layers'
    reconfigurables (`DynamicBrokerConfigs.add_reconfigurable`)."""

    def check_storable(self, configs: Mapping[str, str]) -> None:
        """Refuse (KafkaError) a layer this store cannot keep."""

    async def alter(
        self,
        change: Callable[[dict[str, str]], Mapping[str, str]],
        *,
        cluster_default: bool,
        validate_only: bool = False,
    ) -> None:
        """Replace a layer with `change(layer as stored now)` (which raises KafkaError to refuse), one
        change at a time, unless `validate_only`; applied once the store has it (a single node's at
        once, a cluster member's when its change notification is read)."""


class DynamicBrokerConfigs:
    """The two dynamic layers of one broker and the configuration they make over the static one; a
    single node's as last written to its `LayerFile`, a cluster member's as adopted from ZooKeeper."""

    def __init__(
        self,
        node_id: int,
        static: BrokerConfig,
        stored_in: LayerFile | None = None,
        cluster_default: Mapping[str, str] | None = None,
        per_broker: Mapping[str, str] | None = None,
    ) -> None:
        self.node_id = node_id
        self.static = static
        #: A single node's file (None: the layers are adopted, `alter` is the store's own).
        self.stored_in = stored_in
        self.cluster_default: dict[str, str] = dict(cluster_default or {})
        self.per_broker: dict[str, str] = dict(per_broker or {})
        self._turn = asyncio.Lock()
        self._reconfigurables: list[Callable[[BrokerConfig], None]] = []

    def add_reconfigurable(self, reconfigurable: Callable[[BrokerConfig], None]) -> None:
        """Told each new configuration a store applies (Kafka's DynamicBrokerConfig.addReconfigurable)."""
        self._reconfigurables.append(reconfigurable)

    def reconfigure(self, config: BrokerConfig) -> None:
        """A store's change is applied: every reconfigurable is told, in the order they registered."""
        for reconfigurable in self._reconfigurables:
            reconfigurable(config)

    @classmethod
    def load(cls, stored_in: LayerFile, node_id: int, static: BrokerConfig) -> DynamicBrokerConfigs:
        """The stored layers ({} if none). A stored value that no longer passes validation is dropped
        with a warning, as Kafka ignores invalid dynamic configs at start-up."""
        layers = cls(node_id, static, stored_in)
        cluster_layer, own_layer = stored_in.read()
        layers.cluster_default = _usable(cluster_layer, cluster_default=True)
        layers.per_broker = _usable(own_layer, cluster_default=False)
        try:
            layers.config()
        except ConfigError as error:
            log.warning(
                "ignoring stored dynamic broker configs %s: %s", stored_in.path, shortened(str(error))
            )
            layers.cluster_default, layers.per_broker = {}, {}
        return layers

    def adopt(self, cluster_default: Mapping[str, str], per_broker: Mapping[str, str]) -> BrokerConfig:
        """Take both layers as another store keeps them (ZooKeeper, in a cluster), writing no file.
        A value that does not pass validation is left out with a warning, as at load; layers that
        contradict each other are ignored whole, and the configuration stays as it was."""
        cluster_layer = _usable(dict(cluster_default), cluster_default=True)
        own_layer = _usable(dict(per_broker), cluster_default=False)
        try:
            config = self.static.with_dynamic(cluster_layer, own_layer)
        except ConfigError as error:  # (the layers may hold passwords: Kafka logs them redacted)
            log.warning(
                "ignoring dynamic broker configs (the default of all brokers: %s; broker %d: %s): %s",
                describe_configs(cluster_layer, _broker_key),
                self.node_id,
                describe_configs(own_layer, _broker_key),
                shortened(str(error)),
            )
            return self.config()
        for cluster_level, before, after in (
            (True, self.cluster_default, cluster_layer),
            (False, self.per_broker, own_layer),
        ):
            if before != after:
                log.info(
                    "dynamic configs of %s changed: %s",
                    "the default of all brokers" if cluster_level else f"broker {self.node_id}",
                    describe_change(before, after, _broker_key),
                )
        self.cluster_default, self.per_broker = cluster_layer, own_layer
        return config

    def layer(self, *, cluster_default: bool) -> dict[str, str]:
        return dict(self.cluster_default if cluster_default else self.per_broker)

    def config(self) -> BrokerConfig:
        """The effective configuration: static settings under the two dynamic layers."""
        return self.static.with_dynamic(self.cluster_default, self.per_broker)

    def validate(self, configs: Mapping[str, str], *, cluster_default: bool) -> BrokerConfig:
        """The configuration if `configs` became the whole layer; raises KafkaError(INVALID_REQUEST)
        with the reason when Kafka would refuse it (KAFKA-13609: Kafka reports these as invalid
        requests, not invalid configs)."""
        try:
            _check(configs, cluster_default=cluster_default)
        except KafkaError as error:
            raise KafkaError(ErrorCode.INVALID_REQUEST, error.error_message) from None
        # Names no catalog knows and configs odradek cannot honour yet are invalid configs.
        refuse_unsupported_broker_configs(configs)
        try:
            if cluster_default:
                return self.static.with_dynamic(configs, self.per_broker)
            return self.static.with_dynamic(self.cluster_default, configs)
        except ConfigError as error:
            raise KafkaError(ErrorCode.INVALID_REQUEST, str(error)) from None

    async def replace(self, configs: Mapping[str, str], *, cluster_default: bool) -> BrokerConfig:
        """Validate, persist and return the configuration with `configs` as the whole layer."""
        return await self.alter(lambda _: dict(configs), cluster_default=cluster_default)

    async def alter(
        self,
        change: Callable[[dict[str, str]], dict[str, str]],
        *,
        cluster_default: bool,
    ) -> BrokerConfig:
        """Validate, persist and return the configuration whose layer is `change` applied
        to the layer as it is when this change's turn comes: one computed before another's write ended
        would undo that one. The file is written from a worker thread, one change at a time (an fsync
        on the event loop held every connection), and the layers change once it is written."""
        async with self._turn:
            configs = change(dict(self.layer(cluster_default=cluster_default)))
            config = self.validate(configs, cluster_default=cluster_default)
            before = self.layer(cluster_default=cluster_default)
            layers = (
                (dict(configs), self.per_broker) if cluster_default else (self.cluster_default, dict(configs))
            )
            if self.stored_in is None:  # (a cluster member's store writes ZooKeeper instead)
                raise KafkaError(ErrorCode.INVALID_REQUEST, "This broker keeps no dynamic config file.")
            await asyncio.to_thread(self.stored_in.write, *layers)
            self.cluster_default, self.per_broker = layers
        log.info(
            "dynamic configs of %s changed: %s",
            "the default of all brokers" if cluster_default else f"broker {self.node_id}",
            describe_change(before, configs, _broker_key),
        )
        return config


def apply_log_defaults(
    logs: LogManager, config: BrokerConfig, cluster: ClusterMetadata | None = None
) -> None:
    """Give every partition log the topic defaults `config` now implies (log.retention.ms, ...), under
    each topic's own overrides, as Kafka reconfigures its logs after a dynamic change. The overrides are
    the metadata cache's (`cluster`, where a ZooKeeper cluster member keeps what /config/topics says;
    the log dir's topic store holds no cluster topic's), else the topic store's."""
    logs.default_config = LogConfig.from_mapping(dict(resolve_topic_config({}, config)))
    for partition, partition_log in logs.logs.items():
        state = cluster.topic(partition.topic) if cluster is not None else None
        if state is None:
            partition_log.update_config(logs.config_for(partition.topic))
            continue
        try:
            partition_log.update_config(logs.topic_log_config(state.configs))
        except InvalidLogConfigError as error:  # another tool wrote them: the log keeps what it has
            log.error(
                "cannot apply the configs of topic %s: %s", shortened(partition.topic), shortened(str(error))
            )


def _check(configs: Mapping[str, str], *, cluster_default: bool) -> None:
    without_prefix = sorted(name for name in configs if name in _LISTENER_ONLY)
    if without_prefix:
        raise KafkaError(
            ErrorCode.INVALID_REQUEST,
            "These security configs can be dynamically updated only per-listener using the listener "
            f"prefix: {scala_set(without_prefix)}",
        )
    known = {name: value for name, value in configs.items() if name in BROKER_CONFIGS}
    validate_dynamic_broker_configs(known, cluster_default=cluster_default)
    for name, value in configs.items():
        if not name.startswith(LISTENER_PREFIX):
            continue
        base = listener_base(name)
        if cluster_default and base not in _CLUSTER_LEVEL_LISTENER:
            raise KafkaError(
                ErrorCode.INVALID_REQUEST,
                "Cannot update these configs at default cluster level, broker id must be specified: "
                + scala_set([name]),
            )
        if base in BROKER_CONFIGS:
            try:
                BROKER_CONFIGS[base].parse(value)
            except ConfigError as error:
                raise KafkaError(ErrorCode.INVALID_REQUEST, str(error)) from None


def _broker_key(name: str) -> ConfigKey | None:
    return BROKER_CONFIGS.get(listener_base(name) if name.startswith(LISTENER_PREFIX) else name)


def _usable(stored: dict[str, object], *, cluster_default: bool) -> dict[str, str]:
    usable: dict[str, str] = {}
    for name, value in stored.items():
        try:
            _check({name: str(value)}, cluster_default=cluster_default)
            refuse_unsupported_broker_configs({name: str(value)})
        except KafkaError as error:
            # (the reason may quote the value, of a config that is not a password, a megabyte long)
            log.warning(
                "ignoring stored dynamic broker config %s: %s",
                shortened(name),
                shortened(error.error_message or error.error_code.name),
            )
            continue
        usable[name] = str(value)
    return usable
