"""On a single node each AlterClientQuotas wrote the quota file from a worker thread of the event loop's
default executor, and the writes go one at a time (a lock in the store): on a slow disk every write
waiting its turn held a worker thread blocked on that lock. Enough AlterClientQuotas at once (one per
admin connection) took every worker, and every other piece of the broker's file work that runs in one
(creating a topic's partitions, flushes, checkpoints, retention deletes, the ACL and SCRAM files) waited
behind the quota writes. The writes now wait their turn on the event loop, holding no thread.

Instead of timing, a stand-in for the file write holds the first write (a very slow disk).
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from odradek.cluster.metadata import client_quotas as quota_store
from odradek.config.broker import BrokerConfig
from odradek.security.quota_entities import QuotaEntity
from odradek.server.broker import Broker
from odradek.storage.files import atomic_write

pytestmark = pytest.mark.timeout(120)

#: More than the default executor's workers on any machine (at most 32).
WRITES = 40


def test_quota_writes_waiting_their_turn_leave_the_worker_threads_to_other_file_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asyncio.run(_scenario(tmp_path, monkeypatch))


async def _scenario(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = BrokerConfig(
        {"node.id": "1", "listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path / "data")},
        warn_unknown=False,
    )
    broker = Broker(config)
    await broker.start()
    disk = threading.Event()

    def slow_write(path: Path, payload: bytes, mode: int) -> None:
        disk.wait(60)
        atomic_write(path, payload, mode=mode)

    monkeypatch.setattr(quota_store, "atomic_write", slow_write)
    try:
        assert broker.services is not None
        storage = broker.services.client_quotas.store
        assert storage is not None
        writes = [
            asyncio.ensure_future(
                storage.write(QuotaEntity(user=f"user-{n}"), {"producer_byte_rate": 1024.0})
            )
            for n in range(WRITES)
        ]
        await asyncio.sleep(0)  # every write under way
        # other file work still gets a worker thread while the quota writes wait for the disk
        assert await asyncio.wait_for(asyncio.to_thread(lambda: "served"), 20) == "served"
        disk.set()
        await asyncio.gather(*writes)
    finally:
        disk.set()
        await broker.stop()
    stored = quota_store.LocalQuotaStore(tmp_path / "data").load()
    assert len(stored) == WRITES
