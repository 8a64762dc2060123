"""Where partition reassignment learns of ISR changes (Kafka's processAlterPartition calls
onPartitionReassignment for a partition being reassigned once its ISR changed).

Reassignment (keys 45/46) completes a move when the new replicas have joined the ISR: the controller
calls `on_isr_change` after every ISR change it wrote for an AlterPartition. Nothing is being
reassigned yet, so it does nothing; the reassignment code replaces its body.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from odradek.cluster.controller.term import ControllerTerm


def on_isr_change(term: ControllerTerm, topic: str, partition: int) -> None:
    """The ISR of `topic`-`partition` changed (the context and ZooKeeper already hold the new one)."""
    del term, topic, partition  # no reassignment to complete yet
