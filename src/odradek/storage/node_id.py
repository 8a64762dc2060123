"""The broker's node id, from its configuration and the ``meta.properties`` of its log dirs.

A single node needs no ``node.id`` (nor ``broker.id``): the id stored in ``meta.properties`` is used, or
``DEFAULT_NODE_ID`` on a first start (``LogManager.ensure_meta_properties`` then stores it), so the
broker never runs as -1, which no client can use. A configured id must match the stored one: data
written as one broker is never served as another (Kafka's InconsistentBrokerIdException). With
``broker.id.generation.enable=false`` no id is made up: a first start then needs a configured one. Nor
in a cluster, where Kafka takes a unique id above ``reserved.broker.max.id`` from ZooKeeper's
``/brokers/seqid``: odradek does not, so a cluster member's first start needs one too.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Final

from odradek.storage.checkpoints import CheckpointFormatError, read_meta_properties
from odradek.storage.errors import LogStorageError

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
