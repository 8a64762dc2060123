"""kafka-configs with --bootstrap-server: topic, broker and cluster-default configs, SCRAM users and
client quotas (the ZooKeeper-only forms of 3.9 are left out: Kafka 4 has none)."""

from __future__ import annotations

from odradek.protocol.messages.describe_configs import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
    DescribeConfigsResponse,
)
from tests.support.raw_client import RawClient
from tests.support.tool_scenarios.session import Session, scenario, wait_for
from tests.support.tool_scenarios.topics import create

B = "--bootstrap-server"


#: The cluster-wide default broker configs' DescribeConfigs resource, and their source there.
BROKER, DYNAMIC_DEFAULT_BROKER_CONFIG = 4, 5


def configs(session: Session, *args: str, sort: bool = False) -> None:
    session.run("kafka-configs", B, "{bootstrap}", *args, sort=sort)


def wait_defaults_agree(session: Session) -> None:
    """In a cluster, until every broker describes the same cluster-wide defaults: the broker that
    changed them writes ZooKeeper, the others read the change notification a moment later (in Kafka as
    in odradek), and a tool asks whichever broker it likes."""
    if session.cluster:
        wait_for(lambda: _defaults_agreed(session), 30, "every broker to describe the same broker defaults")


def _defaults(session: Session, node: int) -> frozenset[tuple[str, str | None]] | None:
    host, port = session.target.addresses[node]
    request = DescribeConfigsRequest(
        resources=[DescribeConfigsResource(resource_type=BROKER, resource_name="", configuration_keys=None)]
    )
    try:
        with RawClient(port, timeout=5, host=host) as client:
            response: DescribeConfigsResponse = client.request(request, 1)
    except OSError:
        return None
    (result,) = response.results
    if result.error_code != 0:
        return None
    return frozenset(
        (c.name, c.value) for c in result.configs if c.config_source == DYNAMIC_DEFAULT_BROKER_CONFIG
    )


def _defaults_agreed(session: Session) -> bool:
    answers = [_defaults(session, node) for node in session.target.addresses]
    return None not in answers and len(set(answers)) == 1


@scenario()
def topic_configs(session: Session) -> None:
    create(session, "tools-configs", 1, record=False)
    topic = ("--entity-type", "topics", "--entity-name", "tools-configs")
    configs(session, "--describe", *topic)
    configs(
        session, "--alter", *topic, "--add-config", "retention.ms=86400000,cleanup.policy=[compact,delete]"
    )
    configs(session, "--describe", *topic)
    configs(session, "--alter", *topic, "--add-config", "max.message.bytes=2000000,segment.bytes=10485760")
    configs(session, "--alter", *topic, "--delete-config", "retention.ms")
    configs(session, "--describe", *topic)
    configs(session, "--alter", *topic, "--add-config", "retention.ms=soon")
    configs(session, "--alter", *topic, "--add-config", "no.such.config=1")
    configs(session, "--alter", *topic, "--add-config", "min.insync.replicas=0")
    configs(session, "--describe", "--entity-type", "topics", "--entity-name", "tools-missing")
    configs(
        session,
        "--alter",
        "--entity-type",
        "topics",
        "--entity-name",
        "tools-missing",
        "--add-config",
        "retention.ms=1",
    )
    # the shorter forms
    configs(session, "--describe", "--topic", "tools-configs")
    configs(session, "--alter", "--topic", "tools-configs", "--delete-config", "cleanup.policy,segment.bytes")
    configs(session, "--describe", "--topic", "tools-configs")


@scenario()
def topic_config_unknown_deleted(session: Session) -> None:
    """Deleting a config name no topic has (tests/compat/kafka_tools/known-differences.toml)."""
    create(session, "tools-configs-unknown", 1, record=False)
    topic = ("--entity-type", "topics", "--entity-name", "tools-configs-unknown")
    configs(session, "--alter", *topic, "--delete-config", "retention.msec")
    configs(session, "--describe", *topic)


