"""A broker configured without node.id (nor broker.id) ran as broker -1, which no client can use. It now
runs as the id kept in meta.properties, 1 on a first start, and advertises itself under that id."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from odradek.config.broker import BrokerConfig
from odradek.protocol.messages.metadata import MetadataRequest
from odradek.server.broker import Broker
from odradek.storage.checkpoints import read_meta_properties
from odradek.storage.errors import LogStorageError
from tests.support.raw_client import RawClient

pytestmark = pytest.mark.timeout(60)

CLUSTER_ID = "S5bu8IuPSOGSnaHANeXdhg"
OTHER_ID = "OhdgkberTqCuL6j4HqlWeA"


def _config(data: Path, **extra: str) -> BrokerConfig:
    settings = {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(data), **extra}
    return BrokerConfig({**settings, "offsets.topic.num.partitions": "1"}, warn_unknown=False)


async def _run(config: BrokerConfig) -> tuple[int, list[int], int]:
    """The broker's node id, the broker ids Metadata lists, and its controller id."""
    node_id, metadata = await _metadata(config)
    return node_id, [b.node_id for b in metadata.brokers], metadata.controller_id


async def _metadata(config: BrokerConfig) -> tuple[int, Any]:
    """The node id of a broker started with `config` (then stopped), and its Metadata response."""
    broker = Broker(config)
    await broker.start()
    try:
        port = broker.bound["PLAINTEXT"][1]
        with RawClient(port, timeout=5) as client:
            metadata = await asyncio.to_thread(client.request, MetadataRequest(topics=[]), 12)
    finally:
        await broker.stop()
    return broker.node_id, metadata


def test_broker_without_node_id_runs_as_1_and_keeps_it_in_meta_properties(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert asyncio.run(_run(_config(data))) == (1, [1], 1)
    meta = read_meta_properties(data)
    assert meta is not None and meta.node_id == 1
    assert asyncio.run(_run(_config(data))) == (1, [1], 1)


def test_broker_without_node_id_runs_as_the_id_in_meta_properties(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert asyncio.run(_run(_config(data, **{"node.id": "5"}))) == (5, [5], 5)
    assert asyncio.run(_run(_config(data))) == (5, [5], 5)


def test_configured_cluster_id_is_kept_in_meta_properties_and_served(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _, metadata = asyncio.run(_metadata(_config(data, **{"cluster.id": CLUSTER_ID})))
    assert metadata.cluster_id == CLUSTER_ID
    meta = read_meta_properties(data)
    assert meta is not None and meta.cluster_id == CLUSTER_ID
    with pytest.raises(
        LogStorageError, match=f"belongs to cluster {CLUSTER_ID} broker 1, not cluster {OTHER_ID}"
    ):
        asyncio.run(_metadata(_config(data, **{"cluster.id": OTHER_ID})))
