"""`odradek cluster`: a local development cluster (`up`) and a cluster's health at a glance (`status`).

`up` starts a ZooKeeper (Debian's jars) on 127.0.0.1 and N brokers, broker i on 127.0.0.(i+1) at the
same port (each loopback address is a host of its own on Linux), with their data, logs and
server.properties in --dir; Ctrl-C stops the brokers (controlled shutdown) and then ZooKeeper.
`--override key=value` (repeatable) goes into every broker's server.properties, after the broker's
own config checks have passed it for each: an unknown, refused or invalid setting, or one that `up`
sets per broker, stops the command in one line naming it before anything starts.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from odradek.cli.arguments import add_connection_arguments
from odradek.config.broker import BrokerConfig
from odradek.config.catalog import is_sensitive
from odradek.config.properties import format_property, parse_override
from odradek.config.types import ConfigError

EXAMPLES = """examples:
  odradek cluster up --brokers 3
  odradek cluster up --brokers 3 --dir /tmp/odradek-cluster
  odradek cluster up --brokers 3 --override num.partitions=6 --override log.retention.hours=1
  odradek cluster status --bootstrap-server 127.0.0.2:9092
"""

#: What `up` sets for each broker itself: the same value on every broker would break the cluster.
PER_BROKER_CONFIGS = frozenset(
    ("broker.id", "node.id", "listeners", "advertised.listeners", "log.dirs", "log.dir", "zookeeper.connect")
)

#: How long Ctrl-C waits for a broker's controlled shutdown before killing it.
STOP_TIMEOUT_S = 60.0


def add_parser(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subcommands.add_parser(
        "cluster",
        help="run a local cluster, or show a cluster's state",
        description="A local ZooKeeper-mode cluster for development, and a cluster's state.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    up = actions.add_parser(
        "up",
        help="start ZooKeeper and N brokers on loopback until Ctrl-C",
        epilog="examples:\n  odradek cluster up --brokers 3\n  odradek cluster up --dir /tmp/c1\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    up.add_argument("--brokers", type=int, default=3, metavar="N", help="how many brokers (1-8; default 3)")
    up.add_argument("--dir", type=Path, help="where data, logs and configs go (default: a new temp dir)")
    up.add_argument("--port", type=int, default=9092, help="each broker's port (default 9092)")
    up.add_argument("--zookeeper-port", type=int, default=2181, help="ZooKeeper's port (default 2181)")
    up.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a broker config for every broker, as in server.properties (repeatable)",
    )
    up.set_defaults(run=run_up)
    status = actions.add_parser(
        "status",
        help="brokers, controller and partitions without a leader",
        epilog="examples:\n  odradek cluster status --bootstrap-server 127.0.0.2:9092\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_connection_arguments(status)
    status.set_defaults(run=run_status)


def run_up(args: argparse.Namespace) -> int:
    from odradek.cluster.local_zookeeper import ZooKeeperUnavailableError, start_zookeeper

    if not 1 <= args.brokers <= 8:
        print("odradek cluster up: --brokers must be 1 to 8 (127.0.0.2 to 127.0.0.9)", file=sys.stderr)
        return 2
    base = args.dir or Path(tempfile.mkdtemp(prefix="odradek-cluster-"))
    connect = f"127.0.0.1:{args.zookeeper_port}/odradek"
    try:
        configs = write_broker_configs(base, args.brokers, args.port, connect, args.override)
    except ConfigError as error:
        print(f"odradek cluster up: {error}", file=sys.stderr)
        if args.dir is None:
            base.rmdir()  # made above, still empty
        return 2
    try:
        zookeeper = start_zookeeper(base / "zookeeper", args.zookeeper_port)
    except (ZooKeeperUnavailableError, OSError) as error:
        print(f"odradek cluster up: {error}", file=sys.stderr)
        return 1
    brokers: list[subprocess.Popen[bytes]] = []
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    try:
        for config in configs:
            brokers.append(_start_broker(config))
        addresses = [f"127.0.0.{node + 1}:{args.port}" for node in range(1, args.brokers + 1)]
        for address in addresses:
            if not _wait_listening(address, 30):
                print(f"odradek cluster up: broker at {address} did not start: see {base}", file=sys.stderr)
                return 1
        print(f"ZooKeeper: {connect}")
        for node, address in enumerate(addresses, start=1):
            print(f"broker {node}: {address}")
        print(f"bootstrap: {','.join(addresses)}")
        print(f"data, logs and configs: {base}  (Ctrl-C stops the cluster)", flush=True)
        while not stopping:
            if any(broker.poll() is not None for broker in brokers):
                print(f"odradek cluster up: a broker exited: see {base}", file=sys.stderr)
                break
            time.sleep(0.2)
    finally:
        for broker in brokers:  # each moves its leaderships away (controlled shutdown), then stops
            if broker.poll() is None:
                broker.terminate()
        for broker in brokers:
            try:
                broker.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                broker.kill()
        zookeeper.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            zookeeper.wait(10)
    return 0


def write_broker_configs(
    base: Path, brokers: int, port: int, connect: str, overrides: list[str]
) -> list[Path]:
    """Each broker's server.properties (broker i in `base`/broker-i), with `overrides` (key=value)
    after what `up` sets; nothing is written unless every broker's settings pass the broker's config
    checks. Raises ConfigError naming the first setting that does not."""
    extra: dict[str, str] = {}
    for override in overrides:
        key, value = parse_override(override)
        if key in PER_BROKER_CONFIGS:
            raise ConfigError(
                f"--override {key}: cluster up sets it for each broker (--port, --dir, --zookeeper-port)"
            )
        if not _is_utf8(key + value):  # bytes the command line could not decode (surrogate escapes)
            raise ConfigError(f"--override {_printable(key)}: not valid UTF-8")
        extra[key] = value
    settings = [
        {**_broker_settings(base, node, port, connect, brokers), **extra} for node in range(1, brokers + 1)
    ]
    for broker in settings:
        # as the broker will read them; a name no catalog knows is refused here, where Kafka's broker
        # would only warn, since a misspelt override would otherwise go unseen in broker.log
        unknown = sorted(set(BrokerConfig(broker, warn_unknown=False).unknown) & extra.keys())
        if unknown:
            raise ConfigError(f"--override {unknown[0]}: not a broker config")
    for name in sorted(name for name in extra if is_sensitive(name)):
        print(
            f"odradek cluster up: warning: {name} given with --override is visible to every user of this "
            "machine (ps, /proc)",
            file=sys.stderr,
        )
    paths = []
    for node, broker in enumerate(settings, start=1):
        directory = base / f"broker-{node}"
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / "server.properties"
        path.touch(mode=0o600)
        path.chmod(0o600)  # the user's alone before anything is written: it may hold a secret
        path.write_text("".join(format_property(key, value) for key, value in broker.items()), "utf-8")
        paths.append(path)
    return paths


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _printable(text: str) -> str:
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _broker_settings(base: Path, node: int, port: int, connect: str, brokers: int) -> dict[str, str]:
    listener = f"PLAINTEXT://127.0.0.{node + 1}:{port}"
    replication = min(brokers, 3)
    return {
        "broker.id": str(node),
        "listeners": listener,
        "advertised.listeners": listener,
        "log.dirs": str(base / f"broker-{node}" / "data"),
        "zookeeper.connect": connect,
        # a development cluster of few brokers: internal topics at a replication factor it can honour
        "offsets.topic.replication.factor": str(replication),
        "transaction.state.log.replication.factor": str(replication),
        "transaction.state.log.min.isr": str(min(replication, 2)),
    }


def _start_broker(config: Path) -> subprocess.Popen[bytes]:
    with open(config.parent / "broker.log", "ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "odradek.cli.main", "broker", "--config", str(config)],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # Ctrl-C reaches this command, which stops the brokers in order
        )


def _wait_listening(address: str, timeout: float) -> bool:
    host, _, port = address.rpartition(":")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection((host, int(port)), timeout=0.5):
            return True
        time.sleep(0.1)
    return False


def run_status(args: argparse.Namespace) -> int:
    from confluent_kafka.admin import AdminClient

    from odradek.cli.client import check_reachable, client_config
    from odradek.cli.errors import CliError

    try:
        check_reachable(args.bootstrap_server, args.request_timeout)
        metadata = AdminClient(client_config(args)).list_topics(timeout=args.request_timeout)
    except CliError as error:
        print(f"odradek cluster status: {error}", file=sys.stderr)
        return 1
    except Exception as error:  # librdkafka's KafkaException: the broker did not answer in time
        print(f"odradek cluster status: {error}", file=sys.stderr)
        return 1
    print(f"cluster id: {metadata.cluster_id}")
    print(f"controller: {metadata.controller_id}")
    print(f"brokers ({len(metadata.brokers)}):")
    for broker in sorted(metadata.brokers.values(), key=lambda b: b.id):
        print(f"  {broker.id}  {broker.host}:{broker.port}")
    offline = [
        f"{topic.topic}-{partition.id}"
        for topic in sorted(metadata.topics.values(), key=lambda t: t.topic or "")
        for partition in sorted(topic.partitions.values(), key=lambda p: p.id)
        if partition.leader < 0
    ]
    print(f"partitions without a leader: {len(offline)}")
    for name in offline:
        print(f"  {name}")
    return 1 if offline else 0
