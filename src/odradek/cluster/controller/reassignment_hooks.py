"""Where partition reassignment learns of ISR changes (Kafka's processAlterPartition calls
onPartitionReassignment for a partition being reassigned once its ISR changed).

Reassignment (keys 45/46) completes a move when the new replicas have joined the ISR: the controller
calls `on_isr_change` for every partition an AlterPartition answered with success (a repeated request
included, as Kafka's maybeCompleteReassignment). Nothing is being reassigned yet, so it does
nothing; the reassignment code replaces its body.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from odradek.cluster.controller.term import ControllerTerm


async def on_isr_change(term: ControllerTerm, topic: str, partition: int) -> None:
    """AlterPartition left `topic`-`partition` with the ISR its leader asked for (the context and
    ZooKeeper hold it); runs on the controller's event task, so it may write through `term`."""
    del term, topic, partition  # no reassignment to complete yet
