"""A producer at least once, through odradek's own client: what the Spark sink writes with when its
login is one librdkafka cannot make (a delegation token, SCRAM with `tokenauth=true`).

`send()` buffers records by partition (a key's partition is the Java client's murmur2 choice, records
without a key go round the partitions); `flush()` produces them in batches of about BATCH_BYTES with
acks=all, and returns once every one is acknowledged. No idempotence: a batch asked again after a lost
answer may be written twice (at least once, as the sink promises). Errors that clear by themselves
(leaders moving) are asked again until `timeout_s`; any other is raised as RequestError, and a refused
login at once as ClientSecurityError.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence

from odradek.client.cluster import Cluster, produce_to_leader, retrying
from odradek.client.partitioner import partition_for_key
from odradek.client.security import PLAINTEXT, ClientSecurity
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.records import RecordBatchBuilder, RecordHeader

E = ErrorCode
BATCH_BYTES = 1 << 20
#: Buffered bytes that make `send()` flush: a task's rows are not all held in memory.
FLUSH_BYTES = 16 << 20
Record = tuple[int, bytes | None, bytes | None, list[RecordHeader]]


class Producer:
    def __init__(self, bootstrap: str, timeout_s: float = 60.0, security: ClientSecurity = PLAINTEXT) -> None:
        self.timeout_s = timeout_s
        self.cluster = Cluster(bootstrap, timeout_s, security)
        self._pending: dict[tuple[str, int], list[Record]] = {}
        self._pending_bytes = 0
        self._partition_counts: dict[str, int] = {}
        self._unkeyed = itertools.count()

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.cluster.close()

    def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        partition: int | None = None,
        headers: Sequence[RecordHeader] = (),
    ) -> None:
        if partition is None or partition < 0:
            count = self._partitions(topic)
            partition = partition_for_key(key, count) if key is not None else next(self._unkeyed) % count
        record = (int(time.time() * 1000), key, value, list(headers))
        self._pending.setdefault((topic, partition), []).append(record)
        self._pending_bytes += len(key or b"") + len(value or b"") + 16
        if self._pending_bytes >= FLUSH_BYTES:
            self.flush()

    def flush(self) -> None:
        """Every record sent so far in its partition's log, acknowledged by all in-sync replicas."""
        partitions = sorted(self._pending)
        if partitions:
            response = self.cluster.metadata(sorted({t for t, _ in partitions}))
            leaders = {
                (t.name, p.partition_index): p.leader_id for t in response.topics for p in t.partitions
            }
            for tp in partitions:
                for batch in _batches(self._pending[tp]):
                    self._produce(tp, batch, leaders.get(tp, -1))
        self._pending.clear()
        self._pending_bytes = 0

    def _partitions(self, topic: str) -> int:
        if topic not in self._partition_counts:

            def attempt() -> tuple[ErrorCode, int]:
                found = self.cluster.metadata([topic]).topics[0]
                return ErrorCode(found.error_code), len(found.partitions)

            self._partition_counts[topic] = (
                retrying(self.cluster, f"Metadata for {topic}", self.timeout_s, attempt) or 0
            )
        return self._partition_counts[topic]

    def _produce(self, tp: tuple[str, int], batch: bytes, leader: int) -> None:
        produce_to_leader(self.cluster, tp, batch, leader, self.timeout_s)


def _batches(records: list[Record]) -> list[bytes]:
    batches: list[bytes] = []
    builder: RecordBatchBuilder | None = None
    for timestamp, key, value, headers in records:
        if builder is None:
            builder = RecordBatchBuilder(0)
        builder.append(timestamp, key, value, headers)
        if builder.estimated_size >= BATCH_BYTES:
            batches.append(builder.build())
            builder = None
    if builder is not None:
        batches.append(builder.build())
    return batches
