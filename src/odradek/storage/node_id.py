"""The broker's node id, from its configuration and the ``meta.properties`` of its log dirs, and
those files written or checked once the cluster id is known.

A single node needs no ``node.id`` (nor ``broker.id``): the id stored in ``meta.properties`` is used, or
``DEFAULT_NODE_ID`` on a first start (``ensure_meta_properties`` then stores it), so the
broker never runs as -1, which no client can use. A configured id must match the stored one: data
written as one broker is never served as another (Kafka's InconsistentBrokerIdException). With
``broker.id.generation.enable=false`` no id is made up: a first start then needs a configured one. Nor
in a cluster, where Kafka takes a unique id above ``reserved.broker.max.id`` from ZooKeeper's
``/brokers/seqid``: odradek does not, so a cluster member's first start needs one too.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from odradek.storage.checkpoints import (
    CheckpointFormatError,
    MetaProperties,
    read_meta_properties,
    write_meta_properties,
)
from odradek.storage.errors import LogStorageError
from odradek.storage.partition import topic_id_to_string

DEFAULT_NODE_ID: Final = 1


class InconsistentNodeIdError(LogStorageError):
    """The configured node id and the one in meta.properties (or two log dirs' ones) disagree."""


def resolve_node_id(
    log_dirs: Sequence[Path], configured: int, generation_enabled: bool = True, cluster: bool = False
) -> int:
    """The id to run as: ``configured`` if set (>= 0), else the stored one, else ``DEFAULT_NODE_ID``
    (if ``generation_enabled`` and not for a ``cluster`` member)."""
    stored: dict[Path, int] = {}
    for log_dir in log_dirs:
        try:
            meta = read_meta_properties(log_dir)
        except CheckpointFormatError as error:
            raise LogStorageError(str(error)) from None
        if meta is not None:
            stored[log_dir] = meta.node_id
    for log_dir, node_id in stored.items():
        if node_id < 0:
            raise InconsistentNodeIdError(f"{log_dir / 'meta.properties'} holds an invalid node id {node_id}")
    if len(set(stored.values())) > 1:
        found = ", ".join(f"{node_id} in {log_dir}" for log_dir, node_id in stored.items())
        raise InconsistentNodeIdError(f"The log dirs belong to different brokers ({found})")
    stored_id = next(iter(stored.values()), None)
    if configured >= 0:
        if stored_id is not None and stored_id != configured:
            raise InconsistentNodeIdError(
                f"Configured node.id {configured} does not match the stored node id {stored_id} in "
                f"meta.properties of {', '.join(str(d) for d in stored)}: configure node.id={stored_id} "
                "if the data was moved, or empty the log dirs for a new broker"
            )
        return configured
    if stored_id is not None:
        return stored_id
    if cluster:
        raise InconsistentNodeIdError(
            f"No node id in meta.properties of {', '.join(str(d) for d in log_dirs)}: a cluster member "
            "needs broker.id (or node.id), odradek does not generate ids through ZooKeeper's /brokers/seqid"
        )
    if not generation_enabled:
        raise InconsistentNodeIdError(
            f"No node id in meta.properties of {', '.join(str(d) for d in log_dirs)} and "
            "broker.id.generation.enable is false: set node.id"
        )
    return DEFAULT_NODE_ID


def ensure_meta_properties(
    log_dirs: Sequence[Path], broker_id: int, cluster_id: str | None = None
) -> MetaProperties:
    """``meta.properties`` of every log dir: written if missing (a new cluster id is made if none is
    given or stored), checked otherwise. Raises LogStorageError on a cluster or broker id mismatch."""
    found = {d: m for d in log_dirs if (m := _read_meta(d)) is not None}
    if cluster_id is None:
        cluster_id = next(iter(found.values())).cluster_id if found else _new_cluster_id()
    for log_dir, meta in found.items():
        if meta.cluster_id != cluster_id or meta.node_id != broker_id:
            raise LogStorageError(
                f"{log_dir / 'meta.properties'} belongs to cluster {meta.cluster_id} broker "
                f"{meta.node_id}, not cluster {cluster_id} broker {broker_id}"
            )
    meta = MetaProperties(cluster_id, broker_id)
    for log_dir in log_dirs:
        log_dir.mkdir(parents=True, exist_ok=True)
        if _read_meta(log_dir) is None:
            write_meta_properties(log_dir, meta)
    return meta


def _read_meta(log_dir: Path) -> MetaProperties | None:
    try:
        return read_meta_properties(log_dir)
    except CheckpointFormatError as e:
        raise LogStorageError(str(e)) from e


def _new_cluster_id() -> str:
    """A cluster id as Kafka makes them: a random UUID in Kafka's base64 text form."""
    return topic_id_to_string(uuid.uuid4())
