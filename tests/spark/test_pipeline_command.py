"""`odradek pipeline` run as a command: twice over, stopped by Ctrl-C, refusing another cluster's
checkpoint. Each starts its own Spark JVM (and broker), so they are a module of their own, run beside the
in-process pipeline tests."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from tests.spark.pipeline_commands import (
    SUMMARY,
    descendants,
    left_running,
    parquet_rows,
    pipeline_command,
    run_pipeline_command,
)
from tests.support.broker_process import BrokerProcess
from tests.support.spark_jvm import pipeline_environment


def test_pipeline_run_twice_processes_everything_both_times(tmp_path: Path) -> None:
    """The second run has a new temporary broker: the first run's checkpoint is not its to resume (it
    would read nothing and say "done"); it starts fresh and replaces that run's Parquet."""
    arguments = ("--events", "1000", "--rate", "0", "--trigger", "available-now")
    summaries = []
    for _ in range(2):
        completed = run_pipeline_command(tmp_path, *arguments)
        assert completed.returncode == 0, completed.stdout + completed.stderr
        summary = SUMMARY.search(completed.stdout)
        assert summary is not None, completed.stdout
        summaries.append(summary)
    assert "starting fresh" not in summaries[0].string and "starting fresh" in summaries[1].string
    first_rows, second_rows = (int(s.group(3)) for s in summaries)
    assert first_rows > 0 and second_rows == first_rows
    output = tmp_path / "pipeline-output"
    rows = parquet_rows(output)
    assert len(rows) == second_rows, "the first run's Parquet is left beside the second's"
    assert sum(r["value"] for r in rows if r["metric"] == "views_per_page") == 1000
    assert "temporary broker and is gone with it" in summaries[1].string


def test_pipeline_interrupted_by_ctrl_c_exits_130_leaving_no_process_and_its_output(tmp_path: Path) -> None:
    log_path = tmp_path / "pipeline.log"
    with open(log_path, "wb") as log:
        # Its own process group, which the test signals whole as a terminal's Ctrl-C does.
        process = subprocess.Popen(
            pipeline_command("--events", "50000", "--rate", "500", "--trigger", "1 second"),
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
        below = descendants(process.pid)
        assert any("java" in command for _, command in below.values()), below
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
    assert left_running(below, 1.0) == {}
    rows_written = int(summary.group(3))
    assert len(parquet_rows(tmp_path / "pipeline-output")) == rows_written


def test_pipeline_refuses_a_checkpoint_of_another_cluster_on_a_given_broker(
    spark_broker: BrokerProcess, tmp_path: Path
) -> None:
    checkpoint = tmp_path / "checkpoint"
    (checkpoint / "page_stats" / "offsets").mkdir(parents=True)
    (checkpoint / "odradek-pipeline.json").write_text(
        json.dumps({"cluster_id": "another-cluster", "topic": "refused-views", "topic_id": "x"})
    )
    # --bootstrap, the option's old name, still works and says it is deprecated.
    completed = run_pipeline_command(
        tmp_path,
        *("--bootstrap", spark_broker.bootstrap, "--input-topic", "refused-views"),
        *("--checkpoint-dir", str(checkpoint), "--output-dir", str(tmp_path / "out")),
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
