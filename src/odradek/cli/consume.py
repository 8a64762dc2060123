"""`odradek consume`: print a topic's messages, like kafka-console-consumer.

Without --group the partitions are assigned directly and nothing is committed: the start is --offset,
--from-timestamp or --from-beginning, else the end (only new messages). With --group the consumer joins
the group and commits what it printed; --from-beginning then means "where the group has no committed
offset, start at the beginning" (auto.offset.reset=earliest), as in Kafka, while --offset and
--from-timestamp move every assigned partition. It stops at --max-messages, after --timeout-ms without
a message, or on Ctrl-C / SIGTERM, and then says on stderr how many messages it printed.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from types import FrameType
from typing import TYPE_CHECKING

from odradek.cli.arguments import (
    add_connection_arguments,
    non_negative_int,
    positive_int,
    separator,
    timestamp_ms,
)
from odradek.cli.client import check_reachable, client_config, topic_partitions
from odradek.cli.errors import USAGE, CliError, command, kafka_error_message
from odradek.cli.message_format import FORMATS, Layout, format_message
from odradek.cli.output import plural

if TYPE_CHECKING:
    from confluent_kafka import Consumer, KafkaError, TopicPartition

#: confluent-kafka wants a group id even for a consumer that only assigns and never commits.
NO_GROUP = "odradek-cli-no-group"

EXAMPLES = """examples:
  odradek consume --topic orders --from-beginning --max-messages 10
  odradek consume --topic orders --print-key --print-offset --key-separator ' | '
  odradek consume --topic orders --partition 0 --offset 42 --format json
  odradek consume --topic orders --from-timestamp 2024-05-01T12:00:00Z --timeout-ms 5000
  odradek consume --topic orders --group billing
