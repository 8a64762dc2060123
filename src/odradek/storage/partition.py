"""TopicPartition and the names Kafka gives partition directories and topic ids on disk."""

from __future__ import annotations

import base64
import re
import uuid
from typing import NamedTuple

# Kafka: `<topic>-<partition>.<32 hex uuid>-delete` for a partition directory awaiting removal.
_DELETE_DIR = re.compile(r"^(?P<tp>.+-\d+)\.(?P<uid>[0-9a-f]{32})-delete$")


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    @property
    def dir_name(self) -> str:
        return f"{self.topic}-{self.partition}"

    def __str__(self) -> str:
        return self.dir_name

    @classmethod
    def from_dir_name(cls, name: str) -> TopicPartition | None:
        """Parse ``<topic>-<partition>``; None for anything else (including ``-delete`` dirs)."""
        topic, sep, partition = name.rpartition("-")
        if not sep or not topic or not partition.isdigit() or "." in partition:
            return None
        return cls(topic, int(partition))


def delete_dir_name(tp: TopicPartition) -> str:
    """The name a partition directory is renamed to before it is removed, as Kafka names it."""
    return f"{tp.dir_name}.{uuid.uuid4().hex}-delete"


def is_delete_dir_name(name: str) -> bool:
    return _DELETE_DIR.match(name) is not None


def topic_id_to_string(topic_id: uuid.UUID) -> str:
    """Kafka's Uuid.toString: URL-safe base64 of the 16 bytes, without padding (22 characters)."""
    return base64.urlsafe_b64encode(topic_id.bytes).decode("ascii").rstrip("=")


def topic_id_from_string(text: str) -> uuid.UUID:
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if len(raw) != 16:
        raise ValueError(f"not a Kafka topic id: {text!r}")
    return uuid.UUID(bytes=raw)
