"""`odradek cluster`: a local development cluster (`up`) and a cluster's health at a glance (`status`).

`up` starts a ZooKeeper (Debian's jars) on 127.0.0.1 and N brokers, broker i on 127.0.0.(i+1) at the
same port (each loopback address is a host of its own on Linux), with their data, logs and
server.properties in --dir; Ctrl-C stops the brokers (controlled shutdown) and then ZooKeeper.
`--kafka N` adds N Apache Kafka 3.9.2 brokers after odradek's (ids and addresses following on), their
jars fetched once into the user's cache (odradek.cli.cluster_up.jar_cache), with the same settings.
`--override key=value` (repeatable) goes into every broker's server.properties, after the broker's
own config checks have passed it for each: an unknown, refused or invalid setting, or one that `up`
sets per broker, stops the command in one line naming it before anything starts.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from odradek.cli.arguments import add_connection_arguments
from odradek.cli.cluster_up.child_process import start_child
from odradek.cli.cluster_up.jar_cache import (
    MAVEN_CENTRAL,
    REPOSITORY_ENV,
    JarCacheError,
    cached_class_path,
    check_repository,
    default_cache_dir,
)
from odradek.cli.cluster_up.java import find_java, java_major_version
from odradek.cli.cluster_up.kafka_broker import HEAP, kafka_command
from odradek.cli.cluster_up.kafka_lock import KAFKA_VERSION, LockFileError, kafka_broker_artifacts
from odradek.cli.cluster_up.local_zookeeper import ZooKeeperUnavailableError, start_zookeeper
from odradek.config.broker import BrokerConfig
from odradek.config.catalog import is_sensitive
from odradek.config.properties import format_property, parse_override
from odradek.config.types import ConfigError
from odradek.tasks.child_processes import stop_children

EXAMPLES = """examples:
  odradek cluster up --brokers 3
  odradek cluster up --brokers 3 --dir /tmp/odradek-cluster
  odradek cluster up --brokers 3 --override num.partitions=6 --override log.retention.hours=1
  odradek cluster up --brokers 2 --kafka 1
  odradek cluster status --bootstrap-server 127.0.0.2:9092
"""

#: What `up` sets for each broker itself: the same value on every broker would break the cluster.
PER_BROKER_CONFIGS = frozenset(
    ("broker.id", "node.id", "listeners", "advertised.listeners", "log.dirs", "log.dir", "zookeeper.connect")
)

#: How long Ctrl-C waits for a broker's controlled shutdown before killing it.
STOP_TIMEOUT_S = 60.0
#: How long each kind may take to listen after its start (a JVM on a busy laptop is slow to).
START_TIMEOUT_S = {"odradek": 30.0, "kafka": 120.0}
#: The Java that --kafka's brokers are tested with (Kafka 3.9 itself also runs on 11).
MINIMUM_JAVA = 17
#: Loopback addresses 127.0.0.2-127.0.0.9, one a broker.
MAX_BROKERS = 8


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
        epilog=(
            "examples:\n  odradek cluster up --brokers 3\n  odradek cluster up --dir /tmp/c1\n"
            "  odradek cluster up --brokers 2 --kafka 1\n"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    up.add_argument(
        "--brokers",
        type=int,
        default=3,
        metavar="N",
        help="how many odradek brokers (1-8 with --kafka's; default 3)",
    )
    up.add_argument(
        "--kafka",
        type=int,
        default=0,
        metavar="N",
        help=f"how many Apache Kafka {KAFKA_VERSION} brokers to start beside them (default 0; needs Java 17; "
        "their jars, about 48 MB, are downloaded once into ~/.cache/odradek)",
    )
    up.add_argument(
        "--maven-repository",
        default=os.environ.get(REPOSITORY_ENV, MAVEN_CENTRAL),
        metavar="URL",
        help=f"where Kafka's jars are downloaded from (default ${REPOSITORY_ENV}, or {MAVEN_CENTRAL})",
    )
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
    if not 1 <= args.brokers <= MAX_BROKERS or not 0 <= args.kafka <= MAX_BROKERS - args.brokers:
        print(
            f"odradek cluster up: --brokers (1 or more) and --kafka together must be 1 to {MAX_BROKERS} "
            "(127.0.0.2 to 127.0.0.9)",
            file=sys.stderr,
        )
        return 2
    base = args.dir or Path(tempfile.mkdtemp(prefix="odradek-cluster-"))
    connect = f"127.0.0.1:{args.zookeeper_port}/odradek"
    try:
        repository = check_repository(args.maven_repository) if args.kafka else ""
        configs = write_broker_configs(base, args.brokers, args.port, connect, args.override, args.kafka)
    except (ConfigError, JarCacheError) as error:
        print(f"odradek cluster up: {error}", file=sys.stderr)
        if args.dir is None:
            base.rmdir()  # made above, still empty
        return 2
    try:
        java, class_path = _kafka_runtime(repository) if args.kafka else ("", [])
    except (_KafkaUnavailableError, KeyboardInterrupt) as error:
        print(f"odradek cluster up: {str(error) or 'interrupted'}", file=sys.stderr)
        if args.dir is None:
            shutil.rmtree(base, ignore_errors=True)
        return 1
    kinds = ["odradek"] * args.brokers + ["kafka"] * args.kafka
    commands = [
        _odradek_command(config) if kind == "odradek" else kafka_command(java, class_path, config)
        for kind, config in zip(kinds, configs, strict=True)
    ]
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
        for command, config in zip(commands, configs, strict=True):
            brokers.append(start_child(command, config.parent / "broker.log"))
        addresses = [_address(node, args.port) for node in range(1, len(kinds) + 1)]
        for kind, address, broker in zip(kinds, addresses, brokers, strict=True):
            if not _wait_listening(address, broker, START_TIMEOUT_S[kind], lambda: stopping):
                if not stopping:
                    print(
                        f"odradek cluster up: broker at {address} did not start: see {base}", file=sys.stderr
                    )
                return 1
        print(f"ZooKeeper: {connect}")
        for node, (kind, address, config) in enumerate(zip(kinds, addresses, configs, strict=True), start=1):
            name = "odradek" if kind == "odradek" else f"Apache Kafka {KAFKA_VERSION} ({HEAP})"
            print(f"broker {node}: {address}  {name}, log {config.parent / 'broker.log'}")
        print(f"bootstrap: {','.join(addresses)}")
        print(f"data, logs and configs: {base}  (Ctrl-C stops the cluster)", flush=True)
        while not stopping:
            if any(broker.poll() is not None for broker in brokers):
                print(f"odradek cluster up: a broker exited: see {base}", file=sys.stderr)
                break
            time.sleep(0.2)
    finally:
        # each broker moves its leaderships away (controlled shutdown), then stops. Kafka's go first,
        # while odradek's can take their partitions: a Kafka broker left with nowhere to move them
        # retries 3 times 5 s apart (controlled.shutdown.max.retries) before it stops anyway
        stop_children([b for b, kind in zip(brokers, kinds, strict=False) if kind == "kafka"], STOP_TIMEOUT_S)
        stop_children(brokers, STOP_TIMEOUT_S)
        stop_children([zookeeper], 10)
    return 0


class _KafkaUnavailableError(Exception):
    """Kafka's brokers cannot be run here: no Java, or their jars could not be had."""