"""


def add_parser(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subcommands.add_parser(
        "consume",
        help="print a topic's messages",
        description="Print a topic's messages, one a line (like kafka-console-consumer). Ctrl-C stops it.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--topic", required=True, help="the topic to read")
    parser.add_argument(
        "--group", help="join this consumer group and commit offsets (default: no group, nothing committed)"
    )
    parser.add_argument("--partition", type=non_negative_int, help="read only this partition")
    start = parser.add_argument_group("where to start (default: the end, or the group's committed offsets)")
    start_choice = start.add_mutually_exclusive_group()
    start_choice.add_argument("--from-beginning", action="store_true", help="start at the earliest message")
    start_choice.add_argument(
        "--offset",
        type=_offset,
        metavar="N|earliest|latest",
        help="start at this offset (N needs --partition)",
    )
    start_choice.add_argument(
        "--from-timestamp",
        type=timestamp_ms,
        metavar="TIME",
        help="start at the first message at or after TIME: epoch milliseconds or ISO-8601",
    )
    stop = parser.add_argument_group("when to stop (default: Ctrl-C)")
    stop.add_argument("--max-messages", type=positive_int, metavar="N", help="after printing N messages")
    stop.add_argument("--timeout-ms", type=positive_int, metavar="MS", help="after MS without a new message")
    output = parser.add_argument_group("output")
    output.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="text (default; bytes that are not UTF-8 shown escaped), raw (bytes as stored), "
        "json (one object a line with every field)",
    )
    output.add_argument("--print-key", action="store_true", help="the key before the value")
    output.add_argument("--print-headers", action="store_true", help="headers as k:v,k2:v2")
    output.add_argument(
        "--print-timestamp", action="store_true", help="CreateTime:<ms> or LogAppendTime:<ms>"
    )
    output.add_argument("--print-partition", action="store_true", help="Partition:<n>")
    output.add_argument("--print-offset", action="store_true", help="Offset:<n>")
    output.add_argument(
        "--key-separator", type=separator, default="\t", metavar="SEP", help=r"between fields (default: \t)"
    )
    add_connection_arguments(parser)
    parser.set_defaults(run=run)


@command("consume")
def run(args: argparse.Namespace) -> int:
    from confluent_kafka import Consumer

    check_reachable(args.bootstrap_server, args.request_timeout)
    settings: dict[str, str | int | float | bool] = {
        "group.id": args.group or NO_GROUP,
        "enable.auto.commit": args.group is not None,
        "enable.auto.offset.store": False,  # only what was printed counts as consumed
        "auto.offset.reset": "earliest" if args.from_beginning else "latest",
    }
    consumer = Consumer(client_config(args, **settings))
    printed = 0
    try:
        partitions = topic_partitions(consumer, args.topic, args.bootstrap_server, args.request_timeout)
        if args.partition is not None and args.partition not in partitions:
            raise CliError(
                f"topic '{args.topic}' has no partition {args.partition} (it has {len(partitions)})"
            )
        if isinstance(args.offset, int) and args.partition is None and len(partitions) > 1:
            raise CliError(
                f"--offset {args.offset} needs --partition: topic '{args.topic}' has more than one", USAGE
            )
        _start(consumer, args, partitions)
        with _StopOnSignal() as stop:
            printed = _print_messages(consumer, args, stop)
    finally:
        consumer.close()
    print(f"Processed a total of {plural(printed, 'message')}", file=sys.stderr)
    return 0


def _start(consumer: Consumer, args: argparse.Namespace, partitions: list[int]) -> None:
    """Subscribe (a group choosing partitions) or assign, with the starting offsets asked for."""
    from confluent_kafka import OFFSET_END, OFFSET_STORED, TopicPartition

    forced = args.offset is not None or args.from_timestamp is not None
    if args.group is not None and args.partition is None:

        def on_assign(consumer: Consumer, assigned: list[TopicPartition]) -> None:
            positions = _positions(consumer, args, [tp.partition for tp in assigned])
            consumer.assign([TopicPartition(args.topic, p, positions[p]) for p in sorted(positions)])

        if forced:
            consumer.subscribe([args.topic], on_assign=on_assign)
        else:
            consumer.subscribe([args.topic])
        return
    chosen = partitions if args.partition is None else [args.partition]
    if forced or args.from_beginning:
        positions = _positions(consumer, args, chosen)
    else:
        default = OFFSET_END if args.group is None else OFFSET_STORED
        positions = dict.fromkeys(chosen, default)
    consumer.assign([TopicPartition(args.topic, p, positions[p]) for p in chosen])


def _positions(consumer: Consumer, args: argparse.Namespace, partitions: list[int]) -> dict[int, int]:
    from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, KafkaException, TopicPartition

    if args.from_timestamp is None:
        if isinstance(args.offset, int):
            return dict.fromkeys(partitions, args.offset)
        return dict.fromkeys(partitions, OFFSET_END if args.offset == "latest" else OFFSET_BEGINNING)
    wanted = [TopicPartition(args.topic, p, args.from_timestamp) for p in partitions]
    try:
        found = consumer.offsets_for_times(wanted, timeout=args.request_timeout)
    except KafkaException as exception:
        raise CliError(kafka_error_message(exception.args[0], args.bootstrap_server, "ListOffsets")) from None
    # No message at or after the time: start at the end, so only newer messages print.
    return {tp.partition: tp.offset if tp.offset >= 0 else OFFSET_END for tp in found}


def _print_messages(consumer: Consumer, args: argparse.Namespace, stop: _StopOnSignal) -> int:
    layout = Layout(
        format=args.format,
        print_key=args.print_key,
        print_headers=args.print_headers,
        print_timestamp=args.print_timestamp,
        print_offset=args.print_offset,
        print_partition=args.print_partition,
        separator=args.key_separator,
    )
    out = sys.stdout.buffer
    printed = 0
    warned: set[str] = set()
    idle_limit = args.timeout_ms / 1000 if args.timeout_ms else None
    last_message = time.monotonic()
    while not stop.requested:
        wanted = 500 if args.max_messages is None else min(500, args.max_messages - printed)
        wait = 0.2 if idle_limit is None else max(0.0, min(0.2, last_message + idle_limit - time.monotonic()))
        messages = consumer.consume(num_messages=wanted, timeout=wait)
        for message in messages:
            error = message.error()
            if error is not None:
                _handle_error(error, args, warned)
                continue
            try:
                out.write(format_message(message, layout))
            except BrokenPipeError:
                return printed
            printed += 1
            if args.group is not None:
                consumer.store_offsets(message=message)
        if messages:
            last_message = time.monotonic()
            try:
                out.flush()
            except BrokenPipeError:
                return printed
        if args.max_messages is not None and printed >= args.max_messages:
            break
        if idle_limit is not None and time.monotonic() - last_message >= idle_limit:
            break
    return printed


def _handle_error(error: KafkaError, args: argparse.Namespace, warned: set[str]) -> None:
    """Give up on errors that will not pass; say once on stderr what a retrying client works through."""
    from confluent_kafka import KafkaError

    if error.code() == KafkaError._PARTITION_EOF:
        return
    message = kafka_error_message(error, args.bootstrap_server)
    if error.fatal() or error.code() in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC):
        raise CliError(message)
    if message not in warned:
        warned.add(message)
        print(f"odradek consume: warning: {message}", file=sys.stderr, flush=True)


def _offset(text: str) -> int | str:
    if text in ("earliest", "latest"):
        return text
    try:
        return non_negative_int(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"expected a number, earliest or latest, got {text!r}") from None


class _StopOnSignal:
    """While active, Ctrl-C and SIGTERM ask the loop to stop instead of killing it mid-line."""

    def __init__(self) -> None:
        self.requested = False
        self._previous: dict[int, object] = {}

    def __enter__(self) -> _StopOnSignal:
        for number in (signal.SIGINT, signal.SIGTERM):
            self._previous[number] = signal.signal(number, self._request)
        return self

    def __exit__(self, *exc_info: object) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)  # type: ignore[arg-type]

    def _request(self, number: int, frame: FrameType | None) -> None:
        self.requested = True
