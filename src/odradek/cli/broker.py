"""`odradek broker`: run a broker from a server.properties file and --override key=value pairs."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys

EXAMPLES = """examples:
  odradek broker --config config/server.properties
  odradek broker --config config/server.properties --override log.dirs=/var/lib/odradek --log-level WARNING
  odradek broker --override listeners=PLAINTEXT://127.0.0.1:19092 --override log.dirs=/tmp/odradek
"""


def add_parser(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subcommands.add_parser(
        "broker",
        help="run a broker",
        description="Run an odradek broker.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--config", metavar="FILE", help="a server.properties file (Kafka's config names)")
    parser.add_argument(
        "--override", action="append", default=[], metavar="KEY=VALUE", help="set a config (repeatable)"
    )
    parser.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING or ERROR")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    # Imported here so that the client commands do not pay for loading the broker's config catalog.
    from odradek.config.broker import BrokerConfig
    from odradek.config.catalog import is_sensitive
    from odradek.config.properties import parse_override
    from odradek.config.system_properties import KAFKA_OPTS, system_properties
    from odradek.config.types import ConfigError
    from odradek.logs import configure_logging
    from odradek.server.broker import StartupError, serve

    if not isinstance(logging.getLevelName(args.log_level.upper()), int):
        print(
            f"odradek broker: unknown --log-level {args.log_level!r} (DEBUG, INFO, WARNING or ERROR)",
            file=sys.stderr,
        )
        return 2
    configure_logging(args.log_level)
    try:
        config = BrokerConfig.load(args.config, args.override)
        # the JVM system properties Kafka's start scripts pass, read for the ZooKeeper login alone: a
        # single node never talks to ZooKeeper, so whatever KAFKA_OPTS holds cannot stop it
        kafka_opts = os.environ.get(KAFKA_OPTS, "") if config.zookeeper_connect else ""
        properties = system_properties(kafka_opts)
    except OSError as error:
        print(f"odradek broker: cannot read the config file {args.config}: {error.strerror}", file=sys.stderr)
        return 2
    except (ConfigError, ValueError) as error:
        print(f"odradek broker: {error}", file=sys.stderr)
        return 2
    # Kafka's --override takes secrets without a word; the command line is world-readable, the file need
    # not be.
    overridden = {parse_override(override)[0] for override in args.override}
    for name in sorted(name for name in overridden if is_sensitive(name)):
        logging.getLogger("odradek.broker").warning(
            "%s given with --override is visible to every user of this machine (ps, /proc): put it in the "
            "--config file",
            name,
        )
    # The standard asyncio loop, even where uvloop is installed: measured in docs/bench/event-loop.md,
    # uvloop 0.23 cost more CPU per produced MB here and cannot sendfile, which Fetch relies on.
    try:
        asyncio.run(serve(config, properties))
    except StartupError as error:
        print(f"odradek broker: {error}", file=sys.stderr)
        return 1
    return 0