def _kafka_runtime(repository: str) -> tuple[str, list[Path]]:
    """Java and Kafka's class path, downloaded into the user's cache on first use."""
    java = find_java()
    if java is None:
        raise _KafkaUnavailableError(
            f"--kafka needs Java {MINIMUM_JAVA} or newer to run Apache Kafka {KAFKA_VERSION}: "
            "java is not on PATH (nor in $JAVA_HOME/bin)"
        )
    version = java_major_version(java)
    if version is not None and version < MINIMUM_JAVA:
        raise _KafkaUnavailableError(
            f"--kafka needs Java {MINIMUM_JAVA} or newer to run Apache Kafka {KAFKA_VERSION}: "
            f"{java} is Java {version}"
        )
    try:
        class_path = cached_class_path(
            kafka_broker_artifacts(), default_cache_dir(), repository, report=_report
        )
    except (JarCacheError, LockFileError, OSError) as error:
        raise _KafkaUnavailableError(str(error)) from error
    return java, class_path


def _report(message: str) -> None:
    print(f"odradek cluster up: {message}", file=sys.stderr, flush=True)


def write_broker_configs(
    base: Path, brokers: int, port: int, connect: str, overrides: list[str], kafka: int = 0
) -> list[Path]:
    """Each broker's server.properties (broker i in `base`/broker-i): odradek's `brokers` first, then
    `kafka` Kafka brokers, all with the same settings and `overrides` (key=value) after what `up` sets;
    nothing is written unless every broker's settings pass odradek's config checks (Kafka's brokers
    get exactly what odradek's accept). Raises ConfigError naming the first setting that does not."""
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
    total = brokers + kafka
    settings = [
        {**_broker_settings(base, node, port, connect, total), **extra} for node in range(1, total + 1)
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
    listener = f"PLAINTEXT://{_address(node, port)}"
    # a development cluster of few brokers: internal topics at a replication factor it can honour
    replication = min(brokers, 3)
    return {
        "broker.id": str(node),
        "listeners": listener,
        "advertised.listeners": listener,
        "log.dirs": str(base / f"broker-{node}" / "data"),
        "zookeeper.connect": connect,
        "offsets.topic.replication.factor": str(replication),
        "transaction.state.log.replication.factor": str(replication),
        "transaction.state.log.min.isr": str(min(replication, 2)),
        # both kinds speak 3.9's inter-broker requests (Kafka 3.9.2's default too, said for --kafka)
        "inter.broker.protocol.version": "3.9",
    }


def _address(node: int, port: int) -> str:
    return f"127.0.0.{node + 1}:{port}"


def _odradek_command(config: Path) -> list[str]:
    return [sys.executable, "-m", "odradek.cli.main", "broker", "--config", str(config)]


def _wait_listening(
    address: str, process: subprocess.Popen[bytes], timeout: float, stopping: Callable[[], bool]
) -> bool:
    """Whether `process` listens on `address` within `timeout`; False at once if it exits or Ctrl-C."""
    host, _, port = address.rpartition(":")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None and not stopping():
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
