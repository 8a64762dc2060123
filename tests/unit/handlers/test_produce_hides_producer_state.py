"""A Produce refused by a producer id's state (sequence, epoch) answers the code without the state: any
client that may write can name any producer id, and the expected sequence is what it needs to append
in another producer's name. Kafka answers these with no message (ReplicaManager: no custom message
outside record validation). Issue #25, "What the authorizer should hide"."""

from __future__ import annotations

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from odradek.protocol.records import RecordBatchBuilder
from tests.support.handler_services import HandlerBroker

PRODUCER_ID = 4242


async def _produce(broker: HandlerBroker, epoch: int, sequence: int) -> tuple[int, str | None]:
    builder = RecordBatchBuilder(0, producer_id=PRODUCER_ID, producer_epoch=epoch, base_sequence=sequence)
    builder.append(1_700_000_000_000, None, b"v")
    data = PartitionProduceData(index=0, records=builder.build())
    request = ProduceRequest(
        acks=1, timeout_ms=1000, topic_data=[TopicProduceData(name="orders", partition_data=[data])]
    )
    response = await broker.call(request, 9)
    answer = response.responses[0].partition_responses[0]
    return answer.error_code, answer.error_message


async def test_another_producers_sequence_and_epoch_are_not_in_the_answer(
    handler_broker: HandlerBroker,
) -> None:
    """Before: "producer 4242 at offset 3: sequence 9 does not follow 2" and "epoch 4 of producer 4242
    at offset 3 is older than the last seen epoch 5"."""
    await handler_broker.create_topic("orders")
    for sequence in range(3):
        assert await _produce(handler_broker, 5, sequence) == (ErrorCode.NONE, None)
    assert await _produce(handler_broker, 5, 9) == (ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, None)
    assert await _produce(handler_broker, 6, 7) == (ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, None)
    assert await _produce(handler_broker, 4, 0) == (ErrorCode.INVALID_PRODUCER_EPOCH, None)
