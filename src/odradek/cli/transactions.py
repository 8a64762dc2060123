"""`odradek transactions list|describe|abort|force-terminate`, shaped like kafka-transactions.

APIs used, through odradek's own wire client (cli/wire.py: librdkafka's AdminClient has none of them):
ListTransactions (list), DescribeTransactions (describe), DescribeProducers then WriteTxnMarkers
(abort: as Kafka's tool, for a hanging transaction found by its partition and first offset, an ABORT
marker is written straight to the partition with the producer's id and epoch). As Kafka's Admin client
does: list asks every broker (each answers for the transactional ids it coordinates), describe asks the
id's coordinator (FindCoordinator), abort asks the partition's leader (Metadata).

force-terminate (Kafka 4.x's forceTerminateTransaction, KIP-939) asks the transactional id's
coordinator (FindCoordinator) for a new epoch with InitProducerId, keepPreparedTxn=false, as
Admin.fenceProducers does: the coordinator aborts the open transaction on every partition, prepared
two-phase-commit ones included, and fences the producer that wrote it. Unlike Kafka's, an unknown
transactional id is refused instead of created.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from odradek.cli.arguments import add_connection_arguments, non_negative_int
from odradek.cli.client import ClientConfig, check_reachable, client_config
from odradek.cli.errors import CliError, command
from odradek.cli.output import table
from odradek.cli.wire import call
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages import describe_producers as dp
from odradek.protocol.messages import write_txn_markers as wtm
from odradek.protocol.messages.describe_transactions import DescribeTransactionsRequest, TransactionState
from odradek.protocol.messages.find_coordinator import FindCoordinatorRequest
from odradek.protocol.messages.init_producer_id import InitProducerIdRequest
from odradek.protocol.messages.list_transactions import ListTransactionsRequest
from odradek.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic

EXAMPLES = """examples:
  odradek transactions list
  odradek transactions list --state Ongoing --state PrepareCommit
  odradek transactions describe --transactional-id copier-1
  odradek transactions abort --topic orders --partition 0 --start-offset 1200
  odradek transactions force-terminate --transactional-id spark-sink-3
"""
WHAT = "odradek transactions sends its requests without librdkafka (which has no transaction admin calls)"


def add_parser(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subcommands.add_parser(
        "transactions",
        help="list, describe and abort transactions",
        description="List and describe transactions, abort a hanging one, or end a transactional id's "
        "open transaction (like kafka-transactions).",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")

    listing = actions.add_parser("list", help="list transactional ids", description="List transactional ids.")
    listing.add_argument(
        "--state",
        action="append",
        default=[],
        metavar="STATE",
        help="only this state (Kafka's name); repeatable",
    )
    listing.add_argument("--producer-id", action="append", type=int, default=[], help="only this producer id")
    listing.add_argument(
        "--duration", type=non_negative_int, metavar="MS", help="only transactions open longer than MS"
    )
    add_connection_arguments(listing)
    listing.set_defaults(run=run_list)

    describe = actions.add_parser(
        "describe",
        help="a transactional id's state",
        description="The producer id and epoch, state, timeout, start time and partitions of a transaction.",
    )
    describe.add_argument("--transactional-id", required=True, metavar="ID")
    add_connection_arguments(describe)
    describe.set_defaults(run=run_describe)

    abort = actions.add_parser(
        "abort",
        help="abort a hanging transaction",
        description="Write an ABORT marker for the open transaction that starts at --start-offset of a "
        "partition (found with DescribeProducers), releasing read_committed consumers.",
    )
    abort.add_argument("--topic", required=True)
    abort.add_argument("--partition", required=True, type=non_negative_int)
    abort.add_argument("--start-offset", required=True, type=non_negative_int, metavar="OFFSET")
    add_connection_arguments(abort)
    abort.set_defaults(run=run_abort)

    terminate = actions.add_parser(
        "force-terminate",
        aliases=["forceTerminateTransaction"],
        help="abort a transactional id's open transaction, prepared two-phase ones too",
        description="Abort the transaction open on a transactional id, a prepared two-phase-commit one "
        "included, on every partition, and fence the producer that wrote it (kafka-transactions "
        "forceTerminateTransaction, KIP-939).",
    )
    terminate.add_argument(
        "--transactional-id", "--transactionalId", dest="transactional_id", required=True, metavar="ID"
    )
    add_connection_arguments(terminate)
    terminate.set_defaults(run=run_force_terminate)


def _brokers(args: argparse.Namespace, config: ClientConfig) -> list[str]:
    """host:port of every broker of the cluster, from the bootstrap server's Metadata."""
    answer = call(config, args.request_timeout, MetadataRequest(topics=[]), WHAT)
    return [f"{b.host}:{b.port}" for b in sorted(answer.brokers, key=lambda b: b.node_id)]


