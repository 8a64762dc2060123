"""Entry point of the `odradek` command: dispatches to its subcommands."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="odradek", description="A Kafka-compatible broker and its tools.")
    sub = parser.add_subparsers(dest="command", required=True)
    broker = sub.add_parser("broker", help="run a broker")
    broker.add_argument("--config", help="path to a server.properties file")
    broker.add_argument("--override", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    if args.command == "broker":
        print(
            "odradek: the broker is not built yet; so far only the protocol codec exists "
            "(see the README for what works today).",
            file=sys.stderr,
        )
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
