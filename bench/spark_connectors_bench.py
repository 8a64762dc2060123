"""odradek's Python Spark source and sink against Spark's own Kafka connector (`spark-sql-kafka-0-10`, the
`kafka` format, Apache Kafka's Java client inside): rows per second of the same queries over the same
topic, and of writing the same rows, in one Spark session and one run, taking turns. Its raw figures go
to docs/bench/spark-connectors.json and its section ("Spark connectors") to docs/bench/spark.md.

    .venv/bin/python bench/spark_connectors_bench.py                 # 2M rows, 3 rounds, results written
    .venv/bin/python bench/spark_connectors_bench.py --rows 200000 --repeat 1 --no-write

Spark's connector's jars are resolved by Maven into .cache/maven on first use
(tests/support/spark_kafka_jars.py) and given to the session as `spark.jars`.

Reads, each query run once untimed on each source, then `--repeat` interleaved rounds, best time kept:
- scan: count(*), sum(length(value)), max(offset) (bench/spark_bench.py's);
- rows: every column of every message, aggregated;
- json: parse the value and count views per page, as the pipeline does.
Sources: `odradek`, `odradek (projected)` (the columns the query uses given as a schema, as the pipeline
reads; Spark does not prune a Python source's columns itself) and `kafka` (Spark prunes its columns).
Writes: `--sink-rows` (key, value) rows, cached, written by each sink in turn to a topic of its own.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import textwrap
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO))  # tests.support.spark_kafka_jars

from spark_bench import QUERIES, Timings, produce  # noqa: E402  (bench/ is the script's own directory)

ODRADEK = "odradek"
PROJECTED = "odradek (projected)"
KAFKA = "kafka"
SOURCES = (ODRADEK, PROJECTED, KAFKA)
#: The columns each query uses, for `odradek (projected)`; `rows` uses all of them.
PROJECTED_COLUMNS = {"scan": "value BINARY, offset LONG", "json": "value BINARY"}
RAW = REPO / "docs" / "bench" / "spark-connectors.json"
START, END = "<!-- spark-connectors-bench:start -->", "<!-- spark-connectors-bench:end -->"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sink-rows", type=int, default=500_000)
    parser.add_argument("--output", default=str(REPO / "docs" / "bench" / "spark.md"))
    parser.add_argument("--raw", default=str(RAW))
    parser.add_argument("--no-write", action="store_true", help="print the figures only")
    args = parser.parse_args()

    from odradek.pipelines.run import local_broker, stop_spark
    from odradek.spark.session import local_spark
    from tests.support.spark_kafka_jars import connector_version, spark_jars_setting

    jars = spark_jars_setting()
    with local_broker(args.partitions) as bootstrap:
        started = time.monotonic()
        produce(bootstrap, "bench", args.rows)
        produce_seconds = time.monotonic() - started
        print(f"produced {args.rows:,} messages in {produce_seconds:.1f} s", flush=True)
        spark = local_spark("odradek-connectors-bench", **{"spark.driver.memory": "2g", "spark.jars": jars})
        try:

            def reader(name: str) -> Any:
                # a new one each time: a reader keeps the schema it was given
                read = spark.read.format(name).option("kafka.bootstrap.servers", bootstrap)
                return read.option("subscribe", "bench")

            reads = run_reads(reader, args.repeat)
            writes = run_writes(bootstrap, reader(KAFKA).load(), args.sink_rows, args.repeat)
        finally:
            stop_spark(spark)
    figures = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "rows": args.rows,
        "partitions": args.partitions,
        "repeat": args.repeat,
        "sink_rows": args.sink_rows,
        "produce_seconds": round(produce_seconds, 2),
        "spark_sql_kafka": connector_version(),
        "pyspark": _version("pyspark"),
        "python": platform.python_version(),
        "cores": os.cpu_count(),
        "load_average_at_end": round(os.getloadavg()[0], 1),
        "reads": {f"{q} / {s}": t.seconds for (q, s), t in reads.items()},
        "writes": {s: t.seconds for s, t in writes.items()},
    }
    if not args.no_write:
        Path(args.raw).write_text(json.dumps(figures, indent=2) + "\n")  # first: the run's figures are kept
    report = render(figures, reads, writes)
    print(report)
    if not args.no_write:
        write_section(Path(args.output), report)
        print(f"written to {args.raw} and {args.output}")
    return 0


def run_reads(reader: Callable[[str], Any], repeat: int) -> dict[tuple[str, str], Timings]:
    """Seconds per (query, source); the sources take turns within each round to share the noise."""
    rows = reader(KAFKA).load().count()  # also starts the executors' consumers and Python workers
    if reader(ODRADEK).load().count() != rows:
        raise RuntimeError("the two connectors read different numbers of rows")
    timings: dict[tuple[str, str], Timings] = {}
    for query_name, query in QUERIES.items():
        frames = {ODRADEK: reader(ODRADEK).load(), KAFKA: reader(KAFKA).load()}
        if query_name in PROJECTED_COLUMNS:
            frames[PROJECTED] = reader(ODRADEK).schema(PROJECTED_COLUMNS[query_name]).load()
        answers = {name: tuple(query(frame).collect()[0]) for name, frame in frames.items()}  # untimed
        if len(set(answers.values())) != 1:
            raise RuntimeError(f"{query_name}: the sources answered differently: {answers}")
        for round_number in range(repeat):
            for name, frame in frames.items():
                seconds = _timed(lambda f=frame, q=query: q(f).collect())
                print(f"{query_name} {name} round {round_number}: {seconds:.2f} s", flush=True)
                timings.setdefault((query_name, name), Timings(rows)).seconds.append(seconds)
    return timings


def run_writes(bootstrap: str, source: Any, rows: int, repeat: int) -> dict[str, Timings]:
    """The same cached (key, value) rows written by each sink, in turns, each to a topic of its own."""
    frame = source.select("key", "value").limit(rows).cache()
    if frame.count() != rows:
        raise RuntimeError(f"fewer than {rows} rows to write")
    timings: dict[str, Timings] = {}
    for round_number in range(repeat):
        for name in (ODRADEK, KAFKA):
            writer = (
                frame.write.format(name)
                .option("kafka.bootstrap.servers", bootstrap)
                .option("topic", f"bench-sink-{name}-{round_number}")
                .mode("append")
            )
            seconds = _timed(writer.save)
            print(f"write {name} round {round_number}: {seconds:.2f} s", flush=True)
            timings.setdefault(name, Timings(rows)).seconds.append(seconds)
    frame.unpersist()
    return timings


def _timed(action: Callable[[], object]) -> float:
    started = time.monotonic()
    action()
    return time.monotonic() - started


def _version(module: str) -> str:
    return str(getattr(__import__(module), "__version__", "?"))


def render(figures: dict[str, Any], reads: dict[tuple[str, str], Timings], writes: dict[str, Timings]) -> str:
    intro = (
        "`bench/spark_connectors_bench.py`: odradek's Python source and sink (`odradek` format) against "
        f"Spark's own Kafka connector (`kafka` format, spark-sql-kafka-0-10 {figures['spark_sql_kafka']} "
        f"on pyspark {figures['pyspark']}, Apache Kafka's Java client inside), the same queries over the "
        f"same topic of an odradek broker, in one local Spark session (`local[2]`) and one run, taking "
        f"turns: {figures['repeat']} rounds after an untimed one, best and median seconds. "
        f"`{PROJECTED}` is odradek's source given the query's columns as a schema, as `odradek pipeline` "
        "reads (Spark prunes its own connector's columns, not a Python source's). The queries are "
        "bench/spark_bench.py's; each source's answer is checked equal to the others' first."
    )
    setting = (
        f"Rows: {figures['rows']:,} in {figures['partitions']} partitions (page-view JSON, about 70 bytes, "
        f"keyed by user), produced in {figures['produce_seconds']} s; writes: {figures['sink_rows']:,} "
        f"cached (key, value) rows. Machine: {figures['cores']} cores, Python {figures['python']}; load "
        f"average at the end {figures['load_average_at_end']} (other work shared the machine). Raw "
        "figures: docs/bench/spark-connectors.json."
    )
    lines = [
        START,
        "## Spark connectors: odradek's and Spark's own",
        "",
        textwrap.fill(intro, 110),
        "",
        textwrap.fill(setting, 110),
        "",
        "| what | connector | best s | median s | rows/s (best) | odradek / kafka, best | median |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for query_name in QUERIES:
        kafka = reads[(query_name, KAFKA)]
        for source in SOURCES:
            if (query_name, source) in reads:
                lines.append(_row(f"read: {query_name}", source, reads[(query_name, source)], kafka))
    for source in (ODRADEK, KAFKA):
        lines.append(_row("write", source, writes[source], writes[KAFKA]))
    lines += [
        "",
        textwrap.fill(
            "odradek / kafka above 1 means odradek's connector moved more rows per second. The `kafka` "
            "connector reads on the JVM's own Java client and hands Spark rows directly; odradek's "
            "crosses from a Python worker as Arrow batches, which pyspark turns into rows one by one "
            "(see the Spark section).",
            110,
        ),
        END,
    ]
    return "\n".join(lines)


def _row(what: str, source: str, timing: Timings, kafka: Timings) -> str:
    return (
        f"| {what} | {source} | {timing.best:.2f} | {timing.median:.2f} | {timing.rows / timing.best:,.0f} "
        f"| {kafka.best / timing.best:.2f} | {kafka.median / timing.median:.2f} |"
    )


def write_section(path: Path, section: str) -> None:
    """Replace the text between this bench's markers, or put it after the "## Spark" section (before the
    next marker or heading), or at the end; nothing else changes."""
    text = path.read_text()
    marked = re.compile(re.escape(START) + r".*?" + re.escape(END), re.S)
    if marked.search(text):
        text = marked.sub(lambda _: section, text, count=1)
    else:
        after_spark = re.compile(r"^## Spark\n.*?(?=^## |^<!--|\Z)", re.S | re.M).search(text)
        at = after_spark.end() if after_spark else len(text)
        text = text[:at].rstrip("\n") + "\n\n" + section + "\n\n" + text[at:].lstrip("\n")
    path.write_text(text.rstrip("\n") + "\n")


if __name__ == "__main__":
    sys.exit(main())
