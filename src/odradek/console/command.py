"""`odradek console`: serve the web console for the cluster at --bootstrap-server."""

from __future__ import annotations

import argparse
from pathlib import Path

from odradek.cli.arguments import add_connection_arguments, positive_float
from odradek.cli.client import client_config
from odradek.cli.errors import USAGE, CliError, command
from odradek.config.hosts import is_host, is_loopback

EXAMPLES = """examples:
  odradek console --bootstrap-server localhost:9092                 # http://127.0.0.1:8080
  odradek console --bootstrap-server localhost:9092 --read-only --port 9000
  odradek console --host 0.0.0.0 --allowed-host console.example.com --basic-auth-file console-users.txt \
      --command-config client.properties
"""


def add_parser(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subcommands.add_parser(
        "console",
        help="a web console: brokers, topics, messages, consumer groups and lag",
        description="Serve a web console for a Kafka-compatible cluster, talking to it only through the "
        "Kafka protocol (confluent-kafka, as the other client commands).",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--port", type=int, default=8080, help="HTTP port (default: 8080)")
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to serve on (default: 127.0.0.1, this machine only; another needs --basic-auth-file)",
    )
    parser.add_argument(
        "--allowed-host",
        dest="allowed_hosts",
        action="append",
        default=[],
        type=host_argument,
        metavar="NAME",
        help="a host name (or address) browsers may reach the console by, besides loopback ones and "
        "--host; repeatable. Requests naming another host are refused (DNS rebinding)",
    )
    parser.add_argument("--read-only", action="store_true", help="show everything, change nothing")
    parser.add_argument(
        "--basic-auth-file", type=Path, metavar="FILE", help="require HTTP basic auth: user:password a line"
    )
    parser.add_argument(
        "--sample-interval",
        type=positive_float,
        default=5.0,
        metavar="SECONDS",
        help="how often throughput and lag are sampled for the charts (default: 5)",
    )
    parser.add_argument(
        "--metrics-url",
        dest="metrics_urls",
        action="append",
        default=[],
        metavar="URL",
        help="a broker's metrics endpoint (http://HOST:PORT/metrics, its metrics.port), read for the "
        "metrics clients push (the Clients page); repeatable",
    )
    add_connection_arguments(parser)
    for action in parser._actions:
        if action.dest == "request_timeout":
            # a page should say the cluster is slow sooner than the CLI's 30 s
            action.default = 10.0
            action.help = "how long a page waits for the cluster to answer (default: 10)"
    parser.set_defaults(run=run)


def host_argument(text: str) -> str:
    if not is_host(text):
        raise argparse.ArgumentTypeError(f"expected a host name or an IP address without port, got {text!r}")
    return text


@command("console")
def run(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from odradek.console.app import create_app
        from odradek.console.auth import AuthFileError
        from odradek.console.settings import ConsoleSettings
    except ImportError as error:
        raise CliError(
            f"the console needs the console extra: pip install 'odradek[console]' ({error})"
        ) from None
    if not is_loopback(args.host) and args.basic_auth_file is None:
        raise CliError(
            f"--host {args.host} serves beyond this machine: give --basic-auth-file (every request then "
            "needs a listed user and password), or serve 127.0.0.1",
            USAGE,
        )
    client_config(args)  # a --command-config that cannot be read stops here, not on the first page
    settings = ConsoleSettings(
        bootstrap_server=args.bootstrap_server,
        host=args.host,
        allowed_hosts=tuple(args.allowed_hosts),
        port=args.port,
        read_only=args.read_only,
        command_config=args.command_config,
        client_properties=list(args.client_properties),
        request_timeout=args.request_timeout,
        basic_auth_file=args.basic_auth_file,
        sample_interval=args.sample_interval,
        metrics_urls=tuple(args.metrics_urls),
    )
    try:
        app = create_app(settings)
    except AuthFileError as error:
        raise CliError(str(error)) from None
    print(f"odradek console: serving http://{args.host}:{args.port}/ for {args.bootstrap_server}", flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0
