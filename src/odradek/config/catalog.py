"""The whole catalog: every broker config by Kafka name, every topic config, and their synonyms."""

from __future__ import annotations

from odradek.config.catalog_cleaner import CLEANER_CONFIG_KEYS
from odradek.config.catalog_cluster import CLUSTER_CONFIG_KEYS
from odradek.config.catalog_coordinators import GROUP_COORDINATOR_CONFIG_KEYS, OFFSETS_CONFIG_KEYS
from odradek.config.catalog_log import LOG_CONFIG_KEYS
from odradek.config.catalog_metrics import METRICS_CONFIG_KEYS
from odradek.config.catalog_network import NETWORK_CONFIG_KEYS
from odradek.config.catalog_quotas import QUOTA_CONFIG_KEYS
from odradek.config.catalog_security import SECURITY_CONFIG_KEYS
from odradek.config.catalog_security_plugins import SECURITY_PLUGIN_CONFIG_KEYS
from odradek.config.catalog_share_coordinator import SHARE_COORDINATOR_CONFIG_KEYS
from odradek.config.catalog_share_groups import SHARE_GROUP_CONFIG_KEYS
from odradek.config.catalog_transactions import TRANSACTION_CONFIG_KEYS
from odradek.config.catalog_zookeeper import ZOOKEEPER_CONFIG_KEYS
from odradek.config.topic_catalog import TOPIC_CONFIGS, TOPIC_SYNONYMS
from odradek.config.types import ConfigKey

# Prefix of listener-scoped overrides such as listener.name.internal.ssl.keystore.location.
LISTENER_PREFIX = "listener.name."


def _index(*groups: tuple[ConfigKey, ...]) -> dict[str, ConfigKey]:
    catalog: dict[str, ConfigKey] = {}
    for group in groups:
        for key in group:
            if key.name in catalog:
                raise RuntimeError(f"broker config {key.name} is defined twice")
            catalog[key.name] = key
    return catalog


BROKER_CONFIGS: dict[str, ConfigKey] = _index(
    CLUSTER_CONFIG_KEYS,
    ZOOKEEPER_CONFIG_KEYS,
    NETWORK_CONFIG_KEYS,
    LOG_CONFIG_KEYS,
    CLEANER_CONFIG_KEYS,
    GROUP_COORDINATOR_CONFIG_KEYS,
    SHARE_GROUP_CONFIG_KEYS,
    OFFSETS_CONFIG_KEYS,
    TRANSACTION_CONFIG_KEYS,
    SHARE_COORDINATOR_CONFIG_KEYS,
    SECURITY_CONFIG_KEYS,
    SECURITY_PLUGIN_CONFIG_KEYS,
    QUOTA_CONFIG_KEYS,
    METRICS_CONFIG_KEYS,
)


def _broker_synonyms() -> dict[str, tuple[str, ...]]:
    """For a broker config, the configs that stand in for it, itself first (Kafka's brokerConfigSynonyms):
    e.g. log.retention.ms -> (log.retention.ms, log.retention.minutes, log.retention.hours)."""
    synonyms: dict[str, tuple[str, ...]] = {}
    for chain in TOPIC_SYNONYMS.values():
        names = tuple(synonym.name for synonym in chain)
        for name in names:
            synonyms[name] = names
    # The scheduler interval only stands in for log.flush.interval.ms, not the other way round.
    synonyms["log.flush.scheduler.interval.ms"] = ("log.flush.scheduler.interval.ms",)
    return synonyms


BROKER_SYNONYMS: dict[str, tuple[str, ...]] = _broker_synonyms()


def listener_base(name: str) -> str:
    """The config a listener-scoped name stands for:
    ``listener.name.internal.ssl.keystore.location`` -> ``ssl.keystore.location`` (and a SASL
    mechanism's ``listener.name.x.plain.sasl.jaas.config`` -> ``sasl.jaas.config``)."""
    rest = name[len(LISTENER_PREFIX) :].split(".", 1)
    base = rest[1] if len(rest) == 2 else ""
    if base not in BROKER_CONFIGS and "." in base:
        mechanism_config = base.split(".", 1)[1]
        if mechanism_config in BROKER_CONFIGS:
            return mechanism_config
    return base


def is_sensitive(name: str) -> bool:
    """Whether a broker config's value is a secret (Kafka's PASSWORD type); a listener-scoped one is
    its base config's. A name the catalog does not know is not taken for one."""
    key = BROKER_CONFIGS.get(listener_base(name) if name.startswith(LISTENER_PREFIX) else name)
    return key is not None and key.sensitive


def pythonic_name(kafka_name: str) -> str:
    """``log.retention.ms`` -> ``log_retention_ms``."""
    return kafka_name.replace(".", "_").replace("-", "_").lower()


__all__ = [
    "BROKER_CONFIGS",
    "BROKER_SYNONYMS",
    "LISTENER_PREFIX",
    "TOPIC_CONFIGS",
    "TOPIC_SYNONYMS",
    "is_sensitive",
    "listener_base",
]
