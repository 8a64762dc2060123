"""Which partitions of a Produce may be appended: every refusal that needs no record, in Kafka's order
(the part of ReplicaManager.appendToLocalLog and Partition.appendRecordsToLeader that refuses a
partition before its records are read).

Run before any record work (a rewrite, a walk, a conversion: partition/produce_records.py), so that
a request Kafka refuses unread costs nothing more here, and again at the append, since the work is
awaited and leadership or the ISR may have changed meanwhile. In order: leadership (ZooKeeper mode:
only the leader appends), the log and the epoch this broker leads at, Kafka's
ProduceRequest.validateRecords (exactly one whole v2 batch per partition from v3; LogValidator holds
Produce v0-2 to one batch of magic 2 as well), acks, internal topics, `min.insync.replicas` for
acks=all, the transaction the batch belongs to (KIP-890: partition/txn_verification.py), and last
the batches' headers as the log checks them (size against `max.message.bytes` and `segment.bytes`,
CRC-32C, header rules).

The handler (handlers/produce.py) authorizes first and builds one `ProduceAdmission` per request
with what it asks: the leadership, the logs, the metadata cache, this broker's transaction
coordinator, and the request's own terms.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from odradek.partition.errors import FailingRequest, resource_failure
from odradek.partition.leadership import Leadership
from odradek.partition.ports import TxnCoordinatorLookup
from odradek.partition.txn_verification import Verdicts, verify_batch
from odradek.protocol.codec_error import CodecError
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.produce import (
    LeaderIdAndEpoch,
    PartitionProduceData,
    PartitionProduceResponse,
)
from odradek.protocol.records import Compression, UnsupportedCompressionError
from odradek.protocol.records.attributes import LOG_OVERHEAD, compression_of
from odradek.storage import errors as storage_errors
from odradek.storage.log import Log
from odradek.storage.log_append import validate_batches
from odradek.storage.log_manager import LogManager
from odradek.storage.producer_state import AppendOrigin

_MAGIC_OFFSET = 16
_LENGTH_OFFSET = 8
_ATTRIBUTES_OFFSET = 21
#: The smallest length a batch can declare (LegacyRecord.RECORD_OVERHEAD_V0, which Kafka checks first).
_MIN_RECORD_OVERHEAD = 14
_VALID_ACKS = (-1, 0, 1)


# Admitted and ProduceAdmission are not frozen: made per partition and per request, where a frozen
# dataclass's __init__ costs several times a plain one's (docs/bench/architecture-steps.md).
@dataclass(slots=True)
class Admitted:
    """A partition that may be appended: its log, the epoch to stamp, and its records, as v2 batches
    in a buffer of their own (storage patches offsets into it), or an old producer's message set."""

    log: Log
    leader_epoch: int
    records: bytearray | memoryview
    message_set: bool


class ProducedTopic(Protocol):
    """A topic as the metadata cache knows it."""

    @property
    def is_internal(self) -> bool: ...


class ProduceMetadata(Protocol):
    """What admission reads of the metadata cache (cluster/metadata's ClusterMetadata)."""

    def topic(self, name: str) -> ProducedTopic | None: ...

    def partition(self, topic: str, partition: int) -> object | None: ...


