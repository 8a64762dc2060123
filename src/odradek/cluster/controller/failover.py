"""What a broker does on becoming controller, once it holds the epoch and has read the cluster state
(Kafka's KafkaController.onControllerFailover, after its reads): the channels to the live brokers, the
watches of the topics, the stale log-dir notifications dropped, UpdateMetadata then LeaderAndIsr to
every live broker, the brokers that restarted or died while no controller watched, the partitions
without a leader elected, and the deletions and reassignments a previous controller left half-way."""

from __future__ import annotations

import asyncio

from odradek.cluster.controller import broker_changes, leader_elections, reassignment, topic_changes
from odradek.cluster.controller.term import ControllerTerm
from odradek.cluster.zookeeper.log_dir_events import delete_log_dir_events, read_log_dir_events


async def on_controller_failover(term: ControllerTerm) -> None:
    context, fence = term.context, term.fence
    for broker_id in sorted(context.live_brokers):
        term.open_channel(broker_id)
    for topic in context.assignments:
        term.watch_topic(topic)
    # As Kafka's onControllerFailover: the notifications a previous controller left are dropped; the
    # LeaderAndIsr sent to every replica below finds the replicas on failed log dirs anyway.
    stale_events = await asyncio.to_thread(read_log_dir_events, term.zk)
    await asyncio.to_thread(delete_log_dir_events, fence, sorted(stale_events))
    # Brokers that restarted while no controller watched lead nothing and leave the ISRs they were in
    # before they are sent anything (they may have lost their unflushed tails)
    await broker_changes.on_restarts_no_controller_saw(term)
    # UpdateMetadata to every live broker before any LeaderAndIsr (KafkaController.onControllerFailover)
    term.send_update_metadata(context.live_broker_ids(), list(context.all_partitions()))
    # Then LeaderAndIsr to every live replica of every partition with a live leader (Kafka's
    # ReplicaStateMachine.startup): decisions the previous controller wrote but never delivered
    # (it stopped with them queued, as in its own controlled shutdown) reach the brokers now, else
    # a leader stays at an old epoch and refuses its followers' fetches at the new one.
    term.send_leader_and_isr(context.partitions_with_live_leader())
    # Brokers that died while no controller watched (the last controller among them) leave the ISRs
    # now, before partitions without a leader are elected, as Kafka's ReplicaStateMachine.startup
    # moves their replicas to OfflineReplica ahead of PartitionStateMachine.startup: else an acks=all
    # produce waits replica.lag.time.max.ms for a dead follower.
    assigned = {r for tp in context.all_partitions() for r in context.replicas(tp)}
    dead = assigned - context.live_broker_ids()
    if dead:
        await broker_changes.on_broker_failure(term, dead)
    await leader_elections.online_partitions(term, context.partitions_without_live_leader())
    await topic_changes.on_topic_deletion(term)
    # reassignments a previous controller left half-way (KafkaController.initializePartitionReassignments)
    started = await reassignment.on_zk_reassignment(term)
    await reassignment.resume_reassignments(term, skip=started)
