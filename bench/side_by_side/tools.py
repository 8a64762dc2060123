"""Kafka 3.9's own load tools, the same for both kinds of broker: ProducerPerformance
(`kafka-producer-perf-test.sh`), ConsumerPerformance (`kafka-consumer-perf-test.sh`) and EndToEndLatency
(`kafka-e2e-latency.sh`), and what each prints, parsed.

They run one after another in one long-lived JVM (tests/support/kafka_tools.py's launcher, each run
with its own producer or consumer), started with the options `kafka-run-class.sh` gives a tool
(-Xmx256M, G1, the full JIT): starting a JVM per run would cost more than a run of 50 MB on two shared
cores, and a warm client then measures the broker, not the client's class loading.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.support import kafka_tools
from tests.support.kafka_reference import KAFKA_JVM_PERFORMANCE_OPTIONS
from tests.support.requirements import require_executable

LINE = "kafka-3.9"
#: kafka-run-class.sh's KAFKA_HEAP_OPTS for a tool and its KAFKA_JVM_PERFORMANCE_OPTS.
TOOL_JVM_OPTIONS = ("-Xmx256M", *KAFKA_JVM_PERFORMANCE_OPTIONS)
PRODUCER = "kafka-producer-perf-test"
CONSUMER = "kafka-consumer-perf-test"
END_TO_END = "kafka-e2e-latency"


class PerfTools(kafka_tools.Installation):
    """Kafka 3.9's tools with kafka-run-class.sh's JVM options instead of the tests' small ones."""

    def java(self, main: str, args: Sequence[str], log: Path, classpath: str | None = None) -> list[str]:
        return [
            require_executable("java"),
            *TOOL_JVM_OPTIONS,
            *kafka_tools.JVM_LOGGING,
            f"-Dlog4j.configuration={(self.directory / 'log4j.properties').as_uri()}",
            f"-Dodradek.tools.log={log}",
            "-cp",
            classpath or self.classpath,
            main,
            *args,
        ]

    def finish(self) -> None:
        """No class-data-sharing archive: the tests' archive was written with other JVM options."""


def install() -> PerfTools:
    base = kafka_tools.install(LINE)
    return PerfTools(base.line, base.classpath, base.directory)


class ToolFailed(RuntimeError):
    pass


def run(tools: PerfTools, tool: str, args: Sequence[str], timeout: float) -> str:
    """`bin/<tool>.sh args`'s stdout; raises ToolFailed with what it said when it exits non-zero."""
    try:
        result = tools.run(tool, args, timeout=timeout)
    except subprocess.TimeoutExpired as error:
        raise ToolFailed(f"{tool} ran past {timeout:.0f} s") from error
    if result.exit_code != 0:
        raise ToolFailed(f"{tool} exited {result.exit_code}: {result.stderr[-1500:]}{result.log[-1500:]}")
    return result.stdout


@dataclass(frozen=True)
class ProducerFigures:
    records: int
    records_per_s: float
    mb_per_s: float
    latency_avg_ms: float
    latency_p50_ms: float
    latency_p99_ms: float


_PRODUCER_SUMMARY = re.compile(
    r"(?P<records>\d+) records sent, (?P<rate>[\d.]+) records/sec \((?P<mb>[\d.]+) MB/sec\), "
    r"(?P<avg>[\d.]+) ms avg latency, [\d.]+ ms max latency, (?P<p50>\d+) ms 50th, \d+ ms 95th, "
    r"(?P<p99>\d+) ms 99th"
)


def parse_producer(stdout: str) -> ProducerFigures:
    """ProducerPerformance's last line (MB there is 2^20 bytes of record values)."""
    matches = list(_PRODUCER_SUMMARY.finditer(stdout))
    if not matches:
        raise ToolFailed(f"no summary in ProducerPerformance's output: {stdout[-1000:]}")
    match = matches[-1]
    return ProducerFigures(
        int(match["records"]),
        float(match["rate"]),
        float(match["mb"]),
        float(match["avg"]),
        float(match["p50"]),
        float(match["p99"]),
    )


@dataclass(frozen=True)
class ConsumerFigures:
    records: int
    mb: float
    #: From the first poll to the last record, group join included.
    mb_per_s: float
    #: The fetching alone (join and rebalance time left out).
    fetch_mb_per_s: float
    fetch_records_per_s: float
    rebalance_ms: int


def parse_consumer(stdout: str) -> ConsumerFigures:
    """ConsumerPerformance's CSV line: start.time, end.time, data.consumed.in.MB, MB.sec,
    data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec."""
    rows = [line.split(", ") for line in stdout.splitlines() if line.count(", ") == 9]
    rows = [row for row in rows if not row[0].startswith("start.time")]
    if not rows:
        raise ToolFailed(f"no figures in ConsumerPerformance's output: {stdout[-1000:]}")
    row = rows[-1]
    return ConsumerFigures(
        int(row[4]), float(row[2]), float(row[3]), float(row[8]), float(row[9]), int(row[6])
    )


@dataclass(frozen=True)
class EndToEndFigures:
    avg_ms: float
    #: Whole milliseconds: EndToEndLatency truncates each sample.
    p50_ms: int
    p99_ms: int
    p999_ms: int


_E2E_AVG = re.compile(r"Avg latency: (?P<avg>[\d.]+) ms")
_E2E_PERCENTILES = re.compile(
    r"Percentiles: 50th = (?P<p50>\d+), 99th = (?P<p99>\d+), 99.9th = (?P<p999>\d+)"
)


def parse_end_to_end(stdout: str) -> EndToEndFigures:
    average = _E2E_AVG.search(stdout)
    percentiles = _E2E_PERCENTILES.search(stdout)
    if average is None or percentiles is None:
        raise ToolFailed(f"no figures in EndToEndLatency's output: {stdout[-1000:]}")
    return EndToEndFigures(
        float(average["avg"]), int(percentiles["p50"]), int(percentiles["p99"]), int(percentiles["p999"])
    )
