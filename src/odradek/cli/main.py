"""Entry point of the `odradek` command: dispatches to its subcommands."""

from __future__ import annotations

import argparse
import sys

from odradek import __version__
from odradek.cli import (
    acls,
    broker,
    cluster,
    configs,
    consume,
    groups,
    pipeline,
    produce,
    quotas,
    reassign,
    topics,
    transactions,
    users,
)
from odradek.cli.arguments import secrets_on_command_line
from odradek.cli.examples import share_examples
from odradek.console import command as console

EXAMPLES = """examples:
  odradek broker --config config/server.properties
  odradek cluster up --brokers 3
  odradek topics create --topic orders --partitions 3
  echo hello | odradek produce --topic orders
  odradek consume --topic orders --from-beginning
  odradek pipeline

Each command answers --help, with examples of its own.
"""


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    for setting in secrets_on_command_line(args):
        print(
            f"odradek {args.command}: warning: -X {setting} on the command line is visible to every user of "
            "this machine (ps, /proc); put it in a --command-config file",
            file=sys.stderr,
            flush=True,
        )
    result: int = args.run(args)
    return result


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="odradek",
        description="A Kafka-compatible broker and its tools.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"odradek {__version__}")
    subcommands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    broker.add_parser(subcommands)
    cluster.add_parser(subcommands)
    topics.add_parser(subcommands)
    configs.add_parser(subcommands)
    produce.add_parser(subcommands)
    consume.add_parser(subcommands)
    groups.add_parser(subcommands)
    acls.add_parser(subcommands)
    transactions.add_parser(subcommands)
    reassign.add_parser(subcommands)
    users.add_parser(subcommands)
    quotas.add_parser(subcommands)
    pipeline.add_parser(subcommands)
    console.add_parser(subcommands)
    share_examples(parser)
    return parser


if __name__ == "__main__":
    sys.exit(main())
