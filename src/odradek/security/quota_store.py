"""Client quotas of a single node, persisted in `<first log dir>/__odradek_client_quotas.json`.

Each entity is kept with its quota keys as Kafka writes them in ZooKeeper (strings: whole numbers for
the byte rates), and the file is replaced atomically (written, fsynced, renamed) on every change.
Changes are written from worker threads, one at a time: each write holds every change made before it,
so the last file renamed into place is the newest (two at once shared one temporary file).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from odradek.security.quota_entities import (
    DEFAULT,
    QuotaEntity,
    QuotaRequestError,
    config_string,
    entity_from_wire,
    quota_values,
)
from odradek.storage.files import atomic_write

FILE_NAME: Final = "__odradek_client_quotas.json"
_VERSION: Final = 1


class QuotaStoreError(Exception):
    pass


class LocalQuotaStore:
    def __init__(self, log_dir: Path) -> None:
        self.path = log_dir / FILE_NAME
        self._entities: dict[QuotaEntity, dict[str, float]] = {}
        self._writing = threading.Lock()

    def load(self) -> dict[QuotaEntity, dict[str, float]]:
        try:
            doc = json.loads(self.path.read_text("utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as error:
            raise QuotaStoreError(f"cannot read client quotas {self.path}: {error}") from None
        if not isinstance(doc, dict) or doc.get("version") != _VERSION:
            raise QuotaStoreError(f"{self.path}: unsupported client quota file version")
        try:
            for item in doc["quotas"]:
                entity = entity_from_wire([(str(kind), name) for kind, name in item["entity"]])
                self._entities[entity] = quota_values(entity, item["config"], str(self.path))
        except (KeyError, TypeError, ValueError, QuotaRequestError) as error:
            raise QuotaStoreError(f"{self.path}: malformed client quota entry: {error}") from None
        return dict(self._entities)

    def write(self, entity: QuotaEntity, values: Mapping[str, float]) -> None:
        with self._writing:
            self._write(entity, values)

    def _write(self, entity: QuotaEntity, values: Mapping[str, float]) -> None:
        if values:
            self._entities[entity] = dict(values)
        else:
            self._entities.pop(entity, None)
        quotas = [
            {
                "entity": entity.parts(),
                "config": {key: config_string(key, value) for key, value in sorted(values.items())},
            }
            for entity, values in sorted(self._entities.items(), key=lambda item: _order(item[0]))
        ]
        payload = (json.dumps({"version": _VERSION, "quotas": quotas}, indent=1) + "\n").encode()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(self.path, payload, mode=0o600)


def _order(entity: QuotaEntity) -> tuple[str, str]:
    def name(part: object) -> str:
        return "" if part is None else "<default>" if part is DEFAULT else f"={part}"

    return name(entity.user), name(entity.client_id)
