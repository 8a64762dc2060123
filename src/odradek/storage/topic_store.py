"""Topic metadata that must survive restarts: names, ids, partition counts and config overrides.

Kept in ``<log.dir>/__odradek_topics.json`` (the first log dir), replaced atomically on every change::

    {"version": 1,
     "topics": {"orders": {"topic_id": "<Kafka base64 uuid>", "partitions": 3,
                           "replication_factor": 1, "configs": {"cleanup.policy": "compact"}}}}

Config values are stored as given (str, int, float, bool or null), keyed by Kafka's names.

A topic being deleted moves from ``topics`` to ``"deleting": {"orders": "<topic id>"}`` before any of
its partition directories is renamed, and leaves it once they all are: the durable mark from which
``LogManager.startup`` finishes a deletion a crash interrupted (as Kafka's controller finishes the
topics queued for deletion).

Changes may be written from a worker thread (topic creation runs off the event loop) while the loop
reads: a lock keeps each read-modify-write whole, and readers get a copy of the last written content.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from odradek.storage.config import ConfigValue
from odradek.storage.errors import LogStorageError
from odradek.storage.files import TOPICS_FILE, atomic_write
from odradek.storage.partition import topic_id_from_string, topic_id_to_string

_VERSION = 1


@dataclass(frozen=True, slots=True)
class TopicRecord:
    name: str
    topic_id: uuid.UUID
    partitions: int
    replication_factor: int = 1
    configs: Mapping[str, ConfigValue] = field(default_factory=dict)


class TopicStore:
    """Reads and writes the topics file; the in-memory copy is the file's last written content."""

    def __init__(self, log_dir: Path) -> None:
        self.path = log_dir / TOPICS_FILE
        self._topics: dict[str, TopicRecord] | None = None
        self._deleting: dict[str, uuid.UUID] = {}
        self._lock = threading.Lock()

    def load_topics(self) -> dict[str, TopicRecord]:
        """Every stored topic by name ({} before the first save)."""
        topics = self._topics
        if topics is None:
            with self._lock:
                if self._topics is None:
                    self._topics, self._deleting = self._read()
                topics = self._topics
        return dict(topics)

    def save_topic(
        self,
        name: str,
        topic_id: uuid.UUID,
        partitions: int,
        configs: Mapping[str, ConfigValue] | None = None,
        replication_factor: int = 1,
    ) -> TopicRecord:
        """Create or replace a topic's record (new partition count, new config overrides)."""
        record = TopicRecord(name, topic_id, partitions, replication_factor, dict(configs or {}))
        self.put_topic(record)
        return record

    def put_topic(self, record: TopicRecord) -> None:
        """Store ``record`` as its topic's record (replacing any)."""
        with self._lock:
            topics = self._current()
            topics[record.name] = record
            self._write(topics)

    def delete_topic(self, name: str) -> bool:
        """Forget a topic's record outright (a creation undone)."""
        with self._lock:
            topics = self._current()
            if topics.pop(name, None) is None:
                return False
            self._write(topics)
            return True

    def mark_deleted(self, name: str) -> bool:
        """Move the topic's record to the deletions under way (durably); False if there is none."""
        with self._lock:
            topics = self._current()
            record = topics.pop(name, None)
            if record is None:
                return False
            self._write(topics, {**self._current_deleting(), name: record.topic_id})
            return True

    def deleting(self) -> dict[str, uuid.UUID]:
        """Topics whose deletion is under way (marked, not every partition directory renamed yet).
        Like ``load_topics``, a copy of the last written content: no wait for a write under way."""
        self.load_topics()
        return dict(self._deleting)

    def forget_deleted(self, names: Iterable[str]) -> None:
        """The deletions of ``names`` are done: every partition directory of theirs is renamed."""
        with self._lock:
            deleting = self._current_deleting()
            if any(deleting.pop(name, None) is not None for name in list(names)):
                self._write(self._current(), deleting)

    def _current(self) -> dict[str, TopicRecord]:
        """A copy of the stored topics; call with the lock held."""
        if self._topics is None:
            self._topics, self._deleting = self._read()
        return dict(self._topics)

    def _current_deleting(self) -> dict[str, uuid.UUID]:
        self._current()
        return dict(self._deleting)

    def _write(self, topics: dict[str, TopicRecord], deleting: dict[str, uuid.UUID] | None = None) -> None:
        if deleting is None:
            deleting = self._deleting
        doc: dict[str, object] = {
            "version": _VERSION,
            "topics": {
                r.name: {
                    "topic_id": topic_id_to_string(r.topic_id),
                    "partitions": r.partitions,
                    "replication_factor": r.replication_factor,
                    "configs": dict(r.configs),
                }
                for r in sorted(topics.values(), key=lambda r: r.name)
            },
        }
        if deleting:
            doc["deleting"] = {name: topic_id_to_string(topic_id) for name, topic_id in deleting.items()}
        atomic_write(self.path, (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode())
        self._deleting = deleting  # first: a reader may see a topic both stored and deleting, never neither
        self._topics = topics

    def _read(self) -> tuple[dict[str, TopicRecord], dict[str, uuid.UUID]]:
        try:
            doc = json.loads(self.path.read_text("utf-8"))
        except FileNotFoundError:
            return {}, {}
        except (OSError, ValueError) as e:
            # Losing every topic silently would be worse than refusing to start.
            raise LogStorageError(f"cannot read topic metadata {self.path}: {e}") from e
        if not isinstance(doc, dict) or not isinstance(doc.get("topics", {}), dict):
            raise LogStorageError(f"{self.path}: not topic metadata (an object with an object of topics)")
        if doc.get("version") != _VERSION:
            raise LogStorageError(f"{self.path}: unsupported version {doc.get('version')!r}")
        topics = {name: self._record(name, t) for name, t in doc.get("topics", {}).items()}
        marks = doc.get("deleting", {})
        try:
            if not isinstance(marks, dict):
                raise TypeError(f"{type(marks).__name__} instead of an object")
            deleting = {name: topic_id_from_string(text) for name, text in marks.items()}
        except (TypeError, ValueError) as e:
            raise LogStorageError(f"{self.path}: malformed deletion marks: {e!r}") from e
        return topics, deleting

    def _record(self, name: str, stored: object) -> TopicRecord:
        """One stored topic; a field missing or of the wrong type stops start-up naming the topic, as
        the whole file's corruption does (it must not end in a traceback, nor lose the topic)."""
        try:
            if not isinstance(stored, dict):
                raise TypeError(f"{type(stored).__name__} instead of an object")
            configs = stored.get("configs", {})
            if not isinstance(configs, dict):
                raise TypeError(f"configs is a {type(configs).__name__}, not an object")
            return TopicRecord(
                name,
                topic_id_from_string(stored["topic_id"]),
                int(stored["partitions"]),
                int(stored.get("replication_factor", 1)),
                configs,
            )
        except (KeyError, TypeError, ValueError) as e:
            raise LogStorageError(f"{self.path}: malformed record of topic {name!r}: {e!r}") from e
