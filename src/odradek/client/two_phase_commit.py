"""A transactional producer for KIP-939 two-phase commit, on odradek's codec.

Python's Kafka clients cannot prepare a transaction in one process and finish it in another, so this
one speaks the requests itself:

- `TwoPhaseProducer.begin()`: InitProducerId v6 with enable2Pc (an earlier instance's open transaction
  is aborted and that instance fenced);
- `send()` buffers records, `prepare()` is the first phase: AddPartitionsToTxn, every batch produced
  with acks=all and acknowledged, and optionally an offset committed in the same transaction
  (AddOffsetsToTxn, TxnOffsetCommit) as a marker of what the transaction holds. Nothing is committed:
  the transaction stays open, with no timeout, until someone finishes it;
- `finish()`, from any process: InitProducerId v6 with keepPreparedTxn takes the open transaction over
  (fencing the process that prepared it) and EndTxn commits or aborts it.

Every entry point takes the connection's `security` (client/security.py: TLS and SASL PLAIN/SCRAM
from librdkafka's client settings; PLAINTEXT by default). Errors a client would retry (coordinator
moving or loading, concurrent transactions, leaders moving) are retried until `timeout_s`; any other
is raised as `TwoPhaseError`, and a refused TLS handshake or login at once as `ClientSecurityError`.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass

from odradek.client.cluster import RETRIABLE, Cluster, RequestError, produce_to_leader, retrying
from odradek.client.partitioner import partition_for_key
from odradek.client.security import PLAINTEXT, ClientSecurity
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.add_offsets_to_txn import AddOffsetsToTxnRequest
from odradek.protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnTopicData,
)
from odradek.protocol.messages.end_txn import EndTxnRequest
from odradek.protocol.messages.init_producer_id import InitProducerIdRequest, InitProducerIdResponse
from odradek.protocol.messages.list_transactions import ListTransactionsRequest
from odradek.protocol.messages.offset_fetch import OffsetFetchRequest, OffsetFetchRequestTopic
from odradek.protocol.messages.txn_offset_commit import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
)
from odradek.protocol.records import RecordBatchBuilder, RecordHeader

E = ErrorCode
GROUP_KEY, TRANSACTION_KEY = 0, 1
BATCH_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class PreparedTransaction:
    """A transaction whose first phase is done: what a second process needs to finish it."""

    transactional_id: str
    producer_id: int
    producer_epoch: int


@dataclass(frozen=True, slots=True)
class OffsetMarker:
    """An offset committed in the transaction (and so visible exactly when it commits)."""

    group_id: str
    topic: str
    partition: int
    offset: int
    metadata: str = ""


TwoPhaseError = RequestError  # its name for the errors of its requests


class TwoPhaseProducer:
    def __init__(
        self,
        bootstrap: str,
        transactional_id: str,
        timeout_s: float = 60.0,
        security: ClientSecurity = PLAINTEXT,
    ) -> None:
        self.transactional_id = transactional_id
        self.timeout_s = timeout_s
        self.cluster = Cluster(bootstrap, timeout_s, security)
        self.producer_id = -1
        self.producer_epoch = -1
        self._pending: dict[
            tuple[str, int], list[tuple[int, bytes | None, bytes | None, list[RecordHeader]]]
        ] = {}
        self._partition_counts: dict[str, int] = {}
        self._unkeyed = itertools.count()

    def __enter__(self) -> TwoPhaseProducer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.cluster.close()

    def begin(self) -> None:
        """Take the transactional id: an earlier instance's open transaction is aborted."""
        answer = _init(self.cluster, self.transactional_id, keep_prepared=False, timeout_s=self.timeout_s)
        self.producer_id, self.producer_epoch = answer.producer_id, answer.producer_epoch

    def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        partition: int | None = None,
        headers: Sequence[RecordHeader] = (),
        timestamp_ms: int | None = None,
    ) -> None:
        if partition is None or partition < 0:
            count = self._partitions(topic)
            partition = partition_for_key(key, count) if key is not None else next(self._unkeyed) % count
        timestamp = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
        self._pending.setdefault((topic, partition), []).append((timestamp, key, value, list(headers)))

    def prepare(self, marker: OffsetMarker | None = None) -> PreparedTransaction:
        """The first phase: every record sent is in the log, acknowledged by all in-sync replicas, in
        this producer's open transaction (with `marker`'s offset, if given). Raises on any failure (the
        transaction is then left for the next `begin()` of this id to abort)."""
        if self.producer_id < 0:
            raise RuntimeError("begin() first")
        partitions = sorted(self._pending)
        if partitions:
            self._add_partitions(partitions)
            self._produce(partitions)
        if marker is not None:
            self._commit_marker(marker)
        self._pending.clear()
        prepared = PreparedTransaction(self.transactional_id, self.producer_id, self.producer_epoch)
        self.producer_id = self.producer_epoch = -1  # one transaction per begin()
        return prepared

    # ----- the first phase's requests -------------------------------------------------------------

    def _partitions(self, topic: str) -> int:
        if topic not in self._partition_counts:

            def attempt() -> tuple[ErrorCode, int]:
                found = self.cluster.metadata([topic]).topics[0]
                return ErrorCode(found.error_code), len(found.partitions)

            self._partition_counts[topic] = (
                retrying(self.cluster, f"Metadata for {topic}", self.timeout_s, attempt) or 0
            )
        return self._partition_counts[topic]

    def _add_partitions(self, partitions: list[tuple[str, int]]) -> None:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(partition)
        request = AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=self.transactional_id,
            v3_and_below_producer_id=self.producer_id,
            v3_and_below_producer_epoch=self.producer_epoch,
            v3_and_below_topics=[
                AddPartitionsToTxnTopicData(name=t, partitions=p) for t, p in by_topic.items()
            ],
        )

        def attempt() -> ErrorCode:
            answer = self.cluster.coordinator(self.transactional_id, TRANSACTION_KEY).request(request, 3)
            errors = {
                ErrorCode(p.partition_error_code)
                for t in answer.results_by_topic_v3_and_below
                for p in t.results_by_partition
            }
            errors.discard(E.NONE)
            errors.discard(E.OPERATION_NOT_ATTEMPTED)
            # A final error wins over retriable ones (OPERATION_NOT_ATTEMPTED only echoes another).
            return max(errors, key=lambda e: e not in RETRIABLE) if errors else E.NONE

        retrying(self.cluster, f"AddPartitionsToTxn of {self.transactional_id}", self.timeout_s, attempt)

    def _produce(self, partitions: list[tuple[str, int]]) -> None:
        response = self.cluster.metadata(sorted({t for t, _ in partitions}))
        leaders = {(t.name, p.partition_index): p.leader_id for t in response.topics for p in t.partitions}
        for tp in partitions:
            for batch in self._batches(tp):
                self._produce_batch(tp, batch, leaders.get(tp, -1))

    def _batches(self, tp: tuple[str, int]) -> list[bytes]:
        """The partition's records in batches of about BATCH_BYTES, sequence numbers from 0 (a
        transaction starts its producer epoch's sequence afresh here: `begin()` bumped the epoch)."""
        batches: list[bytes] = []
        builder: RecordBatchBuilder | None = None
        count, sequence = 0, 0
        for timestamp, key, value, headers in self._pending[tp]:
            if builder is None:
                builder = RecordBatchBuilder(
                    0,
                    producer_id=self.producer_id,
                    producer_epoch=self.producer_epoch,
                    base_sequence=sequence,
                    is_transactional=True,
                )
            builder.append(timestamp, key, value, headers)
            count += 1
            if builder.estimated_size >= BATCH_BYTES:
                batches.append(builder.build())
                sequence += count
                builder, count = None, 0
        if builder is not None:
            batches.append(builder.build())
        return batches

    def _produce_batch(self, tp: tuple[str, int], batch: bytes, leader: int) -> None:
        produce_to_leader(self.cluster, tp, batch, leader, self.timeout_s, self.transactional_id)

    def _commit_marker(self, marker: OffsetMarker) -> None:
        add = AddOffsetsToTxnRequest(
            transactional_id=self.transactional_id,
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            group_id=marker.group_id,
        )
        retrying(
            self.cluster,
            f"AddOffsetsToTxn of {self.transactional_id}",
            self.timeout_s,
            lambda: ErrorCode(
                self.cluster.coordinator(self.transactional_id, TRANSACTION_KEY).request(add, 3).error_code
            ),
        )
        commit = TxnOffsetCommitRequest(
            transactional_id=self.transactional_id,
            group_id=marker.group_id,
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            topics=[
                TxnOffsetCommitRequestTopic(
                    name=marker.topic,
                    partitions=[
                        TxnOffsetCommitRequestPartition(
                            partition_index=marker.partition,
                            committed_offset=marker.offset,
                            committed_metadata=marker.metadata,
                        )
                    ],
                )
            ],
        )

        def attempt() -> ErrorCode:
            answer = self.cluster.coordinator(marker.group_id, GROUP_KEY).request(commit, 3)
            return ErrorCode(answer.topics[0].partitions[0].error_code)

        retrying(self.cluster, f"TxnOffsetCommit of {self.transactional_id}", self.timeout_s, attempt)


