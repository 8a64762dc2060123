"""The admin side of transactions: DescribeTransactions (65) and ListTransactions (66), answered from the
transaction coordinator's metadata, and DescribeProducers (61), answered from a partition's producer
state (what `kafka-transactions.sh` and `odradek transactions` show).

Version notes:
- ListTransactions v1 adds `duration_filter` (transactions running longer than that many ms), v2 a
  regular expression on the transactional id (KIP-1152): RE2 syntax matched against the whole id, as
  Kafka's RE2/J, off the event loop (coordinator/client_regex.py); one RE2 refuses is
  INVALID_REGULAR_EXPRESSION, but only when there is an id to match (Kafka compiles it even with none);
  a broker busy with other principals' patterns answers COORDINATOR_LOAD_IN_PROGRESS, which the admin
  client retries after a backoff. Unknown state names come back in `unknown_state_filters`, as Kafka
  answers. A broker still loading a partition answers COORDINATOR_LOAD_IN_PROGRESS with what it has.
- States are Kafka's names (Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit,
  CompleteAbort, Dead, PrepareEpochFence).
- With an authorizer, as Kafka's KafkaApis: DescribeTransactions needs DESCRIBE on each transactional id
  (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), ListTransactions lists only the ids the principal may
  DESCRIBE, DescribeProducers needs READ on the topic (TOPIC_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from odradek.coordinator.regex_lane import Requester
from odradek.coordinator.runtime import PartitionState
from odradek.coordinator.txn_metadata import TxnState
from odradek.handlers._common.authorization import authorize
from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.coordinators import transaction_coordinator
from odradek.handlers._common.leadership import replica_refusal
from odradek.handlers._common.registry import handles
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.messages import describe_producers as dp
from odradek.protocol.messages import describe_transactions as dt
from odradek.protocol.messages import list_transactions as lt
from odradek.security.acl import AclOperation, ResourceType

_STATE_NAMES = {state.kafka_name: state for state in TxnState}


@handles(ApiKey.DESCRIBE_TRANSACTIONS, 0, 0)
async def handle_describe_transactions(
    request: dt.DescribeTransactionsRequest, context: RequestContext
) -> dt.DescribeTransactionsResponse:
    states = []
    for transactional_id in request.transactional_ids:
        if not authorize(context, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, transactional_id):
            states.append(_empty_state(transactional_id, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
            continue
        try:
            coordinator = transaction_coordinator(context)
            coordinator.state_log.check_coordinator(transactional_id)
            metadata = coordinator.state_log.txns.get(transactional_id)
            if metadata is None:
                raise KafkaError(ErrorCode.TRANSACTIONAL_ID_NOT_FOUND)
        except KafkaError as error:
            states.append(_empty_state(transactional_id, error.error_code))
            continue
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(metadata.partitions):
            by_topic.setdefault(topic, []).append(partition)
        states.append(
            dt.TransactionState(
                error_code=ErrorCode.NONE,
                transactional_id=transactional_id,
                transaction_state=metadata.state.kafka_name,
                transaction_timeout_ms=metadata.timeout_ms,
                transaction_start_time_ms=metadata.start_ms,
                producer_id=metadata.producer_id,
                producer_epoch=metadata.producer_epoch,
                topics=[dt.TopicData(topic=t, partitions=p) for t, p in by_topic.items()],
            )
        )
    return dt.DescribeTransactionsResponse(transaction_states=states)


def _empty_state(transactional_id: str, error: ErrorCode) -> dt.TransactionState:
    return dt.TransactionState(
        error_code=error,
        transactional_id=transactional_id,
        transaction_state="",
        transaction_timeout_ms=0,
        transaction_start_time_ms=-1,
        producer_id=-1,
        producer_epoch=-1,
        topics=[],
    )


@handles(ApiKey.LIST_TRANSACTIONS, 0, 2)
async def handle_list_transactions(
    request: lt.ListTransactionsRequest, context: RequestContext
) -> lt.ListTransactionsResponse:
    try:
        coordinator = transaction_coordinator(context)
    except KafkaError as error:
        return lt.ListTransactionsResponse(error_code=error.error_code)
    unknown = [name for name in request.state_filters if name not in _STATE_NAMES]
    wanted = {_STATE_NAMES[name] for name in request.state_filters if name in _STATE_NAMES}
    producers = set(request.producer_id_filters)
    now = coordinator.now_ms()
    listed = []
    for metadata in coordinator.transactions():
        if (request.state_filters and metadata.state not in wanted) or (
            producers and metadata.producer_id not in producers
        ):
            continue
        if request.duration_filter >= 0 and (
            metadata.state is not TxnState.ONGOING or now - metadata.start_ms < request.duration_filter
        ):
            continue
        # Authorized first: the pattern never runs on an id the principal may not see (its match time
        # would tell the id's prefix), which Kafka's order (match, then filter) allows.
        if not authorize(
            context, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, metadata.transactional_id
        ):
            continue
        listed.append(
            lt.TransactionState(
                transactional_id=metadata.transactional_id,
                producer_id=metadata.producer_id,
                transaction_state=metadata.state.kafka_name,
            )
        )
    # Null or empty: no filter, as Kafka. With no id left to match, nothing is compiled (Kafka compiles
    # first, so a pattern RE2 refuses is reported even then): the request needs no ACL, and anyone
    # could otherwise make the broker compile.
    if request.transactional_id_pattern and listed:
        try:
            ids = [state.transactional_id for state in listed]
            requester = Requester(context.principal, context.closed)
            pattern = request.transactional_id_pattern
            matched = set(
                await context.services.regexes.matching(pattern, ids, "Transaction ID pattern", requester)
            )
        except KafkaError as error:
            return lt.ListTransactionsResponse(error_code=error.error_code)
        listed = [state for state in listed if state.transactional_id in matched]
    loading = any(s is PartitionState.LOADING for s in coordinator.state_log.states.values())
    return lt.ListTransactionsResponse(
        error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if loading else ErrorCode.NONE,
        unknown_state_filters=unknown,
        transaction_states=listed,
    )


@handles(ApiKey.DESCRIBE_PRODUCERS, 0, 0)
async def handle_describe_producers(
    request: dp.DescribeProducersRequest, context: RequestContext
) -> dp.DescribeProducersResponse:
    topics = []
    for topic in request.topics:
        partitions = []
        if not authorize(context, AclOperation.READ, ResourceType.TOPIC, topic.name):
            partitions = [
                dp.PartitionResponse(partition_index=index, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                for index in topic.partition_indexes
            ]
            topics.append(dp.TopicResponse(name=topic.name, partitions=partitions))
            continue
        for index in topic.partition_indexes:
            # any local replica answers, a follower's too (ReplicaManager.activeProducerState)
            refused = replica_refusal(context, topic.name, index)
            log = context.services.logs.get_log(topic.name, index)
            if refused is not None or log is None:
                error = refused.error_code if refused is not None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                partitions.append(dp.PartitionResponse(partition_index=index, error_code=error))
                continue
            active = [
                dp.ProducerState(
                    producer_id=entry.producer_id,
                    producer_epoch=entry.producer_epoch,
                    last_sequence=entry.last_seq,
                    last_timestamp=entry.last_timestamp,
                    coordinator_epoch=entry.coordinator_epoch,
                    current_txn_start_offset=(
                        -1 if entry.current_txn_first_offset is None else entry.current_txn_first_offset
                    ),
                )
                for entry in log.producer_state.producers.values()
            ]
            partitions.append(
                dp.PartitionResponse(
                    partition_index=index, error_code=ErrorCode.NONE, active_producers=active
                )
            )
        topics.append(dp.TopicResponse(name=topic.name, partitions=partitions))
    return dp.DescribeProducersResponse(topics=topics)