def _leader(args: argparse.Namespace, config: ClientConfig, topic: str, partition: int) -> ClientConfig:
    """The client settings with the partition's leader as the server to ask."""
    request = MetadataRequest(topics=[MetadataRequestTopic(name=topic)], allow_auto_topic_creation=False)
    answer = call(config, args.request_timeout, request, WHAT)
    [found] = answer.topics
    _check(found.error_code, "Metadata")
    leader = next((p.leader_id for p in found.partitions if p.partition_index == partition), None)
    if leader is None:
        raise CliError(f"{topic} has no partition {partition}")
    address = next((f"{b.host}:{b.port}" for b in answer.brokers if b.node_id == leader), None)
    if address is None:
        raise CliError(f"{topic}-{partition} has no leader now", kafka_code=ErrorCode.LEADER_NOT_AVAILABLE)
    return {**config, "bootstrap.servers": address}


def _check(code: int, api: str) -> None:
    if code:
        error = ErrorCode.for_code(code)
        raise CliError(f"{api} failed: {error.message.rstrip('.')} ({error.name})", kafka_code=code)


@command("transactions list")
def run_list(args: argparse.Namespace) -> int:
    request = ListTransactionsRequest(
        state_filters=args.state,
        producer_id_filters=args.producer_id,
        duration_filter=-1 if args.duration is None else args.duration,
    )
    check_reachable(args.bootstrap_server, args.request_timeout)
    config = client_config(args)
    rows = []
    for broker in _brokers(args, config):
        response = call({**config, "bootstrap.servers": broker}, args.request_timeout, request, WHAT)
        _check(response.error_code, "ListTransactions")
        if response.unknown_state_filters:
            raise CliError(f"unknown state(s): {', '.join(response.unknown_state_filters)}")
        rows += [
            (t.transactional_id, t.producer_id, t.transaction_state) for t in response.transaction_states
        ]
    rows.sort()
    print(table(("TransactionalId", "ProducerId", "TransactionState"), rows))  # kafka-transactions' names
    return 0


@command("transactions describe")
def run_describe(args: argparse.Namespace) -> int:
    check_reachable(args.bootstrap_server, args.request_timeout)
    state = _describe_at_coordinator(args, client_config(args), args.transactional_id)
    partitions = ",".join(f"{t.topic}-{p}" for t in state.topics for p in t.partitions) or "-"
    headers = (  # kafka-transactions' column names
        "TransactionalId",
        "ProducerId",
        "ProducerEpoch",
        "TransactionState",
        "TransactionTimeoutMs",
        "CurrentTransactionStartTimeMs",
        "TopicPartitions",
    )
    row = (
        state.transactional_id,
        state.producer_id,
        state.producer_epoch,
        state.transaction_state,
        state.transaction_timeout_ms,
        state.transaction_start_time_ms,
        partitions,
    )
    print(table(headers, [row]))
    return 0


