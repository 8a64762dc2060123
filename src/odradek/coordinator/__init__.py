"""Coordinators: consumer groups and committed offsets, producer ids and transactions.

The group coordinator, module by module:

- `group_coordinator`: the service the handlers call, one method per request.
- `runtime`: `__consumer_offsets` partitions as shards; loading by replay; appending a step's records
  (`result.CoordinatorResult`) before answering; Java's group-id hash for the partition.
- `shard`: one partition's groups and offsets, and the replay of its records.
- `records`, `consumer_records`: the record formats of `__consumer_offsets`, as Kafka writes them.
- Classic groups: `classic_group` (state and members), `classic_rebalance` (join and sync phases,
  session expiry), `classic_join` (JoinGroup), `classic_members` (SyncGroup, Heartbeat, LeaveGroup).
- KIP-848 groups: `consumer_group` (state), `consumer_protocol` (ConsumerGroupHeartbeat),
  `consumer_reconcile` (current towards target assignment), `consumer_targets` and `assignors`
  (target assignment), `consumer_regexes` (regex subscriptions resolved in the background),
  `consumer_checks`, `consumer_replay`, `consumer_describe`.
- Client regexes (subscriptions, ListTransactions filters): `client_regex` (RE2, matched in
  `regex_worker` processes), `regex_lane` (a worker and its queue, limits, deadline), `regex_frames`
  (their messages).
- Offsets: `offsets` (the store), `offset_requests` (commit, fetch, delete, expiry).
- `group_admin`: DescribeGroups, ListGroups, DeleteGroups. `timer`: keyed loop timers. `settings`.
- Transactional offsets: `shard` holds TxnOffsetCommit records per producer id until the marker
  reaches its partition (`runtime` replays transactional batches and markers the same way).

The transaction coordinator:

- `txn_coordinator`: the service the handlers call (InitProducerId, AddPartitionsToTxn,
  AddOffsetsToTxn, EndTxn, timeouts, expiry), each step appended before it is applied.
- `txn_state_log`: `__transaction_state`: creation, loading by replay, appends, leadership.
- `txn_metadata`: a transactional id's state (Kafka's TransactionMetadata and its states).
- `txn_records`: the TransactionLog key and value formats. `txn_markers`: COMMIT/ABORT markers into
  the partitions this broker leads (also WriteTxnMarkers). `producer_ids`: the producer-id blocks.

The share coordinator (KIP-932), `share/`:

- `share/coordinator`: the share-partition states of the keys this broker coordinates; the steps of
  the five *ShareGroupState APIs, each appended and replicated before it is applied and answered.
- `share/shard`: one `__share_group_state` partition's states, Kafka's checks and fencing, replay.
- `share/records`: ShareSnapshot and ShareUpdate, Kafka 4.4's format. `share/batches`: combining
  state batches (a newer one wins, nothing below the start offset).
"""
