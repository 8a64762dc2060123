"""`odradek transactions list|describe|abort`, shaped like kafka-transactions.

APIs used, through odradek's own wire client (cli/wire.py: librdkafka's AdminClient has none of them):
ListTransactions (list), DescribeTransactions (describe), DescribeProducers then WriteTxnMarkers
(abort: as Kafka's tool, for a hanging transaction found by its partition and first offset, an ABORT
marker is written straight to the partition with the producer's id and epoch). The requests go to the
bootstrap server, which on a single node is every transactional id's coordinator.
"""

from __future__ import annotations

import argparse
from typing import Any

from odradek.cli.arguments import add_connection_arguments, non_negative_int
from odradek.cli.client import check_reachable, client_config
from odradek.cli.errors import CliError, command
from odradek.cli.output import table
from odradek.cli.wire import call
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages import describe_producers as dp
from odradek.protocol.messages import write_txn_markers as wtm
from odradek.protocol.messages.describe_transactions import DescribeTransactionsRequest
from odradek.protocol.messages.list_transactions import ListTransactionsRequest

EXAMPLES = """examples:
  odradek transactions list
  odradek transactions list --state Ongoing --state PrepareCommit
  odradek transactions describe --transactional-id copier-1
  odradek transactions abort --topic orders --partition 0 --start-offset 1200
"""
WHAT = "odradek transactions sends its requests without librdkafka (which has no transaction admin calls)"


def add_parser(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subcommands.add_parser(
        "transactions",
        help="list, describe and abort transactions",
        description="List and describe transactions, and abort a hanging one (like kafka-transactions).",
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


def _call(args: argparse.Namespace, request: Any) -> Any:
    check_reachable(args.bootstrap_server, args.request_timeout)
    return call(client_config(args), args.request_timeout, request, WHAT)


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
    response = _call(args, request)
    _check(response.error_code, "ListTransactions")
    if response.unknown_state_filters:
        raise CliError(f"unknown state(s): {', '.join(response.unknown_state_filters)}")
    rows = sorted(
        (t.transactional_id, t.producer_id, t.transaction_state) for t in response.transaction_states
    )
    print(table(("TransactionalId", "ProducerId", "TransactionState"), rows))  # kafka-transactions' names
    return 0


@command("transactions describe")
def run_describe(args: argparse.Namespace) -> int:
    response = _call(args, DescribeTransactionsRequest(transactional_ids=[args.transactional_id]))
    [state] = response.transaction_states
    if state.error_code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND:
        raise CliError(
            f"transactional id '{args.transactional_id}' does not exist", kafka_code=state.error_code
        )
    _check(state.error_code, "DescribeTransactions")
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
    answer = _call(args, request).topics[0].partitions[0]
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
    result = _call(args, wtm.WriteTxnMarkersRequest(markers=[marker]))
    _check(result.markers[0].topics[0].partitions[0].error_code, "WriteTxnMarkers")
    where = f"{topic}-{partition} offset {args.start_offset}"
    print(f"aborted the transaction of producer {producer.producer_id} at {where}")
    return 0
