"""The performance tools (short runs) and the verifiable producer and consumer that Kafka's own system
tests drive. Their output is rates and events that no two runs repeat, so each step's transcript is a
summary: what must hold of it (every record acknowledged exactly once, the counts and the layout of
the lines), checked the same way against Kafka and against odradek."""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from tests.support.tool_scenarios.session import Session, scenario
from tests.support.tool_scenarios.topics import create

B = "--bootstrap-server"
RECORDS = 2000

_PRODUCER_SUMMARY = re.compile(
    r"^(\d+) records sent, [\d.]+ records/sec \([\d.]+ MB/sec\), [\d.]+ ms avg latency, "
    r"[\d.]+ ms max latency, \d+ ms 50th, \d+ ms 95th, \d+ ms 99th, \d+ ms 99\.9th\.$"
)


def _producer_performance(text: str) -> str:
    lines = text.splitlines()
    final = _PRODUCER_SUMMARY.match(lines[-1]) if lines else None
    if final is None:
        return "no final summary line:\n" + text
    return f"final summary: {final.group(1)} records sent (rates, latencies and percentiles as numbers)"


def _consumer_performance(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) != 2:
        return "expected a header and one line of figures:\n" + text
    header = [cell.strip() for cell in lines[0].split(",")]
    values = dict(zip(header, (cell.strip() for cell in lines[1].split(",")), strict=False))
    return "\n".join(
        [
            ", ".join(header),
            f"data.consumed.in.nMsg={values.get('data.consumed.in.nMsg')} "
            f"data.consumed.in.MB={values.get('data.consumed.in.MB')}",
        ]
    )


@scenario()
def perf_tests(session: Session) -> None:
    create(session, "tools-perf", 3, record=False)
    session.run(
        "kafka-producer-perf-test", "--topic", "tools-perf", "--num-records", str(RECORDS),
        "--record-size", "100", "--throughput", "-1",
        "--producer-props", "bootstrap.servers={bootstrap}", "acks=all", "linger.ms=5",
        shown=_producer_performance,
    )  # fmt: skip
    count = "--num-records" if session.line == "kafka-4" else "--messages"
    session.run(
        "kafka-consumer-perf-test", B, "{bootstrap}", "--topic", "tools-perf", count, str(RECORDS),
        "--timeout", "60000", shown=_consumer_performance,
    )  # fmt: skip


def _events(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def _verifiable_producer(text: str) -> str:
    events = _events(text)
    names = Counter(e["name"] for e in events)
    acked = [e for e in events if e["name"] == "producer_send_success"]
    values = sorted(int(e["value"]) for e in acked)
    by_partition: dict[int, list[int]] = {}
    for event in acked:
        by_partition.setdefault(event["partition"], []).append(event["offset"])
    contiguous = all(sorted(o) == list(range(len(o))) for o in by_partition.values())
    (tool_data,) = [e for e in events if e["name"] == "tool_data"] or [{}]
    return "\n".join(
        [
            f"events: {dict(sorted(names.items()))}",
            f"acknowledged values are 0..{len(values) - 1} once each: {values == list(range(len(values)))}",
            f"offsets of each partition run from 0 without a gap: {contiguous}",
            f"tool_data: sent={tool_data.get('sent')} acked={tool_data.get('acked')}",
        ]
    )


def _verifiable_consumer(expected: int) -> Callable[[str], str]:
    def summarise(text: str) -> str:
        events = _events(text)
        names = Counter(e["name"] for e in events)
        consumed = [e for e in events if e["name"] == "records_consumed"]
        total = sum(e["count"] for e in consumed)
        ranges: dict[str, list[tuple[int, int]]] = {}
        for event in consumed:
            for partition in event["partitions"]:
                key = f"{partition['topic']}-{partition['partition']}"
                ranges.setdefault(key, []).append((partition["minOffset"], partition["maxOffset"]))
        in_order = all(
            all(b[0] == a[1] + 1 for a, b in itertools.pairwise(r)) and r[0][0] == 0 for r in ranges.values()
        )
        commits = [e for e in events if e["name"] == "offsets_committed"]
        committed: dict[str, int] = {}
        for commit in commits:
            for offset in commit.get("offsets", []):
                committed[f"{offset['topic']}-{offset['partition']}"] = offset["offset"]
        ends = {key: r[-1][1] + 1 for key, r in ranges.items()}
        return "\n".join(
            [
                f"event kinds: {sorted(names)}",
                f"records consumed: {total} (expected {expected})",
                f"each partition read from offset 0 in order, no gap or repeat: {in_order}",
                f"every commit succeeded: {all(c.get('success') for c in commits)}",
                f"last commits are where reading ended: {committed == ends}",
            ]
        )

    return summarise


def verifiable_clients(session: Session, topic: str, group: str, *consumer_args: str) -> None:
    create(session, topic, 3, record=False)
    session.run(
        "kafka-verifiable-producer", B, "{bootstrap}", "--topic", topic, "--max-messages", "300",
        "--acks", "-1", shown=_verifiable_producer,
    )  # fmt: skip
    session.run(
        "kafka-verifiable-consumer", B, "{bootstrap}", "--topic", topic, "--group-id", group,
        "--max-messages", "300", "--reset-policy", "earliest", *consumer_args,
        shown=_verifiable_consumer(300), timeout=180,
    )  # fmt: skip


@scenario()
def verifiable(session: Session) -> None:
    verifiable_clients(session, "tools-verifiable", "tools-verifiable-group")


@scenario(lines=("kafka-4",), odradek_only=True)
def verifiable_consumer_protocol(session: Session) -> None:
    """KIP-848's consumer protocol, which Kafka 3.9 serves in KRaft mode only: no golden transcript; the
    summary must say every record was read once and every commit succeeded."""
    verifiable_clients(
        session, "tools-verifiable-848", "tools-verifiable-848", "--group-protocol", "consumer"
    )
    summary = session.text()
    for expected in (
        "acknowledged values are 0..299 once each: True",
        "records consumed: 300 (expected 300)",
        "each partition read from offset 0 in order, no gap or repeat: True",
        "every commit succeeded: True",
        "last commits are where reading ended: True",
    ):
        assert expected in summary, f"{expected!r} not in:\n{summary}"
