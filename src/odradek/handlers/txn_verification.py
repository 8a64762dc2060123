"""KIP-890 part 1 across brokers: a partition leader asks the producer's transaction coordinator, when
that is another broker, whether a transactional batch's partition is in the producer's ongoing
transaction (AddPartitionsToTxn v4, `verify_only`), before appending it (Kafka's
AddPartitionsToTxnManager).

As Kafka, only a partition with no transaction of this producer open yet is verified: once its first
batch is in, the producer state says the transaction is open here. The coordinator's retriable
answers, and a coordinator that cannot be reached, are NOT_ENOUGH_REPLICAS to the producer (which
retries), as Kafka maps them for Produce.
"""

from __future__ import annotations

import struct

from odradek.cluster.broker_client import (
    REQUEST_TIMEOUT_S,
    BrokerConnections,
    BrokerUnreachable,
    inter_broker_endpoint,
)
from odradek.cluster.inter_broker_connection import PLAINTEXT, InterBrokerSecurity
from odradek.handlers.context import RequestContext
from odradek.handlers.leadership import refusal
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnTopic,
    AddPartitionsToTxnTransaction,
)
from odradek.protocol.messages.produce import ProduceRequest
from odradek.protocol.records.attributes import TRANSACTIONAL_FLAG_MASK
from odradek.protocol.records.header import ATTRIBUTES_OFFSET

VERSION = 4
Verdicts = dict[tuple[str, int], ErrorCode]
_ATTRIBUTES = struct.Struct(">h")
_PRODUCER_ID = struct.Struct(">q")
#: Batch header: base offset 8, length 4, leader epoch 4, magic 1, crc 4, attributes 2, last offset
#: delta 4, base timestamp 8, max timestamp 8, then the producer id 8 and epoch 2.
_PRODUCER_ID_OFFSET = 43
_EPOCH_OFFSET = 51
_MAGIC_OFFSET = 16
_RETRIABLE = {
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.NOT_COORDINATOR,
    ErrorCode.CONCURRENT_TRANSACTIONS,
}


def transactional_producer(batches: bytes | bytearray | memoryview) -> tuple[int, int] | None:
    """(producer id, epoch) of a transactional v2 batch; None for any other."""
    if len(batches) <= _EPOCH_OFFSET + 2 or batches[_MAGIC_OFFSET] != 2:
        return None
    if not _ATTRIBUTES.unpack_from(batches, ATTRIBUTES_OFFSET)[0] & TRANSACTIONAL_FLAG_MASK:
        return None
    (producer_id,) = _PRODUCER_ID.unpack_from(batches, _PRODUCER_ID_OFFSET)
    (producer_epoch,) = _ATTRIBUTES.unpack_from(batches, _EPOCH_OFFSET)
    return producer_id, producer_epoch


class RemoteVerifier:
    """The connections a leader verifies through (one per coordinator broker)."""

    def __init__(
        self,
        node_id: int,
        security: InterBrokerSecurity = PLAINTEXT,
        timeout_s: float = REQUEST_TIMEOUT_S,
        receive_buffer_bytes: int = -1,
    ) -> None:
        self.connections = BrokerConnections(
            f"broker-{node_id}-txn-verification", security, timeout_s, receive_buffer_bytes
        )

    async def verify(self, request: ProduceRequest, context: RequestContext) -> Verdicts:
        """The verdicts for the request's transactional partitions whose coordinator is another broker
        (the others are verified locally, by `verify_transactional_produce`)."""
        services = context.services
        coordinator = services.transactions
        transactional_id = request.transactional_id
        if (
            coordinator is None
            or transactional_id is None
            or services.replicas is None
            or not services.config.transaction_partition_verification_enable
        ):
            return {}
        candidates, open_here = self._transactional_partitions(request, context)
        if not candidates:
            return {}
        node = coordinator.coordinator_node(transactional_id)
        if node == services.node_id:
            return {}  # the local coordinator answers, in verify_transactional_produce
        verdicts: Verdicts = dict.fromkeys(open_here, ErrorCode.NONE)
        wanted = {tp: producer for tp, producer in candidates.items() if tp not in open_here}
        if not wanted:
            return verdicts
        producer_id, producer_epoch = next(iter(wanted.values()))
        asked = await self.ask(context, node, transactional_id, producer_id, producer_epoch, list(wanted))
        return verdicts | {tp: _for_produce(error) for tp, error in asked.items()}

    async def ask(
        self,
        context: RequestContext,
        node: int | None,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: list[tuple[str, int]],
    ) -> Verdicts:
        """Coordinator `node`'s answer for each partition (COORDINATOR_NOT_AVAILABLE for all when it is
        not known or cannot be reached)."""
        services = context.services
        endpoint = None if node is None else inter_broker_endpoint(services.config, services.cluster, node)
        if node is None or endpoint is None:
            return dict.fromkeys(partitions, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        by_topic: dict[str, list[int]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(partition)
        ask = AddPartitionsToTxnRequest(
            transactions=[
                AddPartitionsToTxnTransaction(
                    transactional_id=transactional_id,
                    producer_id=producer_id,
                    producer_epoch=producer_epoch,
                    verify_only=True,
                    topics=[AddPartitionsToTxnTopic(name=t, partitions=p) for t, p in by_topic.items()],
                )
            ]
        )
        try:
            response: AddPartitionsToTxnResponse = await self.connections.to(node, endpoint).request(
                ask, VERSION
            )
        except BrokerUnreachable:
            return dict.fromkeys(partitions, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if response.error_code != ErrorCode.NONE:
            return dict.fromkeys(partitions, ErrorCode(response.error_code))
        verdicts = dict.fromkeys(partitions, ErrorCode.COORDINATOR_NOT_AVAILABLE)  # unless answered
        for result in response.results_by_transaction:
            for topic_result in result.topic_results:
                for answered in topic_result.results_by_partition:
                    key = (topic_result.name, answered.partition_index)
                    if key in verdicts:
                        verdicts[key] = ErrorCode(answered.partition_error_code)
        return verdicts

    def _transactional_partitions(
        self, request: ProduceRequest, context: RequestContext
    ) -> tuple[dict[tuple[str, int], tuple[int, int]], set[tuple[str, int]]]:
        """The transactional partitions led here with their batch's producer, and those of them where
        that producer's transaction is already open (verified when it began)."""
        services = context.services
        candidates: dict[tuple[str, int], tuple[int, int]] = {}
        open_here: set[tuple[str, int]] = set()
        for topic in request.topic_data:
            if context.api_version >= 13:
                state = services.cluster.topic_by_id(topic.topic_id)
                name = state.name if state is not None else None
            else:
                name = topic.name
            if name is None:
                continue
            for data in topic.partition_data:
                producer = transactional_producer(data.records or b"")
                if producer is None or refusal(context, name, data.index) is not None:
                    continue
                log = services.logs.get_log(name, data.index)
                if log is None:
                    continue
                candidates[(name, data.index)] = producer
                entry = log.producer_state.last_entry(producer[0])
                if (
                    entry is not None
                    and entry.producer_epoch == producer[1]
                    and entry.current_txn_first_offset is not None
                ):
                    open_here.add((name, data.index))
        return candidates, open_here

    def close(self) -> None:
        self.connections.close()


def _for_produce(error: ErrorCode) -> ErrorCode:
    return ErrorCode.NOT_ENOUGH_REPLICAS if error in _RETRIABLE else error
