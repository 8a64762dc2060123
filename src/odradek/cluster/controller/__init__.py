"""The controller of a ZooKeeper-mode cluster, as Kafka 3.9's KafkaController (kafka/controller/).

One broker at a time is controller, elected through /controller (`zookeeper.controller_election`). It
keeps a view of the cluster (`context`), learns of changes through ZooKeeper watches that only put
events on its queue (`events`, `event_manager`: one task consumes them, one at a time, as Kafka's
ControllerEventManager thread), decides leaders with Kafka's election rules (`election`), writes
partition states through its epoch fence (`partition_states`) and tells brokers with LeaderAndIsr,
UpdateMetadata and StopReplica (`requests` builds them, `channel` sends them). `controller` ties it
together: `KafkaController(zk, config)`, `await start()`, `await stop()`.

Brokers learn only from those requests: nothing here touches a broker's own state.
"""
