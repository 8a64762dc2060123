"""A new controller's decision for the replicas that registered again after their partition's state
was written (restarted while no controller watched): they leave the ISR and its leadership when a
replica that stayed registered can take their place (#17, the fault harness's lost values)."""

from __future__ import annotations

from odradek.cluster.controller.broker_changes import leader_and_isr_without_restarted
from odradek.cluster.controller.context import (
    UNKNOWN_ZXID,
    ControllerContext,
    LiveBroker,
    PartitionState,
    TopicPartition,
)
from odradek.cluster.zookeeper.broker_znode import BrokerRegistration
from odradek.cluster.zookeeper.topic_znodes import PartitionStateZnode

TP = TopicPartition("t", 0)
#: The zxid of the partition state's last write.
WRITTEN = 1000


def _context(epochs: dict[int, int]) -> ControllerContext:
    """Brokers live with these epochs (czxids of their registrations), all replicas of TP."""
    context = ControllerContext(epoch=5, epoch_zk_version=4)
    context.live_brokers = {
        broker: LiveBroker(BrokerRegistration(broker, (), 0), epoch) for broker, epoch in epochs.items()
    }
    context.assignments = {"t": {0: [1, 2, 3]}}
    return context


def _state(leader: int, isr: list[int], written: int = WRITTEN) -> PartitionState:
    return PartitionState(PartitionStateZnode(leader, 7, isr, 4), partition_epoch=9, written_zxid=written)


def test_a_leader_that_restarted_unseen_gives_way_to_an_isr_member_that_stayed() -> None:
    context = _context({1: WRITTEN + 50, 2: WRITTEN - 10, 3: WRITTEN - 20})
    assert leader_and_isr_without_restarted(context, TP, _state(1, [1, 2, 3])) == (2, [2, 3])


def test_a_follower_that_restarted_unseen_leaves_the_isr_and_the_leader_stays() -> None:
    context = _context({1: WRITTEN - 50, 2: WRITTEN + 10, 3: WRITTEN - 20})
    assert leader_and_isr_without_restarted(context, TP, _state(1, [1, 2, 3])) == (1, [1, 3])


def test_nothing_changes_when_every_replica_stayed_registered() -> None:
    context = _context({1: WRITTEN - 50, 2: WRITTEN - 10, 3: WRITTEN - 20})
    assert leader_and_isr_without_restarted(context, TP, _state(1, [1, 2, 3])) is None


def test_nothing_changes_when_every_isr_member_restarted() -> None:
    # none is known to hold more than the others: as Kafka, the state stays
    context = _context({1: WRITTEN + 50, 2: WRITTEN + 10, 3: WRITTEN - 20})
    assert leader_and_isr_without_restarted(context, TP, _state(1, [1, 2])) is None


def test_a_restarted_replica_outside_the_isr_changes_nothing() -> None:
    context = _context({1: WRITTEN - 50, 2: WRITTEN - 10, 3: WRITTEN + 20})
    assert leader_and_isr_without_restarted(context, TP, _state(1, [1, 2])) is None


def test_a_dead_replica_is_left_to_the_failure_handling() -> None:
    # broker 3 is not registered: it is not "restarted", and the dead-broker step takes it out
    context = _context({1: WRITTEN + 50, 2: WRITTEN - 10})
    assert leader_and_isr_without_restarted(context, TP, _state(1, [1, 2, 3])) == (2, [2, 3])


def test_a_state_this_controller_wrote_is_not_compared() -> None:
    context = _context({1: WRITTEN + 50, 2: WRITTEN - 10, 3: WRITTEN - 20})
    assert leader_and_isr_without_restarted(context, TP, _state(1, [1, 2, 3], UNKNOWN_ZXID)) is None
