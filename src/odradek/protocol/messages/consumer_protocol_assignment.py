"""Consumer protocol assignment: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Array, Bytes, Message, String, Struct


class TopicPartition(Struct):
    topic: str = String()
    partitions: list[int] = Array("int32")


class ConsumerProtocolAssignment(Message, versions="0-3"):
    assigned_partitions: list[TopicPartition] = Array(TopicPartition)
    user_data: bytes | None = Bytes(nullable="0+", default=None)