@scenario()
def broker_configs(session: Session) -> None:
    broker = ("--entity-type", "brokers", "--entity-name", "1")
    default = ("--entity-type", "brokers", "--entity-default")
    configs(session, "--describe", *broker)
    configs(session, "--alter", *broker, "--add-config", "log.cleaner.backoff.ms=30000")
    configs(session, "--describe", *broker)
    configs(session, "--describe", "--broker", "1")
    configs(session, "--alter", *default, "--add-config", "log.retention.ms=259200000")
    wait_defaults_agree(session)
    configs(session, "--describe", *default)
    configs(session, "--describe", "--broker-defaults")
    configs(session, "--alter", *broker, "--add-config", "log.retention.ms=soon")
    configs(session, "--alter", *broker, "--add-config", "broker.id=7")
    if session.line == "kafka-4":  # 3.9's tool asks broker 9 itself, and waits for it until it times out
        configs(session, "--describe", "--entity-type", "brokers", "--entity-name", "9")
    configs(session, "--alter", *broker, "--delete-config", "log.cleaner.backoff.ms")
    configs(session, "--alter", *default, "--delete-config", "log.retention.ms")
    wait_defaults_agree(session)
    configs(session, "--describe", *broker)
    configs(session, "--describe", *default)


@scenario()
def scram_users(session: Session) -> None:
    user = ("--entity-type", "users", "--entity-name", "tools-alice")
    configs(
        session, "--alter", *user, "--add-config",
        "SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=alice-secret]",
    )  # fmt: skip
    configs(session, "--describe", *user)
    configs(session, "--alter", *user, "--add-config", "SCRAM-SHA-256=[iterations=100,password=x]")
    configs(session, "--alter", *user, "--delete-config", "SCRAM-SHA-512")
    configs(session, "--describe", *user)
    configs(session, "--alter", *user, "--delete-config", "SCRAM-SHA-256")
    configs(session, "--describe", *user)


@scenario()
def client_quotas(session: Session) -> None:
    alice = ("--entity-type", "users", "--entity-name", "tools-quota-alice")
    configs(
        session, "--alter", *alice, "--add-config", "producer_byte_rate=1048576,consumer_byte_rate=2097152"
    )
    configs(session, "--describe", *alice)
    app = ("--entity-type", "clients", "--entity-name", "tools-app")
    configs(session, "--alter", *app, "--add-config", "request_percentage=50")
    configs(session, "--describe", *app)
    both = (*alice, "--entity-type", "clients", "--entity-name", "tools-app")
    configs(session, "--alter", *both, "--add-config", "producer_byte_rate=1024")
    configs(session, "--describe", *both)
    configs(session, "--describe", "--entity-type", "users", "--entity-default")
    configs(
        session,
        "--alter",
        "--entity-type",
        "users",
        "--entity-default",
        "--add-config",
        "producer_byte_rate=4096",
    )
    configs(session, "--describe", "--entity-type", "users", "--entity-default")
    configs(
        session,
        "--alter",
        "--entity-type",
        "ips",
        "--entity-name",
        "127.0.0.9",
        "--add-config",
        "connection_creation_rate=10",
    )
    configs(session, "--describe", "--entity-type", "ips", "--entity-name", "127.0.0.9")
    configs(session, "--alter", *alice, "--add-config", "producer_byte_rate=lots")
    configs(session, "--alter", *alice, "--add-config", "no_such_quota=1")
    # undo, so the other scenarios' clients are not throttled
    configs(session, "--alter", *both, "--delete-config", "producer_byte_rate")
    configs(session, "--alter", *alice, "--delete-config", "producer_byte_rate,consumer_byte_rate")
    configs(session, "--alter", *app, "--delete-config", "request_percentage")
    configs(
        session,
        "--alter",
        "--entity-type",
        "users",
        "--entity-default",
        "--delete-config",
        "producer_byte_rate",
    )
    configs(
        session,
        "--alter",
        "--entity-type",
        "ips",
        "--entity-name",
        "127.0.0.9",
        "--delete-config",
        "connection_creation_rate",
    )
    configs(session, "--describe", "--entity-type", "users")
    configs(session, "--describe", "--entity-type", "clients")


@scenario(targets=("single-node",), lines=("kafka-4",))
def alter_log_dirs_throttle(session: Session) -> None:
    """The throttle of moves between log dirs, per broker and as the cluster default (refused by
    odradek until it throttled them)."""
    rate = "replica.alter.log.dirs.io.max.bytes.per.second"
    broker = ("--entity-type", "brokers", "--entity-name", "1")
    default = ("--entity-type", "brokers", "--entity-default")
    configs(session, "--alter", *broker, "--add-config", f"{rate}=1048576")
    configs(session, "--describe", *broker)
    configs(session, "--alter", *default, "--add-config", f"{rate}=2097152")
    configs(session, "--describe", *default)
    configs(session, "--alter", *broker, "--add-config", f"{rate}=-1")
    configs(session, "--alter", *broker, "--delete-config", rate)
    configs(session, "--alter", *default, "--delete-config", rate)
    configs(session, "--describe", *broker)
    configs(session, "--describe", *default)
