"""librdkafka pads its all-topics Metadata v9+ request with 3 bytes; the broker closed the connection over
them ("unexpected trailing bytes"), so AdminClient.list_topics failed. Kafka ignores trailing bytes."""

from __future__ import annotations

from confluent_kafka.admin import AdminClient

from odradek.protocol.frames import decode_request, encode_request
from odradek.protocol.messages.metadata import MetadataRequest
from tests.support.broker_process import BrokerProcess


def test_request_with_trailing_padding_decodes() -> None:
    frame = encode_request(MetadataRequest(topics=None), 13, 3, "rdkafka")[4:] + b"\0\0\0"
    header, body = decode_request(frame)
    assert header.correlation_id == 3 and body.topics is None


def test_confluent_admin_lists_topics(broker: BrokerProcess) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    assert isinstance(admin.list_topics(timeout=10).topics, dict)
