"""The console's data layer against a real broker, without a browser: what each page is built from."""

from __future__ import annotations

import time
from typing import Any

import pytest

from odradek.console.data.cluster import BrokerMemory, cluster_state
from odradek.console.data.config_cache import SummaryConfigCache
from odradek.console.data.groups import (
    apply_offset_reset,
    describe_group,
    group_lag,
    list_groups,
    plan_offset_reset,
)
from odradek.console.data.log_dirs import describe_log_dirs
from odradek.console.data.messages import Position, browse
from odradek.console.data.offsets import log_ranges
from odradek.console.data.session import ClusterError, Session
from odradek.console.history import History
from odradek.console.sampler import MESSAGES_IN, Sampler, group_total_lag, topic_messages_in
from odradek.console.settings import ConsoleSettings
from tests.console import admin_api
from tests.console.conftest import BILLING_CONSUMED_PER_PARTITION, ORDERS_PARTITIONS, ORDERS_PER_PARTITION
from tests.console.seed import BINARY_VALUE, produce_orders
from tests.support.broker_process import BrokerProcess, free_port


@pytest.fixture(scope="module")
def session(seeded: BrokerProcess) -> Session:
    return Session(ConsoleSettings(seeded.bootstrap))


def test_cluster_state_matches_metadata(session: Session, admin: Any) -> None:
    state = session.run(lambda admin: cluster_state(admin, BrokerMemory()))
    assert state.cluster_id == admin_api.cluster_id(admin)
    assert [(b.id, b.up, b.is_controller) for b in state.brokers] == [(1, True, True)]
    assert sorted(state.topics) == admin_api.topic_names(admin)
    assert state.topics["__consumer_offsets"].internal and not state.topics["orders"].internal
    assert [p.partition for p in state.topics["orders"].partitions] == list(range(ORDERS_PARTITIONS))


def test_log_ranges_and_sizes(session: Session, admin: Any, seeded: BrokerProcess) -> None:
    wanted = [("orders", p) for p in range(ORDERS_PARTITIONS)]
    ranges = session.run(lambda admin: log_ranges(admin, wanted))
    ends = admin_api.log_offsets(admin, "orders", "latest")
    assert {p: r.log_end_offset for (_, p), r in ranges.items()} == ends
    state = session.run(lambda admin: cluster_state(admin, BrokerMemory(), with_topics=False))
    report = session.run(lambda admin: describe_log_dirs(admin, state.brokers))
    assert report.errors == {}
    assert [d.path for d in report.dirs] == [str(seeded.data_dir)]
    assert report.topic_sizes()["orders"] == admin_api.topic_size(seeded.bootstrap, "orders")


def test_browse_from_each_kind_of_start(session: Session) -> None:
    oldest = session.run(lambda admin: browse(admin, "events", [0], Position("oldest"), 10))
    assert [m.offset for m in oldest] == [0, 1, 2]
    assert oldest[1].value == BINARY_VALUE and oldest[1].key is None
    newest = session.run(lambda admin: browse(admin, "events", [0], Position("newest"), 2))
    assert [m.offset for m in newest] == [2, 1]
    from_offset = session.run(lambda admin: browse(admin, "orders", [2], Position("offset", 7), 3))
    assert [(m.partition, m.offset) for m in from_offset] == [(2, 7), (2, 8), (2, 9)]
    assert dict(from_offset[0].headers)["source"] == b"shop"
    stamp = from_offset[0].timestamp_ms
    assert stamp is not None
    future = session.run(
        lambda admin: browse(admin, "orders", [0], Position("timestamp", stamp + 3_600_000), 5)
    )
    assert future == []


def test_group_lag_and_reset_plans(session: Session, admin: Any) -> None:
    assert "billing" in [g.group_id for g in session.run(list_groups)]
    detail = session.run(lambda admin: describe_group(admin, "billing"))
    assert detail is not None and detail.state == "Empty" and not detail.members
    ends = admin_api.log_offsets(admin, "orders", "latest")
    lag = session.run(lambda admin: group_lag(admin, "billing"))
    assert {(row.topic, row.partition): row.lag for row in lag} == {
        ("orders", p): ends[p] - BILLING_CONSUMED_PER_PARTITION for p in range(ORDERS_PARTITIONS)
    }
    latest = session.run(lambda admin: plan_offset_reset(admin, "billing", [], "latest", None))
    assert latest == {
        ("orders", p): (BILLING_CONSUMED_PER_PARTITION, ends[p]) for p in range(ORDERS_PARTITIONS)
    }
    earliest = session.run(lambda admin: plan_offset_reset(admin, "billing", ["orders"], "earliest", None))
    assert {new for _, new in earliest.values()} == {0}
    assert session.run(lambda admin: describe_group(admin, "no-such-group")) is None


def test_reset_refused_while_the_group_has_members(session: Session, seeded: BrokerProcess) -> None:
    from confluent_kafka import Consumer

    consumer = Consumer(
        {"bootstrap.servers": seeded.bootstrap, "group.id": "active", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe(["events"])
    try:
        deadline = time.monotonic() + 30
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.2)
        with pytest.raises(ClusterError, match="no active members"):
            session.run(lambda admin: apply_offset_reset(admin, "active", {("events", 0): 0}))
    finally:
        consumer.close()


def test_the_sampler_records_throughput_and_lag(session: Session, seeded: BrokerProcess) -> None:
    history = History(10)
    sampler = Sampler(session, history, BrokerMemory(), SummaryConfigCache())
    sampler.sample()
    produce_orders(seeded.bootstrap, 10, first=20_000)
    sampler.sample()
    assert history.latest(MESSAGES_IN) is not None and history.latest(MESSAGES_IN) > 0  # type: ignore[operator]
    assert history.latest(topic_messages_in("orders")) == pytest.approx(history.latest(MESSAGES_IN))
    assert history.latest(topic_messages_in("events")) == 0
    assert len(history.points(group_total_lag("billing"))) == 2


def test_an_unreachable_cluster_is_a_cluster_error() -> None:
    session = Session(ConsoleSettings(f"127.0.0.1:{free_port()}", request_timeout=2))
    with pytest.raises(ClusterError, match="cannot reach broker") as raised:
        session.run(list_groups)
    assert raised.value.unreachable


def test_seeded_orders_are_what_the_tests_expect(admin: Any) -> None:
    assert all(
        end >= ORDERS_PER_PARTITION for end in admin_api.log_offsets(admin, "orders", "latest").values()
    )
