"""Both stores of the dynamic broker configs take a layer's change the same way (`alter`) and apply the
configuration it makes through the reconfigurables registered with the layers (as Kafka's
DynamicBrokerConfig.addReconfigurable): a single node's at once, once its file is written; a cluster
member's when its change notification is read (its own write reads it at once too). No hook is
assigned after construction, and the handler has no branch per store."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from odradek.cluster.dynamic_configs import DynamicBrokerConfigs
from odradek.cluster.metadata.broker_configs import (
    LocalBrokerConfigs,
    LocalBrokerConfigStore,
    ZkBrokerConfigs,
)
from odradek.config.broker import BrokerConfig
from odradek.protocol.error_codes import KafkaError

STATIC = BrokerConfig({"node.id": "1", "log.retention.ms": "1000"}, warn_unknown=False)


def _retention(ms: str) -> dict[str, str]:
    return {"log.retention.ms": ms}


def test_a_single_nodes_change_is_written_then_applied_at_once(tmp_path: Path) -> None:
    dynamic = DynamicBrokerConfigs(1, STATIC, LocalBrokerConfigStore(tmp_path, 1))
    applied: list[BrokerConfig] = []
    dynamic.add_reconfigurable(applied.append)
    store = LocalBrokerConfigs(dynamic)
    asyncio.run(store.alter(lambda _: _retention("5000"), cluster_default=True))
    assert [config.log_retention_ms for config in applied] == [5000]
    assert DynamicBrokerConfigs.load(LocalBrokerConfigStore(tmp_path, 1), 1, STATIC).cluster_default == (
        _retention("5000")
    )


def test_a_single_nodes_validate_only_change_is_checked_but_neither_written_nor_applied(
    tmp_path: Path,
) -> None:
    dynamic = DynamicBrokerConfigs(1, STATIC, LocalBrokerConfigStore(tmp_path, 1))
    applied: list[BrokerConfig] = []
    dynamic.add_reconfigurable(applied.append)
    store = LocalBrokerConfigs(dynamic)
    seen: list[dict[str, str]] = []

    def change(current: dict[str, str]) -> dict[str, str]:
        seen.append(current)
        return _retention("5000")

    asyncio.run(store.alter(change, cluster_default=True, validate_only=True))
    assert seen == [{}] and applied == [] and dynamic.cluster_default == {}
    assert not (tmp_path / "__odradek_broker_configs.json").exists()
    store.check_storable({"listener.name.ssl.ssl.keystore.password": "secret"})  # a file may hold it


def test_a_cluster_members_change_is_applied_when_its_notification_is_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dynamic = DynamicBrokerConfigs(1, STATIC)
    applied: list[BrokerConfig] = []
    dynamic.add_reconfigurable(applied.append)
    store = ZkBrokerConfigs(None, 1, dynamic)  # type: ignore[arg-type]
    monkeypatch.setattr(store, "_read", lambda: (_retention("7000"), {}))
    asyncio.run(store.on_change("2"))  # another broker's layer: not this one's concern
    assert applied == []
    asyncio.run(store.on_change("<default>"))
    assert [config.log_retention_ms for config in applied] == [7000]
    with pytest.raises(KafkaError):
        store.check_storable({"listener.name.ssl.ssl.keystore.password": "secret"})
