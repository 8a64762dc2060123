"""The transaction coordinator's two periodic checks: the abort of transactions open longer than their
timeout (Kafka's TransactionCoordinator.abortTimedOutTransactions) and the removal of transactional ids
idle for `transactional.id.expiration.ms` (TransactionStateManager.removeExpiredTransactionalIds).

Neither check waits for what it starts: each abort runs in the background through the completion
(txn_completion.py), the expired ids' tombstones are written at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from odradek.config.broker import BrokerConfig
from odradek.coordinator.txn_completion import TxnCompletion
from odradek.coordinator.txn_metadata import TransactionMetadata
from odradek.coordinator.txn_state_log import TxnStateLog
from odradek.protocol.error_codes import KafkaError

log = logging.getLogger("odradek.coordinator.transactions")


class TxnExpiry:
    def __init__(self, config: BrokerConfig, state_log: TxnStateLog, completion: TxnCompletion) -> None:
        self.config = config
        self.state_log = state_log
        self.completion = completion
        self._tasks: list[asyncio.Task[None]] = []
        #: Aborts of timed-out transactions the periodic check started, by transactional id.
        self._aborts: dict[str, asyncio.Task[None]] = {}

    def start(self) -> None:
        """Start both checks, each at its interval."""
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(
                self._every(
                    self.config.transaction_abort_timed_out_transaction_cleanup_interval_ms,
                    self.abort_timed_out,
                )
            ),
            loop.create_task(
                self._every(
                    self.config.transaction_remove_expired_transaction_cleanup_interval_ms,
                    self.remove_expired,
                )
            ),
        ]

    def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        self._tasks = []
        for abort in self._aborts.values():
            abort.cancel()

    async def _every(self, interval_ms: int, job: Callable[[], Awaitable[None]]) -> None:
        while True:
            await asyncio.sleep(interval_ms / 1000)
            try:
                await job()
            except Exception:
                log.exception("transaction coordinator housekeeping failed")

    async def abort_timed_out(self) -> None:
        """Proactive aborts of transactions open longer than their timeout, each in the background (as
        Kafka's abortTimedOutTransactions, the check waits for none of them); prepared ones whose
        completion is not under way are handed over again."""
        now = self.state_log.now_ms()
        for metadata in list(self.state_log.txns.values()):
            transactional_id = metadata.transactional_id
            if transactional_id in self.state_log.writing or transactional_id in self._aborts:
                continue  # a write of it still waits for the ISR
            if metadata.timed_out(now):
                log.info(
                    "aborting transaction of %s: open longer than %d ms",
                    transactional_id,
                    metadata.timeout_ms,
                )
                task = asyncio.get_running_loop().create_task(self._abort_timed_out(metadata))
                self._aborts[transactional_id] = task
            elif metadata.state.is_prepared:
                self.completion.send_markers(metadata)

    async def _abort_timed_out(self, metadata: TransactionMetadata) -> None:
        try:
            await self.completion.abort_fencing(metadata)
        except KafkaError as error:
            log.warning("aborting %s failed: %s", metadata.transactional_id, error)
        finally:
            del self._aborts[metadata.transactional_id]

    async def remove_expired(self) -> None:
        """Forget transactional ids idle for `transactional.id.expiration.ms` (a tombstone each, all
        written at once: one waiting for its ISR holds no other)."""
        now = self.state_log.now_ms()
        expired = [m.transactional_id for m in self.state_log.txns.values() if self._expired(m, now)]
        await asyncio.gather(*(self._remove(transactional_id, now) for transactional_id in expired))

    def _expired(self, metadata: TransactionMetadata, now: int) -> bool:
        idle_ms = now - metadata.last_update_ms
        return metadata.state.is_complete and idle_ms >= self.config.transactional_id_expiration_ms

    async def _remove(self, transactional_id: str, now: int) -> None:
        metadata = self.state_log.txns.get(transactional_id)
        # Checked again where the tombstone is appended (nothing awaited in between): a step may have
        # used the id since it was listed.
        if metadata is None or not self._expired(metadata, now):
            return
        try:
            await self.state_log.write(transactional_id, None)
        except KafkaError as error:
            log.warning("expiring %s failed: %s", transactional_id, error)
