"""Dynamic broker configs (KIP-226): the cluster-wide default layer and this broker's own layer.

AlterConfigs and IncrementalAlterConfigs on a BROKER resource change them: the empty resource name
is the cluster-wide default, the broker's id its own layer. Both are kept, as the strings the client
sent, in ``<first log dir>/__odradek_broker_configs.json`` (readable by the owner only, since it may
hold passwords), replaced atomically on every change::

    {"version": 1, "cluster_default": {"log.retention.ms": "3600000"},
     "brokers": {"1": {"max.connections": "100"}}}

and applied over the static configuration with ``BrokerConfig.with_dynamic``. Kafka keeps these in
ZooKeeper or its metadata log; a single node keeps them next to its topics, a ZooKeeper cluster member
in ZooKeeper (cluster/zk_broker_configs.py: no file then, the layers are adopted from there).

Validation follows Kafka's broker (DynamicBrokerConfig.validate as ConfigAdminManager calls it): read-only
configs, SSL keystore/truststore configs without a listener prefix, per-broker configs at the cluster
level, bad values and broken relations between configs are all refused (INVALID_REQUEST). Names no
catalog knows, and configs odradek cannot honour yet (``ConfigKey.refused``), are refused as
INVALID_CONFIG: Kafka keeps unknown names as custom configs for its plugins, which odradek cannot load.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from odradek.cluster.config_changes import describe_change, describe_configs
from odradek.cluster.metadata import ClusterMetadata
from odradek.config.broker import (
    BrokerConfig,
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
from odradek.storage.files import atomic_write
from odradek.storage.log_manager import LogManager

log = logging.getLogger(__name__)

FILE_NAME: Final = "__odradek_broker_configs.json"
_VERSION: Final = 1

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


class DynamicBrokerConfigs:
    """The two dynamic layers of one broker, as last written to disk, and the configuration they make."""

    def __init__(
        self,
        path: Path,
        node_id: int,
        static: BrokerConfig,
        cluster_default: Mapping[str, str] | None = None,
        per_broker: Mapping[str, str] | None = None,
    ) -> None:
        self.path = path
        self.node_id = node_id
        self.static = static
        self.cluster_default: dict[str, str] = dict(cluster_default or {})
        self.per_broker: dict[str, str] = dict(per_broker or {})

    @classmethod
    def load(cls, log_dir: Path, node_id: int, static: BrokerConfig) -> DynamicBrokerConfigs:
        """The stored layers ({} if none). A stored value that no longer passes validation is dropped
        with a warning, as Kafka ignores invalid dynamic configs at start-up."""
        store = cls(log_dir / FILE_NAME, node_id, static)
        try:
            doc = json.loads(store.path.read_text("utf-8"))
        except FileNotFoundError:
            return store
        except (OSError, ValueError) as error:
            raise ConfigError(f"cannot read dynamic broker configs {store.path}: {error}") from error
        if not isinstance(doc, dict):
            raise ConfigError(f"{store.path}: a JSON object was expected, not {_json_kind(doc)}")
        if doc.get("version") != _VERSION:
            raise ConfigError(f"{store.path}: unsupported version {doc.get('version')!r}")
        cluster_layer = _json_object(doc, "cluster_default", store.path)
        own_layer = _json_object(_json_object(doc, "brokers", store.path), str(node_id), store.path)
        store.cluster_default = _usable(cluster_layer, cluster_default=True)
        store.per_broker = _usable(own_layer, cluster_default=False)
        try:
            store.config()
        except ConfigError as error:
            log.warning("ignoring stored dynamic broker configs %s: %s", store.path, shortened(str(error)))
            store.cluster_default, store.per_broker = {}, {}
        return store

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

    def replace(self, configs: Mapping[str, str], *, cluster_default: bool) -> BrokerConfig:
        """Validate, persist and return the configuration with `configs` as the whole layer."""
        config = self.validate(configs, cluster_default=cluster_default)
        before = self.layer(cluster_default=cluster_default)
        if cluster_default:
            self.cluster_default = dict(configs)
        else:
            self.per_broker = dict(configs)
        self._write()
        log.info(
            "dynamic configs of %s changed: %s",
            "the default of all brokers" if cluster_default else f"broker {self.node_id}",
            describe_change(before, configs, _broker_key),
        )
        return config

    def _write(self) -> None:
        doc = {
            "version": _VERSION,
            "cluster_default": dict(sorted(self.cluster_default.items())),
            "brokers": {str(self.node_id): dict(sorted(self.per_broker.items()))} if self.per_broker else {},
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(self.path, (json.dumps(doc, indent=1) + "\n").encode(), mode=0o600)


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
