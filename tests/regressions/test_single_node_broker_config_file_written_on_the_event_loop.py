"""On a single node an AlterConfigs or IncrementalAlterConfigs of a broker's dynamic configs wrote the
config file (write, fsync, rename, fsync of the directory) on the event loop itself: on a slow disk
every connection of the broker waited for that fsync. The layers in memory also changed before the
write, so a failed write still changed what DescribeConfigs answered. The file is now written from a
worker thread, one change at a time, and the layers change once it is written.

Instead of timing, a stand-in for the file write records the thread it runs on, or fails.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from odradek.cluster.dynamic_configs import DynamicBrokerConfigs
from odradek.cluster.metadata import broker_configs
from odradek.cluster.metadata.broker_configs import LocalBrokerConfigs, LocalBrokerConfigStore
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.incremental_alter_configs import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from odradek.storage.files import atomic_write
from tests.support.handler_services import HandlerBroker

BROKER = 4
SET = 0


def _set_retention(broker: HandlerBroker, retention_ms: str) -> int:
    request = IncrementalAlterConfigsRequest(
        resources=[
            AlterConfigsResource(
                resource_type=BROKER,
                resource_name="",
                configs=[AlterableConfig(name="log.retention.ms", config_operation=SET, value=retention_ms)],
            )
        ],
        validate_only=False,
    )
    response = asyncio.run(broker.call(request, 1))
    return response.responses[0].error_code


@pytest.fixture
def broker(tmp_path: Path) -> HandlerBroker:
    broker = HandlerBroker(tmp_path / "data")
    node_id = broker.services.node_id
    layer_file = LocalBrokerConfigStore(tmp_path / "data", node_id)
    dynamic = DynamicBrokerConfigs(node_id, broker.config, layer_file)
    broker.keep_broker_configs(dynamic, LocalBrokerConfigs(dynamic))
    yield broker  # type: ignore[misc]
    broker.close()


def test_a_single_nodes_broker_config_change_is_written_off_the_event_loop(
    broker: HandlerBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[int] = []

    def recorded(path: Path, payload: bytes, mode: int) -> None:
        threads.append(threading.get_ident())
        atomic_write(path, payload, mode=mode)

    monkeypatch.setattr(broker_configs, "atomic_write", recorded)
    assert _set_retention(broker, "3600000") == ErrorCode.NONE
    assert threads and threading.get_ident() not in threads
    assert broker.services.config.log_retention_ms == 3600000


def test_a_broker_config_change_that_cannot_be_written_changes_nothing(
    broker: HandlerBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(path: Path, payload: bytes, mode: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(broker_configs, "atomic_write", failing)
    assert _set_retention(broker, "3600000") != ErrorCode.NONE
    dynamic = broker.services.dynamic_configs
    assert dynamic is not None and dynamic.cluster_default == {}


def test_two_concurrent_broker_config_changes_both_stay(broker: HandlerBroker) -> None:
    """Each IncrementalAlterConfigs is applied to the layer as it is when its turn to write comes: one
    computed from the layer while another's write was under way replaced that one's change (both
    answered NONE, the first one lost)."""

    def setting(name: str, value: str) -> IncrementalAlterConfigsRequest:
        return IncrementalAlterConfigsRequest(
            resources=[
                AlterConfigsResource(
                    resource_type=BROKER,
                    resource_name="",
                    configs=[AlterableConfig(name=name, config_operation=SET, value=value)],
                )
            ],
            validate_only=False,
        )

    async def both() -> list[int]:
        answers = await asyncio.gather(
            broker.call(setting("log.retention.ms", "3600000"), 1),
            broker.call(setting("log.retention.bytes", "1048576"), 1),
        )
        return [answer.responses[0].error_code for answer in answers]

    assert asyncio.run(both()) == [ErrorCode.NONE, ErrorCode.NONE]
    dynamic = broker.services.dynamic_configs
    assert dynamic is not None
    assert dynamic.cluster_default == {"log.retention.ms": "3600000", "log.retention.bytes": "1048576"}
    assert dynamic.stored_in is not None
    assert DynamicBrokerConfigs.load(dynamic.stored_in, BROKER, broker.config).cluster_default == (
        dynamic.cluster_default
    )
