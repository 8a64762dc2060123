"""What the active controller does with each event (the match of Kafka's KafkaController.process): the
broker, topic and log-dir changes, the requests other brokers sent (controlled shutdown, AlterPartition,
producer ids) and the admin requests (elections, reassignments). Election, resignation and failover are
``controller.py``'s: only a controller with a term gets here."""

from __future__ import annotations

from odradek.cluster.controller import (
    alter_partition,
    events,
    leader_elections,
    log_dir_failures,
    producer_ids,
    reassignment,
    topic_changes,
)
from odradek.cluster.controller.term import ControllerTerm


async def process_in_term(term: ControllerTerm, event: events.ControllerEvent) -> bool:
    """Handle an event as the controller of ``term``; False for an event it does not handle."""
    if isinstance(event, events.BrokerChange | events.BrokerModification):
        # both re-read every registration: joins, departures, bounces (epochs) and new endpoints
        await term.handle_broker_change()
    elif isinstance(event, events.TopicChange):
        await topic_changes.on_topic_change(term)
    elif isinstance(event, events.PartitionModifications):
        await topic_changes.on_partition_modifications(term, event.topic)
    elif isinstance(event, events.TopicDeletion):
        await topic_changes.on_topic_deletion(term)
    elif isinstance(event, events.LogDirEventNotification):
        await log_dir_failures.on_log_dir_event_notification(term)
    elif isinstance(event, events.LeaderAndIsrResponseReceived):
        await log_dir_failures.on_leader_and_isr_response(term, event.broker_id, event.response)
    elif isinstance(event, events.ControlledShutdown):
        result = await leader_elections.on_controlled_shutdown(term, event.broker_id, event.broker_epoch)
        if not event.done.done():
            event.done.set_result(result)
    elif isinstance(event, events.ElectLeaders):
        errors = await leader_elections.on_elect_leaders(term, event.election_type, event.partitions)
        if not event.done.done():
            event.done.set_result(errors)
    elif isinstance(event, events.UncleanLeaderElectionEnable):
        await leader_elections.online_partitions(term, term.context.partitions_without_live_leader())
    elif isinstance(event, events.TopicUncleanLeaderElectionEnable):
        offline = term.context.partitions_without_live_leader()
        await leader_elections.online_partitions(term, [tp for tp in offline if tp.topic == event.topic])
    elif isinstance(event, events.AutoPreferredReplicaLeaderElection):
        await leader_elections.on_auto_rebalance(term)
    elif isinstance(event, events.AlterPartitionReassignments):
        results = await reassignment.on_alter_reassignments(
            term, event.reassignments, event.allow_replication_factor_change
        )
        if not event.done.done():
            event.done.set_result(results)
    elif isinstance(event, events.ListPartitionReassignments):
        if not event.done.done():
            event.done.set_result(reassignment.list_reassignments(term, event.partitions))
    elif isinstance(event, events.ZkPartitionReassignment):
        await reassignment.on_zk_reassignment(term)
    elif isinstance(event, events.PartitionReassignmentIsrChange):
        await reassignment.on_isr_change(term, *event.partition)
    elif isinstance(event, events.AlterPartition):
        answer = await alter_partition.on_alter_partition(
            term, event.broker_id, event.broker_epoch, event.changes
        )
        if not event.done.done():
            event.done.set_result(answer)
    elif isinstance(event, events.AllocateProducerIds):
        allocated = await producer_ids.on_allocate_producer_ids(term, event.broker_id, event.broker_epoch)
        if not event.done.done():
            event.done.set_result(allocated)
    else:
        return False
    return True