# ----- the second phase, from any process ---------------------------------------------------------


def _init(
    cluster: Cluster, transactional_id: str, keep_prepared: bool, timeout_s: float
) -> InitProducerIdResponse:
    request = InitProducerIdRequest(
        transactional_id=transactional_id,
        # No timeout applies to a 2PC transaction; the broker stores its own "none".
        transaction_timeout_ms=2**31 - 1,
        enable2_pc=True,
        keep_prepared_txn=keep_prepared,
    )
    answers: list[InitProducerIdResponse] = []

    def attempt() -> ErrorCode:
        answer = cluster.coordinator(transactional_id, TRANSACTION_KEY).request(request, 6)
        answers.append(answer)
        return ErrorCode(answer.error_code)

    retrying(cluster, f"InitProducerId (two-phase commit) of {transactional_id}", timeout_s, attempt)
    return answers[-1]


def finish(
    bootstrap: str,
    transactional_id: str,
    commit: bool,
    expected: PreparedTransaction | None = None,
    timeout_s: float = 60.0,
    security: ClientSecurity = PLAINTEXT,
) -> PreparedTransaction | None:
    """The second phase: commit (or abort) the transaction open on `transactional_id`, whoever prepared
    it. With `expected`, only that transaction (a different one open raises `TwoPhaseError` with
    INVALID_TXN_STATE). Returns the transaction finished, None when none was open."""
    cluster = Cluster(bootstrap, timeout_s, security)
    try:
        answer = _init(cluster, transactional_id, keep_prepared=True, timeout_s=timeout_s)
        ongoing = PreparedTransaction(
            transactional_id, answer.ongoing_txn_producer_id, answer.ongoing_txn_producer_epoch
        )
        if ongoing.producer_id < 0:
            return None
        if expected is not None and ongoing != expected:
            raise TwoPhaseError(
                f"{transactional_id}: the open transaction is {ongoing}, not {expected}", E.INVALID_TXN_STATE
            )
        request = EndTxnRequest(
            transactional_id=transactional_id,
            producer_id=answer.producer_id,
            producer_epoch=answer.producer_epoch,
            committed=commit,
        )
        retrying(
            cluster,
            f"EndTxn ({'commit' if commit else 'abort'}) of {transactional_id}",
            timeout_s,
            lambda: ErrorCode(
                cluster.coordinator(transactional_id, TRANSACTION_KEY).request(request, 3).error_code
            ),
        )
        return ongoing
    finally:
        cluster.close()


