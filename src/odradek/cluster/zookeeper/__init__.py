"""ZooKeeper as the cluster's coordination store, in Kafka 3.9's znode layout (kafka/zk/ZkData.scala).

Kafka's own ZooKeeper tooling can read what odradek writes here and the other way round: the same
paths (`paths`), the same JSON field names, types and "version" values (`*_znodes`), and the same
protocols on top: controller election and epoch-fenced controller writes (`controller_election`,
`controller_fence`), ephemeral broker registration whose czxid is the broker epoch (`brokers`),
compare-and-set partition states (`topics`), config change notifications (`configs`) and producer-id
blocks (`producer_ids`).

Threads and the event loop: kazoo is thread-based (its own connection and event threads) while the
broker is one asyncio loop. Every function here blocks and is meant to run off the loop, through
`asyncio.to_thread` (one ZooKeeper round trip or a few; never on the hot path of a request). Watches
and session changes arrive on kazoo's thread and are handed to the loop with `call_soon_threadsafe`
(`loop_delivery`), so broker state is only ever touched on the loop.

Every function takes its parameters explicitly (connect string with optional chroot, session and
connection timeouts, broker id). The broker wires them in `server/zookeeper_member.py` (session,
cluster id, registration, controller) and the ZooKeeper stores of `cluster/metadata/` (topics, configs,
ACLs, credentials, quotas, producer-id blocks, delegation tokens); docs/operations.md,
"Running a cluster", is the operator's side.
"""
