"""The controller of a ZooKeeper-mode cluster, as Kafka 3.9's KafkaController (kafka/controller/).

One broker at a time is controller, elected through /controller (`zookeeper.controller_election`).
ZooKeeper watches only put events on its queue (`events`, `event_manager`: one task consumes them,
one at a time, as Kafka's ControllerEventManager thread). `controller` runs the election, the
failover and the resignation, and hands every other event, while it is controller, to the handler
modules with its `term` (fence, context, channels for one controller epoch): `broker_changes`,
`topic_changes`, `leader_elections` (with Kafka's rules in `election` and `rebalance`). The term
writes partition states by compare-and-set behind the epoch fence and sends LeaderAndIsr,
UpdateMetadata and StopReplica (`requests` builds them from the `context`, `channel` sends them).

Use: `KafkaController(zk, ControllerConfig(broker_id=...))`, `await start()`, `await stop()`;
`controlled_shutdown()` and `elect_leaders()` for the broker's request handlers. Brokers learn only
from the requests it sends: nothing here touches a broker's own state.
"""