@command("transactions abort")
def run_abort(args: argparse.Namespace) -> int:
    topic, partition = args.topic, args.partition
    request = dp.DescribeProducersRequest(topics=[dp.TopicRequest(name=topic, partition_indexes=[partition])])
    check_reachable(args.bootstrap_server, args.request_timeout)
    leader = _leader(args, client_config(args), topic, partition)
    answer = call(leader, args.request_timeout, request, WHAT).topics[0].partitions[0]
    _check(answer.error_code, "DescribeProducers")
    producer = next(
        (p for p in answer.active_producers if p.current_txn_start_offset == args.start_offset), None
    )
    if producer is None:
        raise CliError(f"no open transaction starts at offset {args.start_offset} of {topic}-{partition}")
    marker = wtm.WritableTxnMarker(
        producer_id=producer.producer_id,
        producer_epoch=producer.producer_epoch,
        transaction_result=False,
        topics=[wtm.WritableTxnMarkerTopic(name=topic, partition_indexes=[partition])],
        coordinator_epoch=max(producer.coordinator_epoch, 0),
    )
    result = call(leader, args.request_timeout, wtm.WriteTxnMarkersRequest(markers=[marker]), WHAT)
    _check(result.markers[0].topics[0].partitions[0].error_code, "WriteTxnMarkers")
    where = f"{topic}-{partition} offset {args.start_offset}"
    print(f"aborted the transaction of producer {producer.producer_id} at {where}")
    return 0


#: Answers that clear by themselves while the coordinator ends the transaction (or moves, or loads).
_RETRIABLE = frozenset(
    {
        ErrorCode.CONCURRENT_TRANSACTIONS,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
    }
)
_RETRY_PAUSE_S = 0.1


@command("transactions force-terminate")
def run_force_terminate(args: argparse.Namespace) -> int:
    txn_id = args.transactional_id
    check_reachable(args.bootstrap_server, args.request_timeout)
    config = client_config(args)
    before = _describe_at_coordinator(args, config, txn_id)
    # As Admin.fenceProducers: no producer id or epoch, the request timeout as the transaction timeout;
    # keepPreparedTxn and enable2Pc stay false, so whatever is open is aborted.
    request = InitProducerIdRequest(
        transactional_id=txn_id,
        transaction_timeout_ms=int(args.request_timeout * 1000),
        producer_id=-1,
        producer_epoch=-1,
    )
    deadline = time.monotonic() + args.request_timeout
    while True:
        answer = call(_coordinator(args, config, txn_id), args.request_timeout, request, WHAT)
        code = ErrorCode.for_code(answer.error_code)
        if code not in _RETRIABLE or time.monotonic() > deadline:
            break
        time.sleep(_RETRY_PAUSE_S)  # CONCURRENT_TRANSACTIONS: the abort's markers are being written
    _check(answer.error_code, "InitProducerId")
    print(_terminated(before, answer.producer_id, answer.producer_epoch))
    return 0


def _terminated(before: TransactionState, producer_id: int, epoch: int) -> str:
    partitions = ",".join(f"{t.topic}-{p}" for t in before.topics for p in t.partitions)
    fenced = f"producer {producer_id} is at epoch {epoch} now: the earlier ones are fenced"
    if before.transaction_state == "Ongoing":
        return f"aborted the open transaction of {before.transactional_id} on {partitions}; {fenced}"
    if before.transaction_state == "PrepareCommit":  # decided: its coordinator completes the commit
        return f"{before.transactional_id} was committing: its transaction is committed; {fenced}"
    return f"{before.transactional_id} had no open transaction; {fenced}"


def _describe_at_coordinator(args: argparse.Namespace, config: ClientConfig, txn_id: str) -> TransactionState:
    request = DescribeTransactionsRequest(transactional_ids=[txn_id])
    answer = call(_coordinator(args, config, txn_id), args.request_timeout, request, WHAT)
    state: TransactionState = answer.transaction_states[0]
    if state.error_code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND:
        # InitProducerId would create it: refused, so that a mistyped id changes nothing.
        raise CliError(f"transactional id '{txn_id}' does not exist", kafka_code=state.error_code)
    _check(state.error_code, "DescribeTransactions")
    return state


def _coordinator(args: argparse.Namespace, config: ClientConfig, txn_id: str) -> ClientConfig:
    """The client settings with the transactional id's coordinator as the server to ask."""
    request = FindCoordinatorRequest(key=txn_id, key_type=1, coordinator_keys=[txn_id])
    answer = call(config, args.request_timeout, request, WHAT)
    found: Any = answer.coordinators[0] if answer.coordinators else answer
    _check(found.error_code, "FindCoordinator")
    return {**config, "bootstrap.servers": f"{found.host}:{found.port}"}
