"""An IsrUpdater for tests, until the AlterPartition sender is wired in: the leader writes its
partition's state znode itself, compare-and-set on the partition epoch (what Kafka's leaders did
before KIP-497). The controller re-reads a znode whose version moved before it decides again, so its
elections see the ISR written here.

`python -m tests.support.zk_isr_writer broker ...` runs the odradek command with it installed.
"""

from __future__ import annotations

import asyncio
import sys

from kazoo.exceptions import BadVersionError

from odradek.cluster.replication.isr_updates import CommittedIsr, IsrUpdateFailed, ProposedIsr
from odradek.cluster.zookeeper import paths, topics
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.topic_znodes import PartitionStateZnode
from odradek.handlers.services import Services
from odradek.protocol.error_codes import ErrorCode
from odradek.server.zookeeper_member import ZooKeeperMember


class ZkIsrWriter:
    def __init__(self, zk: ZooKeeperClient) -> None:
        self.zk = zk
        self._in_flight: set[tuple[str, int]] = set()

    async def submit(self, proposal: ProposedIsr) -> CommittedIsr:
        key = (proposal.topic, proposal.partition)
        if key in self._in_flight:
            raise IsrUpdateFailed(ErrorCode.OPERATION_NOT_ATTEMPTED)
        self._in_flight.add(key)
        try:
            return await asyncio.to_thread(self._write, proposal)
        finally:
            self._in_flight.discard(key)

    def _write(self, proposal: ProposedIsr) -> CommittedIsr:
        found = topics.partition_state(self.zk, proposal.topic, proposal.partition)
        if found is None:
            raise IsrUpdateFailed(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        state, version = found
        if state.leader_epoch != proposal.leader_epoch:
            raise IsrUpdateFailed(ErrorCode.FENCED_LEADER_EPOCH)
        if version != proposal.partition_epoch:
            raise IsrUpdateFailed(ErrorCode.INVALID_UPDATE_VERSION)
        written = PartitionStateZnode(
            state.leader, state.leader_epoch, list(proposal.new_isr), state.controller_epoch
        )
        path = paths.partition_state(proposal.topic, proposal.partition)
        try:
            stat = self.zk.write(self.zk.kazoo.set_async, path, written.serialize(), version)
        except BadVersionError:
            raise IsrUpdateFailed(ErrorCode.INVALID_UPDATE_VERSION) from None
        return CommittedIsr(state.leader, state.leader_epoch, tuple(proposal.new_isr), int(stat.version))


def _updater(member: ZooKeeperMember, _services: Services) -> ZkIsrWriter:
    assert member.zk is not None
    return ZkIsrWriter(member.zk)


def main() -> int:
    from odradek.cli.main import main as odradek_main
    from odradek.server.broker import Broker

    Broker.isr_updater_factory = _updater
    return odradek_main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
