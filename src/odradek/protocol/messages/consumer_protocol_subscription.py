"""Consumer protocol subscription: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Array, Bytes, Int32, Message, String, Struct


class TopicPartition(Struct):
    topic: str = String("1+")
    partitions: list[int] = Array("int32", "1+")


class ConsumerProtocolSubscription(Message, versions="0-3"):
    topics: list[str] = Array("string")
    user_data: bytes | None = Bytes(nullable="0+", default=None)
    owned_partitions: list[TopicPartition] = Array(TopicPartition, "1+")
    generation_id: int = Int32("2+", default=-1)
    rack_id: str | None = String("3+", nullable="3+", default=None)
