"""The sink's exactly-once mode (`exactlyOnce=true`): each micro-batch is written by two-phase commit
(KIP-939), through odradek's own transactional producer (odradek/client/two_phase_commit.py).

- A task writes its partition of the batch in one transaction, transactional id
  `<transactionalIdPrefix>-<task partition>` (stable across attempts and restarts), and prepares it:
  every record acknowledged by the broker, nothing committed. With the transaction it commits an
  offset for group `<transactionalIdPrefix>`, topic `spark-batches`, partition = its task partition,
  offset = batch id + 1: the marker that this partition of this batch is in Kafka, visible exactly when
  the data is. Its commit message carries the transaction (id, producer id, epoch).
- The driver's commit step commits them all (any open transaction of the prefix that no task of this
  batch wrote, an earlier attempt's, is aborted first); Spark's abort step aborts them.
- A task starts by taking its transactional id, which aborts what an earlier attempt left open (a
  crash between prepare and commit), then reads its marker: a partition already committed for this
  batch (the driver died after committing, before Spark recorded the batch) is not written again.

The tasks and the driver connect as the sink's Kafka options say: TLS and SASL (PLAIN, SCRAM) from
`kafka.security.protocol`, `kafka.ssl.*` and `kafka.sasl.*`, as the at-least-once mode's producer
(a delegation token's login, `tokenauth="true"`, included).

Nothing happens when the writer is made: Spark makes it again for the commit step, after the tasks
have prepared.

Spark replays a micro-batch from its offset log with the state of the batch before, so a replay's
partition holds the same rows as the first attempt's: rewriting an uncommitted partition, and skipping
a committed one, gives every row exactly once whatever the moment of a crash.
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import WriterCommitMessage

from odradek.client.security import ClientSecurity, client_security
from odradek.client.two_phase_commit import (
    OffsetMarker,
    PreparedTransaction,
    TwoPhaseProducer,
    committed_offset,
    finish,
    open_transactions,
)
from odradek.spark.options import SinkOptions

log = logging.getLogger("odradek.spark.exactly_once")
MARKER_TOPIC = "spark-batches"
#: Spark's local property with the running micro-batch's id (MicroBatchExecution.BATCH_ID_KEY).
BATCH_ID_PROPERTY = "streaming.sql.batchId"
NULL_TOPIC = "null topic present in the data. Use the topic option for setting a topic."
#: How long a killed task may still run: Spark's spark.python.task.killTimeout (2 s) and the delivery
#: of the kill.
KILLED_TASKS_GRACE_S = 5.0
Row = tuple[Any, Any, Any, int, Any]


@dataclass
class PreparedPartition(WriterCommitMessage):
    """What one task did: its prepared transaction (None when it had no rows, or when this partition of
    the batch was already committed by an earlier attempt) and how many rows it wrote."""

    partition: int
    count: int
    transaction: PreparedTransaction | None
    already_committed: bool = False


def transactional_id(prefix: str, partition: int) -> str:
    return f"{prefix}-{partition}"


def write_partition(
    row_source: Iterator[Row], options: SinkOptions, batch_id: int | None
) -> PreparedPartition:
    """A task's first phase, for its rows (topic, key, value, partition or -1, headers)."""
    from pyspark import TaskContext

    assert options.transactional_id_prefix is not None
    context = TaskContext.get()
    partition = context.partitionId() if context is not None else 0
    if batch_id is None and context is not None:
        property_value = context.getLocalProperty(BATCH_ID_PROPERTY)
        batch_id = int(property_value) if property_value is not None else None
    rows = list(row_source)
    if not rows:
        return PreparedPartition(partition, 0, None)
    bootstrap = options.kafka_params["bootstrap.servers"]
    prefix = options.transactional_id_prefix
    security = _security(options)
    with TwoPhaseProducer(bootstrap, transactional_id(prefix, partition), security=security) as producer:
        producer.begin()  # aborts what an earlier attempt of this partition left open
        committed = committed_offset(bootstrap, prefix, MARKER_TOPIC, partition, security=security)
        if batch_id is not None and committed > batch_id:
            return PreparedPartition(partition, 0, None, already_committed=True)
        try:
            for topic, key, value, target, headers in rows:
                if topic is None:
                    raise ValueError(NULL_TOPIC)
                producer.send(topic, _bytes(value), _bytes(key), target, _headers(headers))
        except Exception:
            # What this attempt sent is aborted now rather than held open until the next attempt.
            with contextlib.suppress(Exception):
                finish(bootstrap, transactional_id(prefix, partition), False, security=security)
            raise
        marker = None
        if batch_id is not None:
            marker = OffsetMarker(prefix, MARKER_TOPIC, partition, batch_id + 1, f"batch {batch_id}")
        return PreparedPartition(partition, len(rows), producer.prepare(marker))


