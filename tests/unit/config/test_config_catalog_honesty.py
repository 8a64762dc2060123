"""Every setting is real or refused: a catalog key nothing in the code reads must be marked, either
refused (odradek cannot honour it yet) or inert (it has nothing to act on), with the reason served by
DescribeConfigs. Adding an accepted config that nothing reads fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from odradek.config.catalog import BROKER_CONFIGS, TOPIC_CONFIGS, TOPIC_SYNONYMS, pythonic_name
from odradek.config.types import ConfigKey

SRC = Path(__file__).resolve().parents[3] / "src" / "odradek"
# Where configs are declared, not read: the catalog modules and the typed-attribute declarations.
DECLARATIONS = {"broker_settings.py", "topic_catalog.py"}


def _sources() -> list[str]:
    texts = []
    for path in sorted(SRC.rglob("*.py")):
        if path.parent.name == "config" and (path.name.startswith("catalog") or path.name in DECLARATIONS):
            continue
        lines = path.read_text("utf-8").splitlines()
        texts.append("\n".join(line for line in lines if "= Setting[" not in line))
    return texts


SOURCES = _sources()


def _is_read(name: str) -> bool:
    """Its typed attribute (config.log_retention_ms) or its Kafka name is used somewhere in src."""
    attribute = re.compile(rf"\.{pythonic_name(name)}\b")
    return any(attribute.search(text) or f'"{name}"' in text for text in SOURCES)


def _stands_for_a_read_topic_config(name: str) -> bool:
    """A broker default of a topic config (log.segment.bytes for segment.bytes) acts through it."""
    return any(
        any(synonym.name == name for synonym in chain) and _is_read(topic) and not TOPIC_CONFIGS[topic].inert
        for topic, chain in TOPIC_SYNONYMS.items()
    )


def _accepted(catalog: dict[str, ConfigKey]) -> list[str]:
    return sorted(name for name, key in catalog.items() if not key.refused and not key.inert)


@pytest.mark.parametrize("name", _accepted(TOPIC_CONFIGS))
def test_every_accepted_topic_config_is_read_by_the_code(name: str) -> None:
    assert _is_read(name), f"{name} is accepted but nothing reads it: build it, or mark it refused or inert"


@pytest.mark.parametrize("name", _accepted(BROKER_CONFIGS))
def test_every_accepted_broker_config_is_read_by_the_code(name: str) -> None:
    assert _is_read(name) or _stands_for_a_read_topic_config(name), (
        f"{name} is accepted but nothing reads it: build it, or mark it refused or inert"
    )


def test_a_config_nothing_reads_is_caught() -> None:
    assert not _is_read("log.cleaner.io.max.bytes.per.second")
    assert _is_read("log.cleaner.enable") and _stands_for_a_read_topic_config("log.segment.bytes")


@pytest.mark.parametrize("key", [*BROKER_CONFIGS.values(), *TOPIC_CONFIGS.values()], ids=lambda key: key.name)
def test_refused_and_inert_configs_say_why_in_their_documentation(key: ConfigKey) -> None:
    reason = key.refused or key.inert or key.cluster_only
    if reason:
        assert key.documentation.startswith(key.doc)
        assert key.documentation.endswith(reason)
    else:
        assert key.documentation == key.doc


def _inert_for_a_single_node(key: ConfigKey) -> bool:
    return "single node" in key.inert or "single-node" in key.inert


@pytest.mark.parametrize("key", [*BROKER_CONFIGS.values(), *TOPIC_CONFIGS.values()], ids=lambda key: key.name)
def test_no_config_is_called_inert_for_being_on_a_single_node(key: ConfigKey) -> None:
    """A cluster has replicas, a controller and other brokers: a config inert only on a single node is
    cluster-only (real with zookeeper.connect, and read by the code), never inert everywhere."""
    assert not _inert_for_a_single_node(key), f"{key.name}: mark it cluster_only and act on it in a cluster"


@pytest.mark.parametrize(
    "name",
    sorted(
        [
            "controller.socket.timeout.ms",
            "inter.broker.protocol.version",
            "offsets.topic.replication.factor",
            "replica.high.watermark.checkpoint.interval.ms",
            "request.timeout.ms",
            "unclean.leader.election.enable",
        ]
    ),
)
def test_configs_that_were_inert_on_a_single_node_are_real_in_a_cluster(name: str) -> None:
    key = BROKER_CONFIGS[name]
    assert key.cluster_only and not key.inert and not key.refused
    assert "Without zookeeper.connect it has no effect" in key.documentation
    assert _is_read(name)


def test_a_topic_s_unclean_leader_election_is_real_in_a_cluster() -> None:
    key = TOPIC_CONFIGS["unclean.leader.election.enable"]
    assert key.cluster_only and not key.inert