def open_transactions(
    bootstrap: str, timeout_s: float = 60.0, security: ClientSecurity = PLAINTEXT
) -> list[str]:
    """The transactional ids with an open transaction, on every broker (ListTransactions)."""
    cluster = Cluster(bootstrap, timeout_s, security)
    try:
        cluster.metadata([])
        found: set[str] = set()
        for node_id in list(cluster.nodes):
            answer = cluster.node(node_id).request(ListTransactionsRequest(state_filters=["Ongoing"]), 0)
            error = ErrorCode(answer.error_code)
            if error is not E.NONE:
                raise TwoPhaseError("ListTransactions", error)
            found.update(t.transactional_id for t in answer.transaction_states)
        return sorted(found)
    finally:
        cluster.close()


def committed_offset(
    bootstrap: str,
    group_id: str,
    topic: str,
    partition: int,
    timeout_s: float = 60.0,
    security: ClientSecurity = PLAINTEXT,
) -> int:
    """The group's committed offset of the partition, -1 when none: offsets of an open transaction do not
    count. Not `require_stable`: a prepared two-phase transaction holding a newer marker stays open until
    its coordinator finishes it, and meanwhile the broker would answer UNSTABLE_OFFSET_COMMIT; without it
    the answer is the last committed offset, which is the one wanted."""
    cluster = Cluster(bootstrap, timeout_s, security)
    request = OffsetFetchRequest(
        group_id=group_id,
        topics=[OffsetFetchRequestTopic(name=topic, partition_indexes=[partition])],
        require_stable=False,
    )
    try:

        def attempt() -> tuple[ErrorCode, int]:
            answer = cluster.coordinator(group_id, GROUP_KEY).request(request, 7)
            if answer.error_code:
                return ErrorCode(answer.error_code), -1
            found = answer.topics[0].partitions[0]
            return ErrorCode(found.error_code), found.committed_offset

        offset = retrying(cluster, f"OffsetFetch of {group_id}", timeout_s, attempt)
        return -1 if offset is None else offset
    finally:
        cluster.close()
