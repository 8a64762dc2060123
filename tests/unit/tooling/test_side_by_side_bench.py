"""bench/kafka_side_by_side.py reads Kafka's tools as they print, judges the goals by the ratios, and
`make bench` runs it (the benchmark itself is not part of the suite)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.broker_process import REPO
from tests.support.requirements import require_executable


@pytest.fixture(scope="module", autouse=True)
def bench_on_path() -> Iterator[None]:
    sys.path[:0] = [str(REPO / "bench")]
    yield
    sys.path.remove(str(REPO / "bench"))


def test_producer_performance_summary_is_read_from_its_last_line() -> None:
    from side_by_side import tools

    stdout = (
        "49156 records sent, 9831.2 records/sec (9.60 MB/sec), 1021.3 ms avg latency, "
        "1655.0 ms max latency.\n"
        "100000 records sent, 12345.678901 records/sec (12.06 MB/sec), 812.40 ms avg latency, 1700.00 ms "
        "max latency, 790 ms 50th, 1500 ms 95th, 1650 ms 99th, 1690 ms 99.9th.\n"
    )
    figures = tools.parse_producer(stdout)
    assert (figures.records, figures.mb_per_s, figures.latency_p50_ms, figures.latency_p99_ms) == (
        100000,
        12.06,
        790.0,
        1650.0,
    )


def test_consumer_performance_figures_come_from_its_csv_row_not_its_header() -> None:
    from side_by_side import tools

    stdout = (
        "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
        "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec\n"
        "2026-12-06 15:39:01:416, 2026-12-06 15:39:03:416, 19.0735, 9.5367, 19531, 9765.5000, 500, 1500, "
        "12.7157, 13020.6667\n"
    )
    figures = tools.parse_consumer(stdout)
    assert (figures.records, figures.fetch_mb_per_s, figures.rebalance_ms) == (19531, 12.7157, 500)


def test_a_tool_that_printed_no_figures_is_a_failed_run() -> None:
    from side_by_side import tools

    with pytest.raises(tools.ToolFailed):
        tools.parse_end_to_end("0\t3.2\n")


def test_end_to_end_latency_percentiles_are_read() -> None:
    from side_by_side import tools

    figures = tools.parse_end_to_end(
        "0\t5.1\nAvg latency: 1.2345 ms\nPercentiles: 50th = 1, 99th = 7, 99.9th = 9\n"
    )
    assert (figures.avg_ms, figures.p50_ms, figures.p99_ms, figures.p999_ms) == (1.2345, 1, 7, 9)


def test_a_goal_is_not_met_when_one_scenario_falls_short() -> None:
    from side_by_side import report

    raw = {
        "scenarios": [
            _scenario("1 broker RF=1, 1 KiB, acks=1, none", 10.0, 12.0),
            _scenario("1 broker RF=1, 1 KiB, acks=all, none", 10.0, 8.0),
        ]
    }
    verdicts = {goal: verdict for goal, _, _, verdict in report.goals(report.medians(raw))}
    assert verdicts["produce throughput at 1 KiB, odradek / Kafka"] == "not met (1 short)"
    assert verdicts["broker CPU per MB in, odradek / Kafka"] == "met"


def test_make_bench_runs_the_side_by_side_bench() -> None:
    make = require_executable("make")
    planned = subprocess.run(
        [make, "--no-print-directory", "-n", "-C", str(REPO), "bench"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    assert any(line.endswith("bench/kafka_side_by_side.py") for line in planned.splitlines()), planned


def _scenario(label: str, kafka_mb_s: float, odradek_mb_s: float) -> dict[str, Any]:
    def run(kind: str, mb_s: float) -> dict[str, Any]:
        return {
            "kind": kind,
            "ok": True,
            "startup_s": 5.0,
            "produce": {"mb_per_s": mb_s, "records_per_s": mb_s * 1000},
            "consume": {"fetch_mb_per_s": mb_s},
            "e2e": {"p50_ms": 1, "p99_ms": 5},
            "produce_cpu_s_per_mb": 0.02 if kind == "odradek" else 0.05,
            "consume_cpu_s_per_mb": 0.01,
            "peak_rss_bytes": 2**20 * (60 if kind == "odradek" else 400),
        }

    return {"label": label, "brokers": 1, "runs": [run("kafka", kafka_mb_s), run("odradek", odradek_mb_s)]}