def commit_all(options: SinkOptions, messages: list[WriterCommitMessage | None]) -> int:
    """The second phase: every task's transaction committed (leftovers of earlier attempts aborted
    first). Returns the rows committed."""
    bootstrap = options.kafka_params["bootstrap.servers"]
    security = _security(options)
    prepared = _prepared(messages)
    abort_leftovers(options, keep={t.transactional_id for t in prepared}, security=security)
    for transaction in prepared:
        finish(bootstrap, transaction.transactional_id, True, expected=transaction, security=security)
    return sum(m.count for m in messages if isinstance(m, PreparedPartition))


def abort_all(options: SinkOptions, messages: list[WriterCommitMessage | None]) -> None:
    bootstrap = options.kafka_params["bootstrap.servers"]
    security = _security(options)
    for transaction in _prepared(messages):
        try:
            finish(bootstrap, transaction.transactional_id, False, expected=transaction, security=security)
        except Exception:  # Spark is already failing the batch; the next attempt aborts what is left
            log.exception("aborting %s failed", transaction.transactional_id)
    # A task Spark killed when the job failed sent no message, but its transaction is open, and a
    # two-phase transaction never times out: it would hold its partitions' last stable offset (and
    # read_committed readers) until a later run of the same prefix. Spark calls abort without waiting
    # for the tasks it kills: their Python workers go on until spark.python.task.killTimeout (2 s) after
    # the kill, and one may still prepare. So abort the prefix's leftovers until that time has passed.
    if any(not isinstance(m, PreparedPartition) for m in messages):
        deadline = time.monotonic() + KILLED_TASKS_GRACE_S
        while True:
            try:
                abort_leftovers(options, security=security)
            except Exception:
                log.exception("aborting the open transactions of %s failed", options.transactional_id_prefix)
            if time.monotonic() >= deadline:
                break
            time.sleep(0.5)


def abort_leftovers(
    options: SinkOptions, keep: Collection[str] = (), security: ClientSecurity | None = None
) -> list[str]:
    """Abort the open transactions of this sink's prefix (other than `keep`): what tasks of a batch
    that was never committed left prepared. None of them is a committed batch's: the commit step
    finishes every transaction of a batch before Spark records it."""
    assert options.transactional_id_prefix is not None
    bootstrap = options.kafka_params["bootstrap.servers"]
    security = security or _security(options)
    ours = re.compile(re.escape(options.transactional_id_prefix) + r"-\d+")
    aborted = []
    for txn_id in open_transactions(bootstrap, security=security):
        if (
            ours.fullmatch(txn_id)
            and txn_id not in keep
            and finish(bootstrap, txn_id, False, security=security) is not None
        ):
            aborted.append(txn_id)
    if aborted:
        log.info("aborted transactions an earlier attempt left prepared: %s", ", ".join(aborted))
    return aborted


def _security(options: SinkOptions) -> ClientSecurity:
    """The connections' TLS and SASL (a delegation token's login too), from the sink's Kafka options
    (made where used: an SSL context does not travel to the executors)."""
    return client_security(options.kafka_params, token=options.token_login)


def _prepared(messages: list[WriterCommitMessage | None]) -> list[PreparedTransaction]:
    return [m.transaction for m in messages if isinstance(m, PreparedPartition) and m.transaction is not None]


def _bytes(value: object) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    return bytes(value)  # type: ignore[call-overload,no-any-return]


def _headers(headers: object) -> list[tuple[str, bytes | None]]:
    if not headers:
        return []
    return [(str(k), _bytes(v)) for k, v in headers]  # type: ignore[attr-defined]
