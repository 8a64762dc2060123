"""Entry point of the `odradek` command: dispatches to its subcommands."""

from __future__ import annotations

import argparse
import sys

from odradek.cli import broker, configs, consume, groups, pipeline, produce, topics
from odradek.console import command as console


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="odradek", description="A Kafka-compatible broker and its tools.")
    subcommands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    broker.add_parser(subcommands)
    topics.add_parser(subcommands)
    configs.add_parser(subcommands)
    produce.add_parser(subcommands)
    consume.add_parser(subcommands)
    groups.add_parser(subcommands)
    pipeline.add_parser(subcommands)
    console.add_parser(subcommands)
    args = parser.parse_args(argv)
    result: int = args.run(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