@dataclass(slots=True)
class ProduceAdmission:
    """One Produce request's admission: what it asks, and the request's terms."""

    leadership: Leadership
    logs: LogManager
    metadata: ProduceMetadata
    #: This broker's transaction coordinator (None before it runs).
    transactions: TxnCoordinatorLookup | None
    #: The request being answered, for the log of an unexpected failure (partition/errors.py).
    context: FailingRequest
    api_version: int
    acks: int
    transactional_id: str | None
    #: What other brokers' transaction coordinators answered (KIP-890, a cluster only).
    verdicts: Verdicts | None

    def admit(
        self, topic: str, data: PartitionProduceData, before: Admitted | None = None
    ) -> Admitted | PartitionProduceResponse:
        """The partition admitted, or the answer refusing it. Admitted again (``before``: as it was
        admitted the first time), its records, which have not changed, are not checked again."""
        refused = self.leadership.leader_refusal(topic, data.index)
        if refused is not None:  # ZooKeeper mode: only the partition's leader appends
            failed = failed_response(data.index, refused.error_code)
            failed.current_leader = LeaderIdAndEpoch(
                leader_id=refused.leader_id, leader_epoch=refused.leader_epoch
            )
            return failed
        log = self.logs.get_log(topic, data.index)
        partition = self.metadata.partition(topic, data.index)
        # Stamped on the batches: the epoch this broker leads at, not the cache's (partition/leadership.py)
        epoch = self.leadership.leader_epoch(topic, data.index)
        if log is None or partition is None or epoch is None:
            return failed_response(data.index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        records = data.records
        try:
            message_set = before.message_set if before else _validate_records(records, self.api_version)
        except (storage_errors.StorageError, CodecError) as error:
            return self._failed(topic, data.index, error)
        if self.acks not in _VALID_ACKS:  # checked after the records, as Kafka's ReplicaManager does
            return failed_response(data.index, ErrorCode.INVALID_REQUIRED_ACKS)
        state = self.metadata.topic(topic)
        if state is not None and state.is_internal:  # only the coordinators write there, not via Produce
            return failed_response(
                data.index, ErrorCode.INVALID_TOPIC_EXCEPTION, f"cannot produce to internal topic {topic}"
            )
        # acks=all's refusal, Kafka's effective minimum min(min.insync.replicas, replication factor)
        # over the leader's ISR (a single node's one replica is always enough)
        if self.acks == -1 and self.leadership.under_min_isr(topic, data.index):
            return failed_response(data.index, ErrorCode.NOT_ENOUGH_REPLICAS)
        assert records is not None  # refused above when missing
        batches = before.records if before else _own_buffer(records)
        if message_set:
            return Admitted(log, epoch, batches, message_set=True)
        unverified = verify_batch(
            self.transactions, self.transactional_id, topic, data.index, batches, self.verdicts
        )
        if unverified is not ErrorCode.NONE:
            return failed_response(data.index, unverified)
        if before is None:
            try:
                validate_batches(batches, log.config, AppendOrigin.CLIENT)
            except (storage_errors.StorageError, CodecError) as error:
                return self._failed(topic, data.index, error)
        return Admitted(log, epoch, batches, message_set=False)

    def _failed(self, topic: str, index: int, error: Exception) -> PartitionProduceResponse:
        return failed_response(index, *resource_failure(error, self.context, f"{topic}-{index}"))


def failed_response(index: int, code: ErrorCode, message: str | None = None) -> PartitionProduceResponse:
    return PartitionProduceResponse(index=index, error_code=code, base_offset=-1, error_message=message)


def _validate_records(records: bytes | memoryview | None, api_version: int) -> bool:
    """Kafka's ProduceRequest.validateRecords for v3+: exactly one whole batch, of magic 2, per
    partition; Produce v0-2 may carry a message set (True: to convert up) or, as LogValidator holds
    them, one v2 batch.

    Batches are counted as Kafka's batch iterator counts them: a trailing fragment too short to be a
    whole batch is not a second batch (storage refuses it later), and a first batch cut short is none."""
    view = memoryview(records or b"")
    if api_version < 3:
        if len(view) <= _MAGIC_OFFSET:
            raise storage_errors.CorruptRecordError("produce request without records")
        if view[_MAGIC_OFFSET] < 2:
            return True
    first = _next_batch_size(view, 0)
    if first is None:
        raise storage_errors.InvalidRecordError(
            f"Produce requests with version {api_version} must have at least one record batch per partition"
        )
    if view[_MAGIC_OFFSET] != 2:
        raise storage_errors.InvalidRecordError(
            f"Produce requests with version {api_version} are only allowed to contain record batches "
            "with magic version 2"
        )
    if 3 <= api_version < 7 and compression_of(
        int.from_bytes(view[_ATTRIBUTES_OFFSET : _ATTRIBUTES_OFFSET + 2])
    ) is (Compression.ZSTD):
        raise UnsupportedCompressionError(
            f"Produce requests with version {api_version} are not allowed to use ZStandard compression"
        )
    if _next_batch_size(view, first) is not None:
        if api_version < 3:  # LogValidator's words: Kafka holds them to one batch there
            raise storage_errors.InvalidRecordError("Compressed outer record has more than one batch")
        raise storage_errors.InvalidRecordError(
            f"Produce requests with version {api_version} are only allowed to contain exactly one record "
            "batch per partition"
        )
    return False


def _next_batch_size(records: memoryview, position: int) -> int | None:
    """The size of the whole batch at `position`, or None when it is not all there (Kafka's
    ByteBufferLogInputStream.nextBatchSize and nextBatch); a size or magic no batch can have is corrupt."""
    remaining = len(records) - position
    if remaining < LOG_OVERHEAD:
        return None
    length = int.from_bytes(records[position + _LENGTH_OFFSET : position + LOG_OVERHEAD], signed=True)
    if length < _MIN_RECORD_OVERHEAD:
        raise storage_errors.CorruptRecordError(
            f"Record size {length} is less than the minimum record overhead ({_MIN_RECORD_OVERHEAD})"
        )
    if remaining <= _MAGIC_OFFSET:
        return None
    magic = records[position + _MAGIC_OFFSET]
    if magic > 2:  # also a negative magic, read here unsigned
        raise storage_errors.CorruptRecordError(
            f"Invalid magic found in record: {int.from_bytes([magic], signed=True)}"
        )
    size = LOG_OVERHEAD + length
    return size if remaining >= size else None


def _own_buffer(records: bytes | memoryview) -> bytearray | memoryview:
    """The records in a mutable buffer that storage may patch (and a worker read meanwhile).

    Records decoded from a request frame the connection received into a bytearray are a writable view
    of that frame, which is this request's own: they are patched and written where they are."""
    if isinstance(records, memoryview) and not records.readonly:
        return records
    return bytearray(records)
