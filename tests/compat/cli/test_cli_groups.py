"""`odradek groups` against a real broker while a confluent-kafka consumer group is consuming: lag per
partition, members and state, reset-offsets as a dry run and executed, and deletion."""

from __future__ import annotations

import queue
import threading
import time
from typing import Any

import pytest

from odradek.protocol.api_keys import ApiKey
from tests.compat.cli.cli_support import odradek, requires_api, table_rows
from tests.support.broker_process import BrokerProcess

GROUP_APIS = (
    ApiKey.CREATE_TOPICS,
    ApiKey.FIND_COORDINATOR,
    ApiKey.JOIN_GROUP,
    ApiKey.SYNC_GROUP,
    ApiKey.HEARTBEAT,
    ApiKey.LEAVE_GROUP,
    ApiKey.OFFSET_COMMIT,
    ApiKey.OFFSET_FETCH,
    ApiKey.LIST_GROUPS,
    ApiKey.DESCRIBE_GROUPS,
    ApiKey.DELETE_GROUPS,
)
CLIENT_ID = "cli-test-member"


class Member:
    """A confluent-kafka group member polling in a thread; commits are handed to that thread."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        from confluent_kafka import Consumer

        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "client.id": CLIENT_ID,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 300,
                "log_level": 0,
            }
        )
        self.consumer.subscribe([topic])
        self.consumed = 0
        self.assigned: list[Any] = []
        self.member_id: str | None = None
        self.commits: queue.Queue[list[Any]] = queue.Queue()
        self.committed = threading.Event()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._poll, daemon=True)
        self.thread.start()

    def _poll(self) -> None:
        while not self.stop.is_set():
            message = self.consumer.poll(0.1)
            if message is not None and message.error() is None:
                self.consumed += 1
            # A consumer is not safe for calls from two threads at once: only this thread touches it.
            self.assigned = self.consumer.assignment()
            self.member_id = self.consumer.memberid()
            try:
                offsets = self.commits.get_nowait()
            except queue.Empty:
                continue
            self.consumer.commit(offsets=offsets, asynchronous=False)
            self.committed.set()

    def wait_until(self, condition: Any, what: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for the member to {what}")
            time.sleep(0.05)

    def commit(self, topic: str, offsets: dict[int, int]) -> None:
        from confluent_kafka import TopicPartition

        self.commits.put([TopicPartition(topic, partition, offset) for partition, offset in offsets.items()])
        assert self.committed.wait(15), "the member did not commit"

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)
        self.consumer.close()


@pytest.fixture
def member_factory() -> Any:
    members: list[Member] = []

    def start(bootstrap: str, group: str, topic: str) -> Member:
        members.append(Member(bootstrap, group, topic))
        return members[-1]

    yield start
    for member in members:
        if not member.stop.is_set():
            member.close()


def offsets_by_partition(text: str) -> dict[str, tuple[str, str, str]]:
    return {
        row["PARTITION"]: (row["CURRENT-OFFSET"], row["LOG-END-OFFSET"], row["LAG"])
        for row in table_rows(text, "GROUP")
    }


def test_describe_shows_lag_while_a_group_consumes_then_reset_and_delete(
    cli_broker: BrokerProcess, member_factory: Any
) -> None:
    bootstrap, topic, group = cli_broker.bootstrap, "cli-lag", "cli-lag-group"
    requires_api(bootstrap, *GROUP_APIS)
    before_any_message = str(int(time.time() * 1000) - 1000)
    assert odradek("topics", "create", "--topic", topic, "--partitions", "2", bootstrap=bootstrap).code == 0
    for partition, count in ((0, 5), (1, 3)):
        lines = "".join(f"p{partition}-{i}\n" for i in range(count))
        run = odradek(
            "produce", "--topic", topic, "--partition", str(partition), bootstrap=bootstrap, stdin=lines
        )
        assert run.code == 0, run.stderr

    member = member_factory(bootstrap, group, topic)
    member.wait_until(lambda: len(member.assigned) == 2 and member.consumed == 8, "consume all 8 messages")
    member.commit(topic, {0: 2, 1: 1})

    states = table_rows(odradek("groups", "list", "--state", bootstrap=bootstrap).stdout, "GROUP")
    assert {"GROUP": group, "STATE": "Stable"} in states

    described = odradek("groups", "describe", "--group", group, bootstrap=bootstrap)
    assert described.code == 0, described.stderr
    rows = table_rows(described.stdout, "GROUP")
    member_id = member.member_id
    assert rows == [
        {
            "GROUP": group,
            "TOPIC": topic,
            "PARTITION": "0",
            "CURRENT-OFFSET": "2",
            "LOG-END-OFFSET": "5",
            "LAG": "3",
            "CONSUMER-ID": member_id,
            "HOST": "/127.0.0.1",
            "CLIENT-ID": CLIENT_ID,
        },
        {
            "GROUP": group,
            "TOPIC": topic,
            "PARTITION": "1",
            "CURRENT-OFFSET": "1",
            "LOG-END-OFFSET": "3",
            "LAG": "2",
            "CONSUMER-ID": member_id,
            "HOST": "/127.0.0.1",
            "CLIENT-ID": CLIENT_ID,
        },
    ]
    members = table_rows(
        odradek("groups", "describe", "--group", group, "--members", bootstrap=bootstrap).stdout, "GROUP"
    )
    assert members == [
        {
            "GROUP": group,
            "CONSUMER-ID": member_id,
            "HOST": "/127.0.0.1",
            "CLIENT-ID": CLIENT_ID,
            "#PARTITIONS": "2",
        }
    ]
    state = odradek("groups", "describe", "--group", group, "--state", bootstrap=bootstrap).lines()
    assert state[0].split() == ["GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"]
    assert state[1].split()[0] == group and state[1].split()[-2:] == ["Stable", "1"]

    reset = ("groups", "reset-offsets", "--group", group, "--topic", topic)
    planned = odradek(*reset, "--to-earliest", bootstrap=bootstrap)
    assert planned.code == 0
    assert [
        (r["PARTITION"], r["CURRENT-OFFSET"], r["NEW-OFFSET"]) for r in table_rows(planned.stdout, "GROUP")
    ] == [
        ("0", "2", "0"),
        ("1", "1", "0"),
    ]
    assert "Dry run: nothing changed (the group has active members" in planned.stderr
    refused = odradek(*reset, "--to-earliest", "--execute", bootstrap=bootstrap)
    assert refused.code == 1
    assert (
        f"offsets can only be reset while group '{group}' has no active members (it is Stable)"
        in refused.stderr
    )
    busy = odradek("groups", "delete", "--group", group, bootstrap=bootstrap)
    assert (busy.code, busy.stderr) == (
        1,
        f"odradek groups delete: consumer group '{group}' has active members; stop them first\n",
    )

    member.close()
    idle = odradek("groups", "describe", "--group", group, bootstrap=bootstrap)
    assert idle.lines()[0] == f"Consumer group '{group}' has no active members."
    assert offsets_by_partition(idle.stdout) == {"0": ("2", "5", "3"), "1": ("1", "3", "2")}
    assert {row["CONSUMER-ID"] for row in table_rows(idle.stdout, "GROUP")} == {"-"}

    def execute(*target: str, scope: tuple[str, ...] = ("--topic", topic)) -> list[tuple[str, str, str]]:
        """(partition, before, after) of an executed reset; each before shows the previous reset landed."""
        run = odradek(
            "groups", "reset-offsets", "--group", group, *scope, *target, "--execute", bootstrap=bootstrap
        )
        assert (run.code, run.stderr) == (0, ""), run.stderr
        return [
            (r["PARTITION"], r["CURRENT-OFFSET"], r["NEW-OFFSET"]) for r in table_rows(run.stdout, "GROUP")
        ]

    assert execute("--to-earliest") == [("0", "2", "0"), ("1", "1", "0")]
    assert execute("--shift-by", "2") == [("0", "0", "2"), ("1", "0", "2")]
    assert execute("--to-offset", "100") == [("0", "2", "5"), ("1", "2", "3")]  # kept within the log
    assert execute("--to-datetime", before_any_message) == [("0", "5", "0"), ("1", "3", "0")]
    assert execute("--to-latest", scope=("--topic", f"{topic}:1")) == [("1", "0", "3")]
    everything = odradek(
        "groups", "reset-offsets", "--group", group, "--all-topics", "--shift-by", "-1", bootstrap=bootstrap
    )
    assert [
        (r["PARTITION"], r["CURRENT-OFFSET"], r["NEW-OFFSET"]) for r in table_rows(everything.stdout, "GROUP")
    ] == [
        ("0", "0", "0"),
        ("1", "3", "2"),
    ]
    assert everything.stderr == "Dry run: nothing changed. Add --execute to commit these offsets.\n"
    after = odradek("groups", "describe", "--group", group, bootstrap=bootstrap)
    assert offsets_by_partition(after.stdout) == {"0": ("0", "5", "5"), "1": ("3", "3", "0")}

    deleted = odradek("groups", "delete", "--group", group, bootstrap=bootstrap)
    assert (deleted.code, deleted.stdout) == (0, f"Deleted consumer group {group}.\n")
    gone = odradek("groups", "describe", "--group", group, bootstrap=bootstrap)
    assert (gone.code, gone.stderr) == (
        1,
        f"odradek groups describe: consumer group '{group}' does not exist\n",
    )
    assert group not in odradek("groups", "list", bootstrap=bootstrap).lines()


def test_group_mistakes_are_named(cli_broker: BrokerProcess) -> None:
    bootstrap = cli_broker.bootstrap
    requires_api(bootstrap, *GROUP_APIS)
    missing = odradek("groups", "delete", "--group", "cli-no-such-group", bootstrap=bootstrap)
    assert (missing.code, missing.stderr) == (
        1,
        "odradek groups delete: consumer group 'cli-no-such-group' does not exist\n",
    )
    nothing = odradek(
        "groups",
        "reset-offsets",
        "--group",
        "cli-no-such-group",
        "--all-topics",
        "--to-earliest",
        bootstrap=bootstrap,
    )
    assert nothing.code == 1 and "has no committed offsets; name the topics with --topic" in nothing.stderr
    no_topic = odradek(
        "groups", "reset-offsets", "--group", "g", "--topic", "cli-no-such-topic", "--to-earliest",
        bootstrap=bootstrap,
    )  # fmt: skip
    assert (no_topic.code, no_topic.stderr) == (
        1,
        "odradek groups reset-offsets: topic 'cli-no-such-topic' does not exist\n",
    )
    both = odradek(
        "groups", "reset-offsets", "--group", "g", "--topic", "t", "--to-earliest", "--dry-run", "--execute"
    )
    assert both.code == 2 and "argument --execute: not allowed with argument --dry-run" in both.stderr
