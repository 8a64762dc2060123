"""replica.alter.log.dirs.io.max.bytes.per.second (Kafka's alter-log-dirs ReplicationQuotaManager, the
throttle of its ReplicaAlterLogDirsThread): a move between log dirs copies at most that many bytes per
second, measured over alter.log.dirs.replication.quota.window.*; set statically, per broker or as the
cluster default at run time. It was refused unless left unlimited."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from odradek.cluster.replication.replication_quota import ReplicationQuota, ReplicationQuotas
from odradek.config.broker import BrokerConfig
from odradek.config.catalog import BROKER_CONFIGS
from odradek.config.types import DynamicUpdateMode
from odradek.server.log_dir_moves import STEP_BYTES, run_log_dir_moves
from odradek.storage.config import LogConfig
from odradek.storage.log_manager import LogManager
from tests.unit.storage.helpers import FakeClock, batch

pytestmark = pytest.mark.timeout(60)

RATE = "replica.alter.log.dirs.io.max.bytes.per.second"
#: Bytes per second in the throttled test: the 3 MiB log needs 2 of its 1 MiB steps to wait for it.
BYTES_PER_SECOND = 100_000


class SimulatedTime:
    """Milliseconds that pass only while the move waits for its quota."""

    def __init__(self) -> None:
        self.now_ms = 0
        self.waited_ms = 0

    def clock(self) -> int:
        return self.now_ms

    async def wait(self, seconds: float) -> None:
        self.now_ms += int(seconds * 1000)
        self.waited_ms += int(seconds * 1000)
        await asyncio.sleep(0)


def _moving(tmp_path: Path) -> tuple[LogManager, int]:
    """A 3 MiB log in d1 with its future log made in d2; returns the bytes to copy."""
    manager = LogManager([tmp_path / "d1", tmp_path / "d2"], LogConfig(), clock=FakeClock())
    manager.startup()
    log = manager.get_or_create_log("t", 0)
    for _ in range(30):
        log.append(batch([bytes(100 * 1024)]))
    log.roll()
    assert manager.moves.install_future_log(manager.moves.create_future_log("t", 0, tmp_path / "d2")) is None
    return manager, log.size_in_bytes


async def _move(manager: LogManager, quota: ReplicationQuota, time: SimulatedTime) -> None:
    task = asyncio.create_task(
        run_log_dir_moves(manager, quota=quota, backoff_s=1.0, clock_ms=time.clock, wait=time.wait)
    )
    try:
        async with asyncio.timeout(30):
            while manager.future_logs:
                await asyncio.sleep(0.01)
    finally:
        task.cancel()


def _quota(configs: dict[str, str]) -> ReplicationQuota:
    config = BrokerConfig(configs)
    return ReplicationQuotas.of(1, lambda: config).alter_log_dirs


def test_a_move_between_log_dirs_is_paced_by_the_alter_log_dirs_rate(tmp_path: Path) -> None:
    manager, size = _moving(tmp_path)
    assert size > 2 * STEP_BYTES
    time = SimulatedTime()
    quota = _quota({RATE: str(BYTES_PER_SECOND)})

    asyncio.run(_move(manager, quota, time))

    moved = manager.get_log("t", 0)
    assert moved is not None and moved.dir.parent == tmp_path / "d2"
    assert quota.bytes_total == size
    # a step starts only while the rate is within the bound: all but the last step's bytes took at
    # least their time at the rate
    assert time.waited_ms >= (size - STEP_BYTES) * 1000 // BYTES_PER_SECOND, time.waited_ms


def test_an_unlimited_rate_never_holds_a_move_back(tmp_path: Path) -> None:
    manager, size = _moving(tmp_path)
    time = SimulatedTime()
    quota = _quota({})

    asyncio.run(_move(manager, quota, time))

    assert time.waited_ms == 0
    assert quota.bytes_total == size


def test_the_rate_and_its_windows_are_accepted_and_the_rate_changes_at_run_time() -> None:
    assert BROKER_CONFIGS[RATE].dynamic is DynamicUpdateMode.CLUSTER_WIDE
    config = BrokerConfig(
        {
            RATE: "1000",
            "alter.log.dirs.replication.quota.window.num": "5",
            "alter.log.dirs.replication.quota.window.size.seconds": "2",
        }
    )
    live = [config]
    quota = ReplicationQuotas.of(1, lambda: live[0]).alter_log_dirs
    assert quota.upper_bound == 1000
    live[0] = config.with_dynamic({RATE: "300"}, {RATE: "200"})  # the broker's own over the default
    assert quota.upper_bound == 200
    live[0] = config.with_dynamic({RATE: "300"}, {})
    assert quota.upper_bound == 300
