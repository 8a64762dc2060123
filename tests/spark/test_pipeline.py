"""The page-view pipeline end to end, its aggregates checked against the same numbers in plain Python."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections import Counter, defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from odradek.pipelines import JobSettings, PipelineError, PipelineRun, page_views, run_pipeline
from odradek.pipelines.connectors import require_kafka_connector
from tests.spark.kafka_helpers import consume_all
from tests.support.broker_process import BrokerProcess
from tests.support.spark_jvm import pipeline_environment
from tests.support.spark_kafka_jars import spark_jars_setting

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

SUMMARY = re.compile(r"^(done|stopped \(SIGINT\)): produced (\d+) page views; (\d+) aggregate rows", re.M)


def _pipeline_command(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "odradek.cli.main", "pipeline", *arguments]


def _parquet_rows(output_dir: Path) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    rows: list[dict[str, Any]] = pq.read_table(output_dir).to_pylist()  # skips _checkpoints
    return rows


def test_pipeline_run_twice_processes_everything_both_times(tmp_path: Path) -> None:
    """The second run has a new temporary broker: the first run's checkpoint is not its to resume (it
    would read nothing and say "done"); it starts fresh and replaces that run's Parquet."""
    command = _pipeline_command("--events", "1000", "--rate", "0", "--trigger", "available-now")
    summaries = []
    for _ in range(2):
        completed = subprocess.run(
            command, cwd=tmp_path, env=pipeline_environment(), capture_output=True, text=True, timeout=300
        )
        assert completed.returncode == 0, completed.stdout + completed.stderr
        summary = SUMMARY.search(completed.stdout)
        assert summary is not None, completed.stdout
        summaries.append(summary)
    assert "starting fresh" not in summaries[0].string and "starting fresh" in summaries[1].string
    first_rows, second_rows = (int(s.group(3)) for s in summaries)
    assert first_rows > 0 and second_rows == first_rows
    output = tmp_path / "pipeline-output"
    rows = _parquet_rows(output)
    assert len(rows) == second_rows, "the first run's Parquet is left beside the second's"
    assert sum(r["value"] for r in rows if r["metric"] == "views_per_page") == 1000
    assert "temporary broker and is gone with it" in summaries[1].string


def test_pipeline_command_runs_on_sparks_kafka_connector(tmp_path: Path) -> None:
    """`--connector kafka`: Spark's own connector reads the page views and writes the aggregates (at
    least once, the default with it), its jars given with --connector-jars."""
    completed = subprocess.run(
        _pipeline_command(
            *("--connector", "kafka", "--connector-jars", spark_jars_setting()),
            *("--events", "1000", "--rate", "0", "--trigger", "available-now"),
        ),
        cwd=tmp_path,
        env=pipeline_environment(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    summary = SUMMARY.search(completed.stdout)
    assert summary is not None, completed.stdout
    assert "exactly once" not in completed.stdout
    rows = _parquet_rows(tmp_path / "pipeline-output")
    assert len(rows) == int(summary.group(3)) > 0
    assert sum(r["value"] for r in rows if r["metric"] == "views_per_page") == 1000


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


def test_pipeline_interrupted_by_ctrl_c_exits_130_leaving_no_process_and_its_output(tmp_path: Path) -> None:
    log_path = tmp_path / "pipeline.log"
    with open(log_path, "wb") as log:
        # Its own process group, which the test signals whole as a terminal's Ctrl-C does.
        process = subprocess.Popen(
            _pipeline_command("--events", "50000", "--rate", "500", "--trigger", "1 second"),
            cwd=tmp_path,
            env=pipeline_environment(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 180
        while "page_stats: batch" not in log_path.read_text(errors="replace"):
            assert process.poll() is None, log_path.read_text(errors="replace")
            assert time.monotonic() < deadline, "no micro-batch ran"
            time.sleep(0.5)
        descendants = _descendants(process.pid)
        assert any("java" in command for _, command in descendants.values()), descendants
        os.killpg(process.pid, signal.SIGINT)
        assert process.wait(120) == 130
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    output = log_path.read_text(errors="replace")
    assert "Traceback" not in output and "py4j" not in output.lower(), output
    summary = SUMMARY.search(output)
    assert summary is not None and summary.group(1) == "stopped (SIGINT)", output
    assert _left_running(descendants, 1.0) == {}
    rows_written = int(summary.group(3))
    assert len(_parquet_rows(tmp_path / "pipeline-output")) == rows_written


def test_pipeline_refuses_a_checkpoint_of_another_cluster_on_a_given_broker(
    spark_broker: BrokerProcess, tmp_path: Path
) -> None:
    checkpoint = tmp_path / "checkpoint"
    (checkpoint / "page_stats" / "offsets").mkdir(parents=True)
    (checkpoint / "odradek-pipeline.json").write_text(
        json.dumps({"cluster_id": "another-cluster", "topic": "refused-views", "topic_id": "x"})
    )
    # --bootstrap, the option's old name, still works and says it is deprecated.
    completed = subprocess.run(
        _pipeline_command(
            *("--bootstrap", spark_broker.bootstrap, "--input-topic", "refused-views"),
            *("--checkpoint-dir", str(checkpoint), "--output-dir", str(tmp_path / "out")),
        ),
        cwd=tmp_path,
        env=pipeline_environment(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 1, completed.stdout + completed.stderr
    assert "--bootstrap is deprecated; use --bootstrap-server" in completed.stderr
    refusal = completed.stderr.strip().splitlines()[-1]
    assert refusal.startswith(
        f"odradek pipeline: checkpoint {checkpoint} holds offsets of topic refused-views"
    )
    assert "another-cluster" in refusal and "Traceback" not in completed.stderr
    assert (checkpoint / "page_stats" / "offsets").is_dir()


def test_spark_driver_listens_on_loopback_only(spark: Any) -> None:
    from pyspark import SparkContext

    assert spark.sparkContext.getConf().get("spark.driver.host") == "127.0.0.1"
    gateway = SparkContext._gateway
    assert gateway is not None
    addresses = _listening_addresses(gateway.proc.pid)
    assert addresses and addresses <= {"127.0.0.1"}, addresses


def _descendants(pid: int) -> dict[int, tuple[str, str]]:
    """Every process below `pid`: its start time (to tell a reused pid) and command line."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found: dict[int, tuple[str, str]] = {}
    pending = list(children.get(pid, []))
    while pending:
        child = pending.pop()
        try:
            command = (Path("/proc") / str(child) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        found[child] = (_start_time(child) or "", command)
        pending += children.get(child, [])
    return found


def _left_running(processes: dict[int, tuple[str, str]], within_s: float) -> dict[int, str]:
    """Which of `processes` still run `within_s` after their parent ended: as soon as none is left, rather
    than after a fixed pause."""
    deadline = time.monotonic() + within_s
    while True:
        left = {pid: command for pid, (started, command) in processes.items() if _start_time(pid) == started}
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def _start_time(pid: int) -> str | None:
    """When a live process started; None once it is gone or a zombie (exited, its parent not yet
    reaping it: nothing runs, and PID 1 here may never reap an orphan)."""
    try:
        fields = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if len(fields) < 20 or fields[0] == "Z" else fields[19]


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
