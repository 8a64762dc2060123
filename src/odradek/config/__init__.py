"""Broker and topic configs with Kafka's names, types, defaults and validation.

- ``BrokerConfig.load(path, overrides)``: the broker's configuration from ``server.properties`` and
  ``--override key=value``, typed and resolved (``config.log_retention_ms``, ``config["log.retention.ms"]``).
- ``resolve_topic_config(overrides, broker)``: a topic's every config with its source and synonyms.
- ``validate_topic_configs(configs)``: CreateTopics/AlterConfigs validation, raising
  ``KafkaError(ErrorCode.INVALID_CONFIG, ...)`` with Kafka's messages.
- ``validate_dynamic_broker_configs(configs, cluster_default=...)``: AlterConfigs on a broker.
- ``BROKER_CONFIGS`` / ``TOPIC_CONFIGS``: the catalog itself, for DescribeConfigs and the docs.
"""

from odradek.config.broker import BrokerConfig
from odradek.config.broker_checks import validate_dynamic_broker_configs
from odradek.config.catalog import (
    BROKER_CONFIGS,
    BROKER_SYNONYMS,
    TOPIC_CONFIGS,
    TOPIC_SYNONYMS,
    pythonic_name,
)
from odradek.config.catalog_cluster import generate_cluster_id, is_cluster_id
from odradek.config.listeners import Endpoint
from odradek.config.properties import apply_overrides, load_properties, parse_override, parse_properties
from odradek.config.topic import (
    TopicConfig,
    parse_topic_configs,
    resolve_topic_config,
    validate_topic_configs,
)
from odradek.config.types import (
    ConfigEntry,
    ConfigError,
    ConfigKey,
    ConfigSource,
    ConfigSynonym,
    ConfigType,
    ConfigValue,
    DynamicUpdateMode,
    Importance,
    Password,
)

__all__ = [
    "BROKER_CONFIGS",
    "BROKER_SYNONYMS",
    "TOPIC_CONFIGS",
    "TOPIC_SYNONYMS",
    "BrokerConfig",
    "ConfigEntry",
    "ConfigError",
    "ConfigKey",
    "ConfigSource",
    "ConfigSynonym",
    "ConfigType",
    "ConfigValue",
    "DynamicUpdateMode",
    "Endpoint",
    "Importance",
    "Password",
    "TopicConfig",
    "apply_overrides",
    "generate_cluster_id",
    "is_cluster_id",
    "load_properties",
    "parse_override",
    "parse_properties",
    "parse_topic_configs",
    "pythonic_name",
    "resolve_topic_config",
    "validate_dynamic_broker_configs",
    "validate_topic_configs",
]
