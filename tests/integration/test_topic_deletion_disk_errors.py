"""DeleteTopics against a failing disk, on an in-process broker: a file operation that fails inside the
request is that topic's KAFKA_STORAGE_ERROR (the connection stays), the topic is never left half
deleted, and the file work of a deletion or of AlterConfigs runs in worker threads, not on the event
loop.

Failures are injected by replacing ``os.rename`` or the topic store's atomic write (the tests run as
root, so permissions cannot make them fail).
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

import odradek.storage.topic_store
from odradek.config.broker import BrokerConfig
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from odradek.protocol.messages.delete_topics import DeleteTopicsRequest
from odradek.protocol.messages.incremental_alter_configs import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from odradek.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from odradek.server.broker import Broker
from tests.support.interop import wait_until
from tests.support.raw_client import RawClient

pytestmark = pytest.mark.timeout(60)


def test_delete_with_a_failing_topic_store_answers_storage_error_and_keeps_the_topic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        async with _broker(tmp_path) as broker:
            port = broker.bound["PLAINTEXT"][1]
            with RawClient(port) as client:
                assert await asyncio.to_thread(_create, client, "orders") == ErrorCode.NONE

                def failing_write(*args: Any, **kwargs: Any) -> None:
                    raise PermissionError(13, "Permission denied")

                monkeypatch.setattr(odradek.storage.topic_store, "atomic_write", failing_write)
                result = await asyncio.to_thread(_delete, client, "orders")
                monkeypatch.undo()
                # The same connection is still served, and the topic is whole.
                metadata = await asyncio.to_thread(_metadata, client, "orders")
            assert (result.error_code, result.name) == (ErrorCode.KAFKA_STORAGE_ERROR, "orders")
            # the operating system's reason is the broker's log line, not the client's (issue #25)
            assert result.error_message is None
            assert any("Permission denied" in r.getMessage() for r in caplog.records)
            assert metadata.error_code == ErrorCode.NONE and len(metadata.partitions) == 2
            data = broker.logs.log_dirs[0]
            assert sorted(p.name for p in data.iterdir() if p.name.startswith("orders")) == [
                "orders-0",
                "orders-1",
            ]
            assert broker.logs.get_log("orders", 1) is not None
            assert "orders" in broker.logs.topic_store.load_topics()

    asyncio.run(scenario())


def test_a_rename_failing_in_one_log_dir_takes_it_offline_and_the_name_waits_for_the_next_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As Kafka's renameDir (under maybeHandleIOException): a deletion's rename failing is its log dir
    failing, which goes offline while the broker serves the other; the topic stays marked for deletion
    until the next start finishes it there. It was retried at every retention check, the dir online."""
    dirs = {"log.dirs": f"{tmp_path / 'd1'},{tmp_path / 'd2'}", "log.retention.check.interval.ms": "100"}

    async def failing() -> Path:
        async with _broker(tmp_path, dirs) as broker:
            port = broker.bound["PLAINTEXT"][1]
            with RawClient(port) as client:
                assert await asyncio.to_thread(_create, client, "orders") == ErrorCode.NONE
                second = broker.logs.get_log("orders", 1)
                first = broker.logs.get_log("orders", 0)
                assert second is not None and first is not None and first.dir.parent != second.dir.parent
                failed_dir = second.dir.parent
                _fail_renames(monkeypatch, lambda source: source.parent == failed_dir)
                deleted = await asyncio.to_thread(_delete, client, "orders")
                await asyncio.to_thread(
                    wait_until, lambda: broker.logs.live_log_dirs == [first.dir.parent], 10, "the dir offline"
                )
                again = await asyncio.to_thread(_create_result, client, "orders")
                other = await asyncio.to_thread(_create, client, "other")
                monkeypatch.undo()
            # The deletion is committed (marked durably) before the renames: it answers success.
            assert deleted.error_code == ErrorCode.NONE
            assert (again.error_code, again.error_message) == (
                ErrorCode.TOPIC_ALREADY_EXISTS,
                "Topic 'orders' is marked for deletion.",
            )
            assert other == ErrorCode.NONE
            return failed_dir

    async def restarted(failed_dir: Path) -> None:
        async with _broker(tmp_path, dirs) as broker:
            assert broker.logs.offline_log_dirs == []
            assert not (failed_dir / "orders-1").exists()
            with RawClient(broker.bound["PLAINTEXT"][1]) as client:
                assert await asyncio.to_thread(_create, client, "orders") == ErrorCode.NONE
            log = broker.logs.get_log("orders", 1)
            assert log is not None and log.log_end_offset == 0

    asyncio.run(restarted(asyncio.run(failing())))


