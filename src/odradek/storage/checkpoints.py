"""Kafka's small text files: offset checkpoints, leader epochs, partition.metadata, meta.properties.

Offset checkpoints (``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint``,
``replication-offset-checkpoint``, ``cleaner-offset-checkpoint``, at the log dir root)::

    0                 <- version
    2                 <- number of entries
    my-topic 0 1234   <- topic partition offset
    my-topic 1 77

``leader-epoch-checkpoint`` (per partition)::  version 0, count, then ``epoch start_offset`` lines.
``partition.metadata`` (per partition)::       ``version: 0`` then ``topic_id: <base64 uuid>``.
``meta.properties`` (per log dir): Java properties with version, broker.id (or node.id) and cluster.id.
All are replaced atomically (temp file, rename), as Kafka writes them; every one but the leader epoch
checkpoint is fsynced before its rename (see ``leader_epoch.py`` for why that one is not, and what a
start-up does when a power loss damaged it). An empty file, or one cut before its entry count, reads as
no entries, as Kafka's CheckpointFile reads it (Kafka creates its checkpoint files empty).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from odradek.storage.files import atomic_write
from odradek.storage.partition import TopicPartition, topic_id_from_string, topic_id_to_string

_VERSION = 0


class CheckpointFormatError(ValueError):
    """A checkpoint file that does not parse (not text, a line that is not numbers where they belong).

    Kafka's CheckpointFileWithFailureHandler takes the log dir offline for it, which stops a broker
    with one log dir; callers here stop start-up with a line naming the file."""


def unreadable_checkpoint(error: CheckpointFormatError) -> str:
    """The one line that stops start-up for an unreadable checkpoint, and what the operator can do."""
    return (
        f"Error while reading checkpoint file {error}: restore it, or remove it to start without what it "
        "held (Kafka takes the log dir offline)"
    )


def write_offset_checkpoint(path: Path, offsets: Mapping[TopicPartition, int], *, fsync: bool = True) -> None:
    lines = [str(_VERSION), str(len(offsets))]
    lines += [f"{tp.topic} {tp.partition} {offset}" for tp, offset in sorted(offsets.items())]
    atomic_write(path, ("\n".join(lines) + "\n").encode(), fsync=fsync)


def read_offset_checkpoint(path: Path) -> dict[TopicPartition, int]:
    """Entries of an offset checkpoint; {} if the file does not exist."""
    out: dict[TopicPartition, int] = {}
    for topic, partition, offset in _read_entries(path, 3) or []:
        out[TopicPartition(topic, _integer(path, partition))] = _integer(path, offset)
    return out


@dataclass(frozen=True, slots=True)
class EpochEntry:
    epoch: int
    start_offset: int


def write_leader_epoch_checkpoint(
    path: Path, entries: Iterable[EpochEntry], *, fsync: bool = True, sync_directory: bool = True
) -> None:
    items = list(entries)
    lines = [str(_VERSION), str(len(items))] + [f"{e.epoch} {e.start_offset}" for e in items]
    atomic_write(path, ("\n".join(lines) + "\n").encode(), fsync=fsync, sync_directory=sync_directory)


def read_leader_epoch_checkpoint(path: Path) -> list[EpochEntry] | None:
    """The entries; None when there is no checkpoint to read (no file, an empty one, or one cut before
    its entry count), which a caller must tell apart from a checkpoint of no entries."""
    entries = _read_entries(path, 2)
    if entries is None:
        return None
    return [EpochEntry(_integer(path, epoch), _integer(path, offset)) for epoch, offset in entries]


def write_partition_metadata(
    partition_dir: Path, topic_id: uuid.UUID, *, sync_directory: bool = True
) -> None:
    text = f"version: {_VERSION}\ntopic_id: {topic_id_to_string(topic_id)}\n"
    atomic_write(partition_dir / "partition.metadata", text.encode(), sync_directory=sync_directory)


def read_partition_metadata(partition_dir: Path) -> uuid.UUID | None:
    path = partition_dir / "partition.metadata"
    text = _read_text(path)
    if text is None:
        return None
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    try:
        if int(fields["version"].strip()) != _VERSION:
            raise CheckpointFormatError(f"{path}: unsupported version {fields['version'].strip()}")
        return topic_id_from_string(fields["topic_id"].strip())
    except (KeyError, ValueError) as e:
        raise CheckpointFormatError(f"{path}: malformed partition metadata: {e}") from None


@dataclass(frozen=True, slots=True)
class MetaProperties:
    """``meta.properties``: version 0 is ZooKeeper mode (broker.id), version 1 is KRaft (node.id)."""

    cluster_id: str
    node_id: int
    version: int = 0


def write_meta_properties(log_dir: Path, meta: MetaProperties) -> None:
    id_key = "broker.id" if meta.version == 0 else "node.id"
    header = time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime())
    text = f"#\n#{header}\ncluster.id={meta.cluster_id}\nversion={meta.version}\n{id_key}={meta.node_id}\n"
    atomic_write(log_dir / "meta.properties", text.encode())


def read_meta_properties(log_dir: Path) -> MetaProperties | None:
    path = log_dir / "meta.properties"
    text = _read_text(path)
    if text is None:
        return None
    props = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "!")) and "=" in line:
            key, value = line.split("=", 1)
            props[key.strip()] = value.strip()
    try:
        node_id = props.get("broker.id", props.get("node.id"))
        if node_id is None:
            raise KeyError("broker.id")
        return MetaProperties(props["cluster.id"], int(node_id), int(props.get("version", "0")))
    except (KeyError, ValueError) as e:
        raise CheckpointFormatError(f"{path}: malformed meta.properties: {e}") from None


def _read_entries(path: Path, width: int) -> list[list[str]] | None:
    """The entries' fields; None for no file, an empty one or one holding only its version line."""
    text = _read_text(path)
    if text is None:
        return None
    lines = text.splitlines()
    if len(lines) < 2 and all(line.strip() in ("", str(_VERSION)) for line in lines):
        return None  # Kafka's CheckpointReadBuffer: no version or no count line is no entries
    try:
        if int(lines[0]) != _VERSION:
            raise CheckpointFormatError(f"{path}: unsupported version {lines[0]}")
        count = int(lines[1])
        entries = [line.split() for line in lines[2 : 2 + count]]
    except (IndexError, ValueError) as e:
        raise CheckpointFormatError(f"{path}: malformed checkpoint: {e}") from None
    if len(entries) != count or any(len(fields) != width for fields in entries):
        raise CheckpointFormatError(f"{path}: expected {count} entries of {width} fields")
    return entries


def _read_text(path: Path) -> str | None:
    """The file's text, None if it does not exist; bytes that are not UTF-8 are a format error."""
    try:
        return path.read_text("utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as e:
        raise CheckpointFormatError(f"{path}: not a text file: {e}") from None


def _integer(path: Path, field: str) -> int:
    try:
        return int(field)
    except ValueError:
        raise CheckpointFormatError(f"{path}: malformed checkpoint: {field!r} is not a number") from None
