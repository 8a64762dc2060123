"""Dynamic broker configs that AlterConfigs accepted but the broker kept reading from its start-up
configuration now apply at once, on a single node and in a cluster alike (both reconfigure through
handlers/_common/config_alteration.reconfigure): producer.id.expiration.ms reaches every log's producer state,
transaction.partition.verification.enable the local transaction coordinator, and the background jobs'
intervals (log.cleaner.backoff.ms) are read again before each wait."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace

from odradek.config.broker import BrokerConfig
from odradek.handlers._common.config_alteration import reconfigure
from odradek.server.jobs import every
from tests.support.handler_services import HandlerBroker


def test_producer_id_expiration_ms_changed_at_run_time_reaches_every_log(tmp_path: Path) -> None:
    async def main() -> None:
        broker = HandlerBroker(tmp_path)
        await broker.create_topic("before")
        reconfigure(broker.services, broker.config.with_dynamic({"producer.id.expiration.ms": "1000"}, {}))
        await broker.create_topic("after")
        for topic in ("before", "after"):
            assert broker.log(topic).producer_state.producer_id_expiration_ms == 1000

    asyncio.run(main())


def test_transaction_partition_verification_enable_changed_at_run_time_reaches_the_coordinator(
    tmp_path: Path,
) -> None:
    broker = HandlerBroker(tmp_path)
    coordinator = SimpleNamespace(config=broker.config)
    broker.services.transactions = coordinator  # type: ignore[assignment]
    changed = broker.config.with_dynamic({"transaction.partition.verification.enable": "false"}, {})
    reconfigure(broker.services, changed)
    assert coordinator.config.transaction_partition_verification_enable is False


def test_a_background_job_s_interval_is_read_again_before_each_wait() -> None:
    async def main() -> None:
        configs = [BrokerConfig({"log.cleaner.backoff.ms": "10"}, warn_unknown=False)]
        runs: list[float] = []

        async def job() -> None:
            runs.append(asyncio.get_running_loop().time())

        task = every(lambda: configs[0], "log.cleaner.backoff.ms", job)
        try:
            while len(runs) < 3:
                await asyncio.sleep(0.01)
            configs[0] = configs[0].with_dynamic({"log.cleaner.backoff.ms": "60000"}, {})
            await asyncio.sleep(0.2)  # one more run at most: the wait under way when it changed
            settled = len(runs)
            await asyncio.sleep(0.3)
            assert len(runs) == settled
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    asyncio.run(main())
