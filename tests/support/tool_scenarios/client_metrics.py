"""kafka-client-metrics (KIP-714): client telemetry subscriptions made, listed, described, refused and
deleted, and kafka-configs on the same resources. Kafka 3.9 serves them only in KRaft mode: the
transcript is recorded against Kafka 4.x in KRaft mode."""

from __future__ import annotations

from tests.support.tool_scenarios.session import Session, scenario, wait_for

B = "--bootstrap-server"


def _listed(session: Session, *names: str) -> None:
    """Waits until every broker lists exactly `names`: on a cluster, a subscription made or deleted
    reaches the other brokers a moment later (Kafka's metadata log, odradek's ZooKeeper watch), and a
    tool asks any of them."""

    def listed() -> bool:
        for host, port in session.target.addresses.values():
            result = session.quiet("kafka-client-metrics", B, f"{host}:{port}", "--list", check=False)
            if result.exit_code != 0 or set(result.stdout.split()) != set(names):
                return False
        return True

    wait_for(listed, 30, f"exactly {names or 'no subscription'} listed", interval=0.5)


def client_metrics_command(session: Session, *args: str, sort: bool = False) -> None:
    session.run("kafka-client-metrics", B, "{bootstrap}", *args, sort=sort)


@scenario(targets=("single-node", "cluster"), lines=("kafka-4",), reference="kafka-4-kraft")
def client_metrics(session: Session) -> None:
    name = ("--name", "tools-subscription")
    client_metrics_command(session, "--list")
    client_metrics_command(
        session,
        "--alter",
        *name,
        "--metrics",
        "org.apache.kafka.producer.,org.apache.kafka.consumer.",
        "--interval",
        "1000",
        "--match",
        "client_id=tools-.*",
    )
    _listed(session, "tools-subscription")
    client_metrics_command(session, "--describe", *name)
    client_metrics_command(session, "--alter", "--name", "tools-everything", "--metrics", "*")
    _listed(session, "tools-subscription", "tools-everything")
    client_metrics_command(session, "--list", sort=True)
    client_metrics_command(session, "--describe", sort=True)
    # refused as Kafka refuses them: an interval out of range, a match on no client attribute
    client_metrics_command(session, "--alter", "--name", "tools-refused", "--interval", "50")
    client_metrics_command(session, "--alter", "--name", "tools-refused", "--match", "user=alice")
    session.run(
        "kafka-configs",
        B,
        "{bootstrap}",
        "--describe",
        "--entity-type",
        "client-metrics",
        "--entity-name",
        "tools-everything",
    )
    client_metrics_command(session, "--delete", *name)
    client_metrics_command(session, "--delete", "--name", "tools-everything")
    _listed(session)
    client_metrics_command(session, "--list")
