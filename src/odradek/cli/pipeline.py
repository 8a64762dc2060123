"""`odradek pipeline`: the page-view streaming demonstration (generator -> Spark job -> topic and Parquet)."""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path
from typing import Any

from odradek.cli.arguments import key_value
from odradek.cli.client import check_reachable
from odradek.cli.errors import CliError

EXAMPLES = """examples:
  odradek pipeline                                    # on a temporary broker it starts and stops itself
  odradek pipeline --trigger available-now --events 5000
  odradek pipeline --bootstrap-server localhost:9092 --events 100000 --rate 10000 --output-dir out
  odradek pipeline --bootstrap-server broker:9094 --command-config client.properties   # SASL_SSL, say
  odradek pipeline --connector kafka --connector-jars "$(make -s spark-kafka-jars)"   # Spark's own connector

Ctrl-C stops it after the running micro-batch (exit code 130); a second Ctrl-C stops at once.
"""


def add_parser(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subcommands.add_parser(
        "pipeline",
        help="run the page-view streaming pipeline on Spark",
        description="Produce page views, aggregate them with Spark Structured Streaming, write the results "
        "to a topic and to Parquet. Without --bootstrap-server a temporary local broker is started (and "
        "removed at the end, with its topics).",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--bootstrap-server",
        metavar="HOST:PORT",
        help="a running broker, comma-separated (default: start a temporary one; "
        "$ODRADEK_BOOTSTRAP_SERVER is not used here)",
    )
    # The option's old name, kept working.
    parser.add_argument(
        "--bootstrap", dest="bootstrap_server", action=_DeprecatedAlias, help=argparse.SUPPRESS
    )
    parser.add_argument(
        "--command-config",
        metavar="FILE",
        help="a properties file of Kafka client settings for a secured broker (security.protocol, "
        "sasl.mechanism, sasl.jaas.config, ssl.truststore.location, ...: Java or librdkafka names), used "
        "by the generator, the Spark source and the sink",
    )
    parser.add_argument(
        "-X",
        dest="client_properties",
        action="append",
        default=[],
        type=key_value,
        metavar="KEY=VALUE",
        help="one Kafka client setting, after --command-config; repeatable",
    )
    parser.add_argument("--events", type=int, default=20_000, help="page views to generate (default 20000)")
    parser.add_argument("--rate", type=float, default=1_000.0, help="page views per second, 0 for no limit")
    parser.add_argument("--seed", type=int, default=7, help="generator seed (default 7)")
    parser.add_argument("--input-topic", default="page-views")
    parser.add_argument("--output-topic", default="page-stats")
    parser.add_argument(
        "--output-dir", default="pipeline-output", help="Parquet output (default ./pipeline-output)"
    )
    parser.add_argument("--checkpoint-dir", help="default: <output-dir>/_checkpoints")
    parser.add_argument(
        "--trigger",
        default="2 seconds",
        help="a processing-time interval ('2 seconds', the default: runs while the generator produces) "
        "or 'available-now' (generate first, then process everything and stop)",
    )
    parser.add_argument("--max-offsets-per-trigger", type=int, default=5000)
    parser.add_argument("--partitions", type=int, default=3, help="partitions of the started broker's topics")
    parser.add_argument(
        "--delivery",
        choices=("exactly-once", "at-least-once"),
        help="how the output topic is written: exactly-once (the default: two-phase-commit "
        "transactions, needs transaction.two.phase.commit.enable=true on a given broker) or "
        "at-least-once",
    )
    # Checked in run(), not by argparse's choices: a wrong value is one line, not the usage too.
    parser.add_argument(
        "--connector",
        default="odradek",
        help="the Spark connector the topics are read and written with: odradek (the default: odradek's "
        "Python source and sink) or kafka (Spark's own spark-sql-kafka-0-10; at-least-once delivery)",
    )
    parser.add_argument(
        "--connector-jars",
        metavar="JAR[,JAR...]",
        help="with --connector kafka: the spark-sql-kafka-0-10_2.13 jar and its dependencies (kafka-clients, "
        "commons-pool2, spark-token-provider-kafka-0-10), comma-separated, given to Spark as spark.jars "
        "(default: none, Spark must already have the connector)",
    )
    parser.set_defaults(run=run)


class _DeprecatedAlias(argparse.Action):
    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        print(f"odradek pipeline: {option_string} is deprecated; use --bootstrap-server", file=sys.stderr)
        setattr(namespace, self.dest, values)


def run(args: argparse.Namespace) -> int:
    try:
        from odradek.pipelines import JobSettings, PipelineError, PipelineRun, local_broker, run_pipeline
        from odradek.pipelines.connectors import KAFKA, check_connector, java_client_settings
    except ImportError as error:
        print(
            f"odradek pipeline needs the spark extra (pip install 'odradek[spark]'): {error}", file=sys.stderr
        )
        return 2
    try:
        client_settings = _client_settings(args)
    except ValueError as error:
        print(f"odradek pipeline: {error}", file=sys.stderr)
        return 2
    if client_settings and not args.bootstrap_server:
        print("odradek pipeline: --command-config and -X need --bootstrap-server", file=sys.stderr)
        return 2
    # Spark's kafka sink has no exactly-once mode: with it the default delivery is at least once.
    exactly_once = args.delivery == "exactly-once" or (args.delivery is None and args.connector != KAFKA)
    try:
        check_connector(args.connector, exactly_once)
        connector_jars = _connector_jars(args)
        if args.connector == KAFKA:
            java_client_settings(client_settings)
    except ValueError as error:
        print(f"odradek pipeline: {error}", file=sys.stderr)
        return 2
    if args.bootstrap_server:
        try:
            check_reachable(args.bootstrap_server, timeout=5.0)
        except CliError as error:
            print(f"odradek pipeline: {error}", file=sys.stderr)
            return 1
    output_dir = Path(args.output_dir).resolve()
    checkpoint_dir = (
        Path(args.checkpoint_dir).resolve() if args.checkpoint_dir else output_dir / "_checkpoints"
    )
    try:
        with contextlib.ExitStack() as stack:
            bootstrap = args.bootstrap_server or stack.enter_context(local_broker(args.partitions))
            settings = JobSettings(
                bootstrap=bootstrap,
                input_topic=args.input_topic,
                output_topic=args.output_topic,
                output_dir=str(output_dir),
                checkpoint_dir=str(checkpoint_dir),
                max_offsets_per_trigger=args.max_offsets_per_trigger or None,
                trigger=args.trigger,
                client_settings=client_settings,
                exactly_once=exactly_once,
                connector=args.connector,
            )
            result = run_pipeline(
                PipelineRun(
                    settings,
                    events=args.events,
                    rate=args.rate or None,
                    seed=args.seed,
                    partitions=args.partitions,
                    temporary_broker=args.bootstrap_server is None,
                    connector_jars=tuple(connector_jars),
                )
            )
    except PipelineError as error:
        print(f"odradek pipeline: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        # A second Ctrl-C, or one while the temporary broker starts: what was written is in the checkpoint.
        print("odradek pipeline: interrupted", file=sys.stderr)
        return 130
    return result.exit_code


def _connector_jars(args: argparse.Namespace) -> list[str]:
    from odradek.pipelines.connectors import KAFKA, checked_jars

    if args.connector_jars is None:
        return []
    if args.connector != KAFKA:
        raise ValueError("--connector-jars is for --connector kafka")
    return checked_jars([jar for jar in args.connector_jars.split(",") if jar.strip()])


def _client_settings(args: argparse.Namespace) -> dict[str, str]:
    """--command-config then -X, checked now (a JKS store or GSSAPI is refused before Spark starts)."""
    from odradek.config.properties import load_properties
    from odradek.config.types import ConfigError
    from odradek.spark.security import librdkafka_security

    settings: dict[str, str] = {}
    if args.command_config:
        try:
            settings.update(load_properties(args.command_config))
        except OSError as error:
            raise ValueError(
                f"cannot read --command-config {args.command_config}: {error.strerror}"
            ) from None
        except ConfigError as error:
            raise ValueError(f"--command-config {args.command_config}: {error}") from None
    settings.update(dict(args.client_properties))
    settings.pop("bootstrap.servers", None)  # --bootstrap-server says where
    librdkafka_security(settings)
    return settings
