"""TopicPartition and the names Kafka gives partition directories and topic ids on disk."""

from __future__ import annotations

import base64
import re
import uuid
from typing import NamedTuple

from odradek.storage.files import DELETE_DIR_SUFFIX, FUTURE_DIR_SUFFIX, STRAY_DIR_SUFFIX

# Kafka: `<topic>-<partition>.<32 hex uuid>-delete` for a partition directory awaiting removal, and
# `-stray` for one set aside because it is not the topic it is named after (kept for the operator).
_DELETE_DIR = re.compile(r"^(?P<tp>.+-\d+)\.(?P<uid>[0-9a-f]{32})-delete$")
_STRAY_DIR = re.compile(r"^(?P<tp>.+-\d+)\.(?P<uid>[0-9a-f]{32})-stray$")
#: A replica being moved to another log dir (KIP-113): its copy there until it catches up.
_FUTURE_DIR = re.compile(r"^(?P<tp>.+-\d+)\.(?P<uid>[0-9a-f]{32})-future$")
#: The longest file name Linux file systems (ext4, xfs, tmpfs) take, in bytes.
MAX_FILE_NAME_BYTES = 255


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
    """The name a partition directory is renamed to before it is removed, as Kafka names it: the topic
    is cut short so that the whole name fits 255 bytes (a 249-character topic's ``-0.<uuid>-delete``
    would not). Topic names are ASCII, so characters are bytes."""
    return _renamed_dir_name(tp, DELETE_DIR_SUFFIX)


def stray_dir_name(tp: TopicPartition) -> str:
    """The name a stray partition directory is set aside under (Kafka's ``logStrayDirName``)."""
    return _renamed_dir_name(tp, STRAY_DIR_SUFFIX)


def future_dir_name(tp: TopicPartition) -> str:
    """Kafka's ``logFutureDirName``: ``<topic>-<partition>.<uuid>-future`` (the topic is never cut:
    AlterReplicaLogDirs refuses a topic too long for it, as Kafka)."""
    return f"{tp.dir_name}.{uuid.uuid4().hex}{FUTURE_DIR_SUFFIX}"


def future_dir_partition(name: str) -> TopicPartition | None:
    """The partition a future log's directory is of; None for any other name."""
    match = _FUTURE_DIR.match(name)
    return None if match is None else TopicPartition.from_dir_name(match.group("tp"))


def is_delete_dir_name(name: str) -> bool:
    return _DELETE_DIR.match(name) is not None


def is_stray_dir_name(name: str) -> bool:
    return _STRAY_DIR.match(name) is not None


def _renamed_dir_name(tp: TopicPartition, suffix: str) -> str:
    tail = f"-{tp.partition}.{uuid.uuid4().hex}{suffix}"
    return tp.topic[: MAX_FILE_NAME_BYTES - len(tail)] + tail


def topic_id_to_string(topic_id: uuid.UUID) -> str:
    """Kafka's Uuid.toString: URL-safe base64 of the 16 bytes, without padding (22 characters)."""
    return base64.urlsafe_b64encode(topic_id.bytes).decode("ascii").rstrip("=")


def topic_id_from_string(text: str) -> uuid.UUID:
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if len(raw) != 16:
        raise ValueError(f"not a Kafka topic id: {text!r}")
    return uuid.UUID(bytes=raw)