def test_topic_deletion_renames_directories_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[bool] = []

    def on_main_thread(source: Path) -> bool:
        threads.append(threading.current_thread() is threading.main_thread())
        return False

    async def scenario() -> None:
        async with _broker(tmp_path) as broker:
            port = broker.bound["PLAINTEXT"][1]
            with RawClient(port) as client:
                assert await asyncio.to_thread(_create, client, "orders") == ErrorCode.NONE
                _fail_renames(
                    monkeypatch, lambda source: source.name.startswith("orders-") and on_main_thread(source)
                )
                assert (await asyncio.to_thread(_delete, client, "orders")).error_code == ErrorCode.NONE
                monkeypatch.undo()

    asyncio.run(scenario())
    assert threads == [False, False]


def test_alter_configs_writes_the_topic_store_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[bool] = []
    real_write = odradek.storage.topic_store.atomic_write

    def recording_write(*args: Any, **kwargs: Any) -> None:
        threads.append(threading.current_thread() is threading.main_thread())
        real_write(*args, **kwargs)

    async def scenario() -> None:
        async with _broker(tmp_path) as broker:
            port = broker.bound["PLAINTEXT"][1]
            with RawClient(port) as client:
                assert await asyncio.to_thread(_create, client, "orders") == ErrorCode.NONE
                monkeypatch.setattr(odradek.storage.topic_store, "atomic_write", recording_write)
                answer = await asyncio.to_thread(_set_retention, client, "orders", 1234)
                assert (await asyncio.to_thread(_delete, client, "orders")).error_code == ErrorCode.NONE
                monkeypatch.undo()
            assert answer.error_code == ErrorCode.NONE

    asyncio.run(scenario())
    assert threads == [False, False, False]  # the new configs, the deletion's mark, its removal


# ----- helpers ---------------------------------------------------------------------------------------


@asynccontextmanager
async def _broker(tmp_path: Path, overrides: dict[str, str] | None = None) -> AsyncIterator[Broker]:
    config = BrokerConfig(
        {
            "node.id": "1",
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "log.dirs": str(tmp_path / "data"),
            "num.partitions": "2",
            **(overrides or {}),
        },
        warn_unknown=False,
    )
    broker = Broker(config)
    await broker.start()
    try:
        yield broker
    finally:
        await broker.stop()


def _fail_renames(monkeypatch: pytest.MonkeyPatch, failing: Callable[[Path], bool]) -> None:
    real_rename = os.rename

    def rename(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
        if failing(Path(source)):
            raise PermissionError(13, "Permission denied", str(source))
        real_rename(source, target)

    monkeypatch.setattr(os, "rename", rename)


def _create_result(client: RawClient, name: str) -> Any:
    request = CreateTopicsRequest(
        topics=[CreatableTopic(name=name, num_partitions=2, replication_factor=1)], timeout_ms=10_000
    )
    return client.request(request, 7).topics[0]


def _create(client: RawClient, name: str) -> int:
    return int(_create_result(client, name).error_code)


def _delete(client: RawClient, name: str) -> Any:
    return client.request(DeleteTopicsRequest(topic_names=[name], timeout_ms=10_000), 5).responses[0]


def _set_retention(client: RawClient, name: str, retention_ms: int) -> Any:
    change = AlterableConfig(name="retention.ms", config_operation=0, value=str(retention_ms))
    resource = AlterConfigsResource(resource_type=2, resource_name=name, configs=[change])
    request = IncrementalAlterConfigsRequest(resources=[resource], validate_only=False)
    return client.request(request, 1).responses[0]


def _metadata(client: RawClient, name: str, *, auto_create: bool = False) -> Any:
    request = MetadataRequest(topics=[MetadataRequestTopic(name=name)], allow_auto_topic_creation=auto_create)
    return client.request(request, 12).topics[0]
