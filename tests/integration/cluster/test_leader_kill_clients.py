"""#17's acceptance "clients follow leaders": kafka-python, confluent-kafka, aiokafka and kcat keep
producing and consuming across the SIGKILL of their partition's leader, with only retriable errors,
and lose no acknowledged record.

test_replication's cluster (ZooKeeper, three broker processes, RF=3, min.insync.replicas=2, a
ZooKeeper session near Kafka's default, so the controller learns of the death as it would in
production). Each client has its own one-partition topic, all four led by the same broker (not the
controller, which must elect the new leaders), and a consumer group of its own. The leader is killed
while they run, and restarted once every client has made progress without it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.integration.cluster.test_replication import (  # noqa: F401 - cluster and zk_view are fixtures
    BROKER_IDS,
    PATIENCE_S,
    Cluster,
    _state,
    cluster,
    zk_view,
)
from tests.support.failover_clients import CLIENTS, FailoverClient
from tests.support.interop import wait_until
from tests.support.requirements import require_executable, require_module

#: Records each client must have acknowledged and consumed before the kill, and again after the
#: new leader is elected (before the old one returns) and after it is back.
PROGRESS = 30
#: The broker killed: a leader that is not the controller (the controller elects new leaders when
#: its ZooKeeper session expires), or the leader that is also the controller (a new controller is
#: elected first, then it elects the new leaders).
KILLED = ("a leader", "the leader and controller")


@contextmanager
def _clients(replicated: Cluster, killed: str) -> Iterator[list[FailoverClient]]:
    """One pair per client, each on its own topic; the topics are led by the controller when it is
    the broker to kill, else by another broker."""
    require_module("aiokafka")
    require_executable("kcat")
    made: list[FailoverClient] = []
    try:
        for kind in CLIENTS:
            topic = f"leader-kill-{killed.replace(' ', '-')}-{kind.name}"
            replicated.create(topic, led_by_controller=killed == KILLED[1])
            made.append(kind(replicated.bootstrap(), topic, group=f"{topic}-group"))
        yield made
    finally:
        for client in made:
            client.abandon()


def _progressed(clients: list[FailoverClient], acked: dict[str, int], consumed: dict[str, int]) -> bool:
    return all(
        c.acked_count() >= acked[c.name] + PROGRESS and c.consumed_count() >= consumed[c.name] + PROGRESS
        for c in clients
    )


def _wait_for_progress(
    clients: list[FailoverClient], since: tuple[dict[str, int], dict[str, int]], what: str, interval: float
) -> None:
    """Until every client has acknowledged and consumed PROGRESS more records; a timeout says who lags."""
    try:
        wait_until(lambda: _progressed(clients, *since), PATIENCE_S, what, interval)
    except AssertionError as timed_out:
        lagging = {
            c.name: {"acked": c.acked_count(), "consumed": c.consumed_count(), "errors": c.errors[-5:]}
            for c in clients
        }
        raise AssertionError(f"{timed_out}; since {since}: {lagging}") from None


def _counts(clients: list[FailoverClient]) -> tuple[dict[str, int], dict[str, int]]:
    return {c.name: c.acked_count() for c in clients}, {c.name: c.consumed_count() for c in clients}


@pytest.mark.parametrize("killed", KILLED)
def test_every_client_rides_out_the_sigkill_of_its_leader_with_only_retriable_errors(
    cluster: Cluster,  # noqa: F811 - the fixture
    killed: str,
) -> None:
    with _clients(cluster, killed) as clients:
        _ride_out_a_leader_kill(cluster, clients, killed)


def _ride_out_a_leader_kill(replicated: Cluster, clients: list[FailoverClient], killed: str) -> None:
    leaders = {int(_state(replicated, c.topic)["leader"]) for c in clients}
    assert len(leaders) == 1, leaders
    (leader,) = leaders
    assert (leader == replicated.controller()) == (killed == KILLED[1])

    for client in clients:
        client.start()
    nothing = {c.name: 0 for c in clients}
    _wait_for_progress(clients, (nothing, nothing), "every client under way", 0.1)

    replicated.brokers[leader].kill()
    before_kill = _counts(clients)
    wait_until(
        lambda: all(_state(replicated, c.topic)["leader"] not in (-1, leader) for c in clients),
        PATIENCE_S,
        "new leaders",
        0.1,
    )
    # the same client objects and processes, never restarted, go on with the new leader
    _wait_for_progress(clients, before_kill, "every client past the kill", 0.2)

    replicated.brokers[leader].start()
    wait_until(
        lambda: all(len(_state(replicated, c.topic)["isr"]) == len(BROKER_IDS) for c in clients),
        PATIENCE_S,
        "the ISRs full again",
        0.1,
    )
    after_restart = _counts(clients)
    _wait_for_progress(clients, after_restart, "every client with it back", 0.2)

    for client in clients:
        client.stop_producing()
    wait_until(lambda: all(c.caught_up() for c in clients), PATIENCE_S, "every ack consumed", 0.2)
    for client in clients:
        client.stop_consuming()

    for client in clients:
        assert client.delivery_failures == [], client.name
        assert client.acked_count() == client.sent, client.name
        assert client.lost() == {}, client.name
        # each record where its producer was told it is, and once: the log is offsets 0..sent-1
        # holding every value once (a batch retried to the new leader was not written twice)
        wrong = {v: o for v, o in client.acknowledged.items() if client.log.get(o) != v}
        assert wrong == {}, client.name
        assert sorted(client.log) == list(range(client.sent)), client.name
        assert client.unexpected_errors() == [], client.name
    # the kill was felt (the test did what it says): the librdkafka clients report the dead broker
    assert all(c.errors for c in clients if c.name in ("confluent", "kcat"))
    # each group committed, as its consumer left, the end of what it consumed: all of it
    committed = _committed(replicated, clients)
    why = [(c.name, c.errors[-10:], getattr(c, "stderr", [])[-30:]) for c in clients]
    assert committed == {c.group: c.sent for c in clients}, why


def _committed(replicated: Cluster, clients: list[FailoverClient]) -> dict[str, int]:
    from confluent_kafka import Consumer, TopicPartition

    found: dict[str, int] = {}
    for client in clients:
        reader = Consumer({"bootstrap.servers": replicated.bootstrap(), "group.id": client.group})
        try:
            (committed,) = reader.committed([TopicPartition(client.topic, 0)], timeout=30)
            found[client.group] = committed.offset
        finally:
            reader.close()
    return found
