"""Topic deletion racing the broker's periodic jobs, on an in-process broker.

- A topic deleted while the cleaner compacts one of its partitions (in a worker thread): the cleaning
  is dropped quietly, as Kafka aborts it, and the other partitions of the same cleaner run are still
  compacted. It used to fail the whole run with a logged traceback (FileNotFoundError: the directory
  had been renamed).
- A retention check while a deletion's renames are under way in a worker thread: it must not run the
  same deletion job a second time at once.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import odradek.storage.cleaner
from odradek.config.broker import BrokerConfig
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.create_topics import CreatableTopic, CreatableTopicConfig, CreateTopicsRequest
from odradek.protocol.messages.delete_topics import DeleteTopicsRequest
from odradek.server.broker import Broker
from odradek.storage.cleaner import CleaningPlan, CleaningResult
from tests.support.interop import wait_until
from tests.support.raw_client import RawClient
from tests.unit.storage.helpers import START_MS, batch

pytestmark = pytest.mark.timeout(60)

COMPACTED = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01", "segment.ms": "1"}
BATCHES = 10


def test_deleting_a_topic_while_it_is_compacted_skips_it_quietly_and_cleans_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    holding, release = threading.Event(), threading.Event()
    real_run_cleaning = odradek.storage.cleaner.run_cleaning

    def gated_run_cleaning(plan: CleaningPlan) -> CleaningResult:
        if plan.directory.name == "deleted-0":  # hold its cleaning until the topic is gone
            holding.set()
            release.wait(20)
        return real_run_cleaning(plan)

    monkeypatch.setattr(odradek.storage.cleaner, "run_cleaning", gated_run_cleaning)

    async def scenario() -> None:
        broker = Broker(_config(tmp_path))
        await broker.start()
        try:
            port = broker.bound["PLAINTEXT"][1]
            with RawClient(port) as client:
                for name in ("deleted", "kept"):
                    assert await asyncio.to_thread(_create, client, name) == ErrorCode.NONE
                for name in ("deleted", "kept"):
                    log = broker.logs.get_log(name, 0)
                    assert log is not None
                    for i in range(BATCHES):  # one segment each (segment.ms=1, timestamps a second apart)
                        log.append(
                            batch([(b"key-%d" % (i % 2), b"value-%d" % i)], timestamp=START_MS + i * 1000)
                        )
                kept = broker.logs.get_log("kept", 0)
                assert kept is not None and len(kept.segments) == BATCHES
                assert await asyncio.to_thread(holding.wait, 20), "the cleaner never started"
                assert (await asyncio.to_thread(_delete, client, "deleted")).error_code == ErrorCode.NONE
                release.set()
                await asyncio.to_thread(
                    wait_until, lambda: len(kept.segments) < BATCHES, 10, "the other topic's compaction"
                )
        finally:
            release.set()
            await broker.stop()

    with caplog.at_level(logging.WARNING):
        asyncio.run(scenario())
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


def test_a_retention_check_during_a_slow_deletion_does_not_run_it_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    real_rename = os.rename
    slowed: list[str] = []

    def slow_rename(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
        if Path(source).name == "orders-0" and not slowed:
            slowed.append(str(source))
            time.sleep(0.5)  # a slow disk: several retention checks pass meanwhile
        real_rename(source, target)

    async def scenario() -> None:
        broker = Broker(_config(tmp_path, {"log.retention.check.interval.ms": "20", "num.partitions": "2"}))
        await broker.start()
        try:
            port = broker.bound["PLAINTEXT"][1]
            with RawClient(port) as client:
                assert await asyncio.to_thread(_create, client, "orders") == ErrorCode.NONE
                monkeypatch.setattr(os, "rename", slow_rename)
                assert (await asyncio.to_thread(_delete, client, "orders")).error_code == ErrorCode.NONE
                monkeypatch.undo()
                assert not broker.logs.deletions.is_topic_being_deleted("orders")
        finally:
            await broker.stop()

    with caplog.at_level(logging.WARNING):
        asyncio.run(scenario())
    assert slowed
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert not [p for p in (tmp_path / "data").iterdir() if p.name.startswith("orders")]


def _config(tmp_path: Path, overrides: dict[str, str] | None = None) -> BrokerConfig:
    return BrokerConfig(
        {
            "node.id": "1",
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "log.dirs": str(tmp_path / "data"),
            "log.cleaner.backoff.ms": "50",
            **(overrides or {}),
        },
        warn_unknown=False,
    )


def _create(client: RawClient, name: str) -> int:
    configs = [CreatableTopicConfig(name=k, value=v) for k, v in COMPACTED.items()]
    topic = CreatableTopic(name=name, num_partitions=1, replication_factor=1, configs=configs)
    return int(client.request(CreateTopicsRequest(topics=[topic], timeout_ms=10_000), 7).topics[0].error_code)


def _delete(client: RawClient, name: str) -> Any:
    return client.request(DeleteTopicsRequest(topic_names=[name], timeout_ms=10_000), 5).responses[0]
