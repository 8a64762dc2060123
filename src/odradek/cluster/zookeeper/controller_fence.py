"""Controller writes fenced by the controller epoch, as Kafka 3.9's KafkaZkClient does them.

Every write a controller makes is a multi that starts with check(/controller_epoch, the zkVersion it
got when elected). Once another broker is elected, that version has moved on: the check fails with
BADVERSION, nothing in the multi is applied, and ControllerMovedError tells the controller to resign.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias

from kazoo.exceptions import BadVersionError, KazooException, NoNodeError, RolledBackError

from odradek.cluster.zookeeper import paths
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.errors import ControllerMovedError, ZnodeVersionMovedError

#: zkVersion meaning "whatever the version" in a set or delete.
ANY_VERSION = -1


@dataclass(frozen=True, slots=True)
class ControllerEpoch:
    """A controller epoch and the zkVersion of /controller_epoch that holds it."""

    epoch: int
    epoch_zk_version: int


@dataclass(frozen=True, slots=True)
class CreateOp:
    """A persistent znode. Kafka creates its data-less znodes (.../partitions) with null data; inside
    a multi kazoo can only write bytes, so they are empty here (nothing ever reads them)."""

    path: str
    data: bytes = b""


@dataclass(frozen=True, slots=True)
class SetDataOp:
    path: str
    data: bytes
    version: int = ANY_VERSION


@dataclass(frozen=True, slots=True)
class DeleteOp:
    path: str
    version: int = ANY_VERSION


@dataclass(frozen=True, slots=True)
class CheckOp:
    """Apply the multi only if the znode's data version is still `version`."""

    path: str
    version: int


ZnodeOp: TypeAlias = CreateOp | SetDataOp | DeleteOp | CheckOp


class ControllerFence:
    """The right to write as controller, for one controller epoch."""

    def __init__(self, zk: ZooKeeperClient, controller_epoch: ControllerEpoch) -> None:
        self.zk = zk
        self.controller_epoch = controller_epoch

    @property
    def epoch(self) -> int:
        return self.controller_epoch.epoch

    @property
    def epoch_zk_version(self) -> int:
        return self.controller_epoch.epoch_zk_version

    def commit(self, ops: Sequence[ZnodeOp]) -> list[object]:
        """Apply `ops` atomically behind the epoch check; their results (created path, new stat, True).

        Raises ControllerMovedError when the epoch moved on, ZnodeVersionMovedError when a CheckOp
        failed, else the first failing op's kazoo error (BadVersionError, NodeExistsError,
        NoNodeError...), with nothing applied.
        """
        transaction = self.zk.kazoo.transaction()
        transaction.check(paths.CONTROLLER_EPOCH, self.epoch_zk_version)
        for op in ops:
            if isinstance(op, CreateOp):
                transaction.create(op.path, op.data)
            elif isinstance(op, SetDataOp):
                transaction.set_data(op.path, op.data, op.version)
            elif isinstance(op, CheckOp):
                transaction.check(op.path, op.version)
            else:
                transaction.delete(op.path, op.version)
        results: list[object] = self.zk.commit(transaction)
        check, op_results = results[0], results[1:]
        if isinstance(check, BadVersionError | NoNodeError):
            raise ControllerMovedError(
                f"controller epoch {self.epoch} is over: {paths.CONTROLLER_EPOCH} is no longer at zkVersion "
                f"{self.epoch_zk_version}, another broker was elected controller"
            )
        failed = next(
            (
                (op, r)
                for op, r in zip(ops, op_results, strict=True)
                if isinstance(r, KazooException) and not isinstance(r, RolledBackError)
            ),
            None,
        )
        if failed is not None:
            op, failure = failed
            if isinstance(op, CheckOp):
                raise ZnodeVersionMovedError(f"{op.path} is no longer at version {op.version}")
            raise failure
        return op_results
