"""The page-view pipeline end to end, its aggregates checked against the same numbers in plain Python."""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections import Counter, defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from odradek.pipelines import JobSettings, PipelineError, PipelineRun, page_views, run_pipeline
from odradek.pipelines.connectors import require_kafka_connector
from tests.spark.kafka_helpers import consume_all
from tests.support.broker_process import BrokerProcess

EVENTS = 3000
EVENTS_PER_SECOND = 15.0  # of event time: about 200 s, four one-minute windows


@pytest.mark.parametrize("connector", ["odradek", "kafka"])
def test_pipeline_aggregates_match_plain_python(
    request: pytest.FixtureRequest, spark_broker: BrokerProcess, tmp_path: Path, connector: str
) -> None:
    """With odradek's source and sink, and with Spark's own kafka connector (`--connector kafka`)."""
    spark = request.getfixturevalue("kafka_connector" if connector == "kafka" else "spark")
    settings = JobSettings(
        bootstrap=spark_broker.bootstrap,
        input_topic=f"pipeline-views-{connector}",
        output_topic=f"pipeline-stats-{connector}",
        output_dir=str(tmp_path / "out"),
        checkpoint_dir=str(tmp_path / "checkpoints"),
        max_offsets_per_trigger=1000,
        trigger="1 second",
        connector=connector,
    )
    run = PipelineRun(settings, events=EVENTS, rate=None, seed=11, events_per_second=EVENTS_PER_SECOND)
    result = run_pipeline(run, spark, say=lambda _: None)
    assert result.produced == EVENTS and result.stopped_by is None and result.exit_code == 0

    views = list(page_views(EVENTS, seed=11, events_per_second=EVENTS_PER_SECOND))
    expected_views = Counter((v.ts // 60_000 * 60_000, v.page) for v in views)
    users: dict[int, set[str]] = defaultdict(set)
    for v in views:
        users[v.ts // 60_000 * 60_000].add(v.user_id)
    expected_users = {start: len(u) for start, u in users.items()}

    def millis(value: datetime) -> int:
        return (
            int(value.replace(tzinfo=UTC).timestamp() * 1000)
            if value.tzinfo is None
            else int(value.timestamp() * 1000)
        )

    page_rows = spark.read.parquet(settings.output_dir).where("metric = 'views_per_page'").collect()
    got_views = {(millis(r.window_start), r.page): r.value for r in page_rows}
    assert len(got_views) == len(page_rows), "a window was written twice"
    per_window_got = Counter[int]()
    per_window_expected = Counter[int]()
    for (start, _), n in got_views.items():
        per_window_got[start] += n
    for (start, _), n in expected_views.items():
        per_window_expected[start] += n
    assert sorted(per_window_got.items()) == sorted(per_window_expected.items())
    assert got_views == dict(expected_views)

    user_rows = spark.read.parquet(settings.output_dir).where("metric = 'active_users'").collect()
    assert {millis(r.window_start): r.value for r in user_rows} == expected_users
    assert len(user_rows) == len(expected_users)

    # The same rows went to the output topic through the sink.
    messages = [
        json.loads(m.value or b"") for m in consume_all(spark_broker.bootstrap, settings.output_topic)
    ]
    assert len(messages) == len(page_rows) + len(user_rows) == result.rows_written
    assert sum(m["value"] for m in messages if m["metric"] == "views_per_page") == EVENTS
    assert sorted(m["value"] for m in messages if m["metric"] == "active_users") == sorted(
        expected_users.values()
    )


def test_pipeline_resumed_on_the_same_broker_processes_the_new_events(
    spark: Any, spark_broker: BrokerProcess, tmp_path: Path
) -> None:
    """Same cluster, same topic: the checkpoint is resumed, and the new page views' event times start
    past its watermark (the same times again would all be late and give no window)."""
    settings = JobSettings(
        bootstrap=spark_broker.bootstrap,
        input_topic="resumed-views",
        output_topic="resumed-stats",
        output_dir=str(tmp_path / "out"),
        checkpoint_dir=str(tmp_path / "checkpoints"),
        trigger="available-now",
    )
    run = PipelineRun(settings, events=600, rate=None, seed=3, events_per_second=EVENTS_PER_SECOND)
    first = run_pipeline(run, spark, say=lambda _: None)
    said: list[str] = []
    second = run_pipeline(run, spark, say=said.append)
    assert any(line.startswith("resuming from checkpoint") for line in said), said
    assert first.rows_written > 0 and second.rows_written > 0
    views = spark.read.parquet(settings.output_dir).where("metric = 'views_per_page'")
    assert views.groupBy().sum("value").collect()[0][0] == 1200
    assert views.select("window_start", "page").distinct().count() == views.count(), "a window written twice"


# ----- `odradek pipeline` as a person runs it: a child process, its own temporary broker ----------------


def test_pipeline_on_a_spark_without_the_kafka_connector_stops_in_one_line(spark: Any) -> None:
    """The check run_pipeline makes before the generator starts: the shared session has the connector,
    so a class it lacks stands for a session without it."""
    require_kafka_connector(spark)
    with pytest.raises(PipelineError) as refused:
        require_kafka_connector(spark, "org.apache.spark.sql.kafka010.NoSuchProvider")
    assert str(refused.value) == (
        "Spark has no kafka data source: give --connector-jars with the spark-sql-kafka-0-10_2.13 jar and "
        "its dependencies (kafka-clients, commons-pool2, spark-token-provider-kafka-0-10)"
    )


def test_spark_driver_listens_on_loopback_only(spark: Any) -> None:
    from pyspark import SparkContext

    assert spark.sparkContext.getConf().get("spark.driver.host") == "127.0.0.1"
    gateway = SparkContext._gateway
    assert gateway is not None
    addresses = _listening_addresses(gateway.proc.pid)
    assert addresses and addresses <= {"127.0.0.1"}, addresses


def _listening_addresses(pid: int) -> set[str]:
    """IPv4/IPv6 addresses the process's listening TCP sockets are bound to (from /proc, Linux)."""
    inodes = set()
    for fd in (Path("/proc") / str(pid) / "fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    addresses = set()
    for table in ("tcp", "tcp6"):
        for line in (Path("/proc") / str(pid) / "net" / table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # LISTEN
                addresses.add(_address(fields[1].split(":")[0]))
    return addresses


def _address(hex_address: str) -> str:
    raw = bytes.fromhex(hex_address)
    if len(raw) == 4:
        return socket.inet_ntop(socket.AF_INET, raw[::-1])
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
    mapped = socket.inet_ntop(socket.AF_INET6, words)
    return mapped.removeprefix("::ffff:")
