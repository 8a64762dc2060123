"""`odradek produce`: one message per input line, like kafka-console-producer.

Lines come from stdin or --file, read as bytes and sent as they are (the line end is dropped, "\\r\\n"
too). --key-separator splits each line into key and value at the first separator, as the console
producer's parse.key=true / key.separator do; a line without it is an error. --header adds the same
headers to every message. The summary (messages, bytes of keys and values, rate) goes to stderr.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
import time
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING

from odradek.cli.arguments import add_connection_arguments, key_value, non_negative_int, separator
from odradek.cli.client import check_reachable, client_config, topic_partitions
from odradek.cli.errors import INTERRUPTED, CliError, command, kafka_error_message
from odradek.cli.output import Progress, human_bytes, human_duration, plural, rate

if TYPE_CHECKING:
    from confluent_kafka import KafkaError, Message, Producer

COMPRESSIONS = ("none", "gzip", "snappy", "lz4", "zstd")
ACKS = ("all", "-1", "0", "1")
#: On a terminal, the progress line appears only for inputs that take longer than this.
PROGRESS_DELAY = 0.5

EXAMPLES = """examples:
  echo hello | odradek produce --topic greetings
  odradek produce --topic orders --key-separator : --header source=import < orders.txt
  odradek produce --topic logs --file big.log --compression zstd --progress
"""


def add_parser(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subcommands.add_parser(
        "produce",
        help="send lines of stdin or a file as messages",
        description="Send each line of stdin (or --file) to a topic as one message "
        "(like kafka-console-producer).",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--topic", required=True, help="the topic to write to")
    parser.add_argument("--file", metavar="PATH", help="read lines from this file instead of stdin")
    parser.add_argument(
        "--key-separator",
        type=separator,
        metavar="SEP",
        help=r"split each line into KEY SEP VALUE at the first SEP (\t for a tab)",
    )
    parser.add_argument(
        "--header",
        action="append",
        default=[],
        type=key_value,
        metavar="K=V",
        help="a header for every message (repeatable)",
    )
    parser.add_argument(
        "--partition", type=non_negative_int, help="write to this partition (default: by key, else spread)"
    )
    parser.add_argument("--compression", choices=COMPRESSIONS, default="none", help="default: none")
    parser.add_argument(
        "--acks", choices=ACKS, default="all", help="replicas that must confirm (default: all)"
    )
    parser.add_argument(
        "--progress", action="store_true", help="show progress on stderr even when it is not a terminal"
    )
    parser.add_argument("--quiet", action="store_true", help="print neither progress nor the summary")
    add_connection_arguments(parser)
    parser.set_defaults(run=run)


@dataclass
class Tally:
    """Lines read, messages handed to the client, and what the delivery callback confirmed."""

    read: int = 0
    sent: int = 0
    input_bytes: int = 0
    delivered: int = 0
    delivered_bytes: int = 0
    failed: int = 0
    first_error: KafkaError | None = field(default=None)

    def on_delivery(self, error: KafkaError | None, message: Message) -> None:
        if error is None:
            self.delivered += 1
            self.delivered_bytes += len(message.key() or b"") + len(message.value() or b"")
        else:
            self.failed += 1
            self.first_error = self.first_error or error


@command("produce")
def run(args: argparse.Namespace) -> int:
    from confluent_kafka import Producer

    check_reachable(args.bootstrap_server, args.request_timeout)
    settings: dict[str, str | int | float | bool] = {
        "acks": args.acks,
        "compression.type": args.compression,
        "linger.ms": 5,
        "message.timeout.ms": int(args.request_timeout * 1000),
    }
    producer = Producer(client_config(args, **settings))
    partitions = topic_partitions(producer, args.topic, args.bootstrap_server, args.request_timeout)
    if args.partition is not None and args.partition not in partitions:
        raise CliError(f"topic '{args.topic}' has no partition {args.partition} (it has {len(partitions)})")
    source = _open(args.file)
    progress = _progress(args, source)
    tally = Tally()
    started = time.monotonic()
    interrupted = False
    bad_input: CliError | None = None
    try:
        _send_lines(producer, args, source, tally, progress)
    except KeyboardInterrupt:
        interrupted = True
    except CliError as error:  # what was sent before the bad line is still delivered and counted
        bad_input = error
    finally:
        if source is not sys.stdin.buffer:
            source.close()
    unsent = producer.flush(args.request_timeout)
    elapsed = time.monotonic() - started
    if progress is not None:
        progress.finish(tally.delivered, tally.delivered_bytes, tally.input_bytes)
    if not args.quiet:
        print(_summary(args.topic, tally, elapsed, interrupted), file=sys.stderr)
    if tally.failed or unsent:
        lost = tally.failed + unsent
        reason = (
            kafka_error_message(tally.first_error, args.bootstrap_server, "Produce")
            if tally.first_error is not None
            else f"not confirmed within {args.request_timeout:g} s"
        )
        raise CliError(f"{lost} of {tally.sent} messages were not written: {reason}")
    if bad_input is not None:
        raise bad_input
    return INTERRUPTED if interrupted else 0


def _send_lines(
    producer: Producer, args: argparse.Namespace, source: IO[bytes], tally: Tally, progress: Progress | None
) -> None:
    key_separator = args.key_separator.encode() if args.key_separator else None
    headers = [(name, value.encode()) for name, value in args.header] or None
    partition = -1 if args.partition is None else args.partition
    for line in source:
        tally.read += 1
        tally.input_bytes += len(line)
        value = line[:-1] if line.endswith(b"\n") else line
        if value.endswith(b"\r"):
            value = value[:-1]
        key = None
        if key_separator is not None:
            key, found, value = value.partition(key_separator)
            if not found:
                raise CliError(f"line {tally.read} has no key separator {args.key_separator!r}")
        while True:
            try:
                producer.produce(
                    args.topic, value, key, partition, on_delivery=tally.on_delivery, headers=headers
                )
                tally.sent += 1
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                producer.poll(0.05)
        producer.poll(0)
        if progress is not None:
            progress.update(tally.delivered, tally.delivered_bytes, tally.input_bytes)


def _open(path: str | None) -> IO[bytes]:
    if path is None:
        return sys.stdin.buffer
    try:
        return open(path, "rb")  # closed by the caller
    except OSError as error:
        raise CliError(f"cannot read {path}: {error.strerror}") from None


def _progress(args: argparse.Namespace, source: IO[bytes]) -> Progress | None:
    """A progress line when asked for, or when stderr is a terminal and nobody is typing the input."""
    if args.quiet:
        return None
    if not args.progress and (not sys.stderr.isatty() or source.isatty()):
        return None
    try:
        status = os.fstat(source.fileno())
        total = status.st_size if stat.S_ISREG(status.st_mode) else None
    except (OSError, ValueError):
        total = None
    return Progress(sys.stderr, total, delay=0.0 if args.progress else PROGRESS_DELAY)


def _summary(topic: str, tally: Tally, elapsed: float, interrupted: bool) -> str:
    text = (
        f"Produced {plural(tally.delivered, 'message')} ({human_bytes(tally.delivered_bytes)}) "
        f"to topic {topic} in {human_duration(elapsed)} ({rate(tally.delivered, elapsed):,.0f} msg/s, "
        f"{human_bytes(rate(tally.delivered_bytes, elapsed))}/s)."
    )
    return text + (" Interrupted." if interrupted else "")
