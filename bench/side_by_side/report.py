"""The raw side-by-side results as tables: medians per scenario and kind, odradek's ratios to Kafka's,
and issue #27's goals met or not.

docs/bench/kafka-side-by-side.md gets every scenario; docs/benchmarks.md the goals table. Each is
rewritten only between its markers, so the prose around them (the analysis, the profile) stays.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
DETAIL = REPO / "docs" / "bench" / "kafka-side-by-side.md"
SUMMARY = REPO / "docs" / "benchmarks.md"
START = "<!-- kafka-side-by-side:start -->"
END = "<!-- kafka-side-by-side:end -->"
MIB = 2**20

#: name: (what it is, where it is in a run record, higher is better)
METRICS: dict[str, tuple[str, Callable[[dict[str, Any]], float], bool]] = {
    "produce_mb_s": ("produce MB/s", lambda r: r["produce"]["mb_per_s"], True),
    "produce_records_s": ("produce records/s", lambda r: r["produce"]["records_per_s"], True),
    "consume_mb_s": ("consume MB/s", lambda r: r["consume"]["fetch_mb_per_s"], True),
    "e2e_p50_ms": ("e2e p50 ms", lambda r: r["e2e"]["p50_ms"], False),
    "e2e_p99_ms": ("e2e p99 ms", lambda r: r["e2e"]["p99_ms"], False),
    "cpu_in": ("CPU s/MB in", lambda r: r["produce_cpu_s_per_mb"], False),
    "cpu_out": ("CPU s/MB out", lambda r: r["consume_cpu_s_per_mb"], False),
    "rss_mib": ("peak RSS MiB", lambda r: r["peak_rss_bytes"] / MIB, False),
    "startup_s": ("start-up s", lambda r: r["startup_s"], False),
    "librdkafka_produce_mb_s": (
        "librdkafka produce MB/s",
        lambda r: r["librdkafka"]["produce_mb_per_s"],
        True,
    ),
    "librdkafka_consume_mb_s": (
        "librdkafka consume MB/s",
        lambda r: r["librdkafka"]["consume_mb_per_s"],
        True,
    ),
}


def medians(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """Per scenario: its label, and per kind each metric's median over the rounds that completed."""
    rows = []
    for scenario in raw["scenarios"]:
        row: dict[str, Any] = {"label": scenario["label"], "brokers": scenario["brokers"]}
        for kind in ("kafka", "odradek"):
            runs = [r for r in scenario["runs"] if r["kind"] == kind and r.get("ok")]
            row[f"{kind}_runs"] = len(runs)
            row[f"{kind}_failed"] = [
                r.get("error", "")[:300] for r in scenario["runs"] if r["kind"] == kind and not r.get("ok")
            ]
            for name, (_, read, _) in METRICS.items():
                values = [read(r) for r in runs if not name.startswith("librdkafka") or r.get("librdkafka")]
                row[f"{kind}_{name}"] = statistics.median(values) if values else None
        rows.append(row)
    return rows


def ratio(row: dict[str, Any], name: str) -> float | None:
    """odradek's median over Kafka's."""
    ours, theirs = row.get(f"odradek_{name}"), row.get(f"kafka_{name}")
    if ours is None or theirs is None or theirs == 0:
        return None
    return float(ours) / float(theirs)


def geometric_mean(values: list[float]) -> float | None:
    kept = [v for v in values if v > 0]
    return math.exp(sum(math.log(v) for v in kept) / len(kept)) if kept else None


def goals(rows: list[dict[str, Any]]) -> list[tuple[str, str, str, str]]:
    """(goal, figure, bound, met?) for each of issue #27's goals."""
    at_1k = [r for r in rows if ", 1 KiB," in r["label"]]
    result = []

    def judge(
        name: str, scope: list[dict[str, Any]], bound: float, higher: bool, what: str, goal: str
    ) -> None:
        ratios = [x for x in (ratio(r, name) for r in scope) if x is not None]
        if not ratios:
            result.append((what, "no complete pair", goal, "not measured"))
            return
        met = sum(1 for x in ratios if (x >= bound if higher else x <= bound))
        worst = min(ratios) if higher else max(ratios)
        mean = geometric_mean(ratios)
        figure = f"{mean:.2f}x geometric mean, worst {worst:.2f}x, {met} of {len(ratios)} scenarios within"
        verdict = "met" if met == len(ratios) else f"not met ({len(ratios) - met} short)"
        result.append((what, figure, goal, verdict))

    judge("produce_mb_s", at_1k, 1.0, True, "produce throughput at 1 KiB, odradek / Kafka", ">= 1.0x")
    judge("consume_mb_s", at_1k, 1.0, True, "consume throughput at 1 KiB, odradek / Kafka", ">= 1.0x")
    judge("cpu_in", rows, 1.0, False, "broker CPU per MB in, odradek / Kafka", "<= 1.0x")
    judge("cpu_out", rows, 1.0, False, "broker CPU per MB out, odradek / Kafka", "<= 1.0x")
    judge("rss_mib", rows, 0.25, False, "peak RSS, odradek / Kafka", "<= 0.25x")
    judge("startup_s", rows, 1.0, False, "start-up time, odradek / Kafka", "< 1.0x (faster)")
    judge("e2e_p50_ms", rows, 1.0, False, "end-to-end latency p50, odradek / Kafka", "(no goal) <= 1.0x")
    judge("e2e_p99_ms", rows, 1.0, False, "end-to-end latency p99, odradek / Kafka", "(no goal) <= 1.0x")
    return result


def _number(value: float | None, digits: int = 1) -> str:
    if value is None:
        return "-"
    if abs(value) < 0.1 and value != 0:
        return f"{value:.4f}"
    return f"{value:,.{digits}f}"


def _ratio_cell(row: dict[str, Any], name: str) -> str:
    value = ratio(row, name)
    return "-" if value is None else f"{value:.2f}x"


def detail_table(rows: list[dict[str, Any]]) -> str:
    names = [n for n in METRICS if not n.startswith("librdkafka")]
    header = "| scenario | runs K/O | " + " | ".join(f"{METRICS[n][0]} K / O (ratio)" for n in names) + " |"
    lines = [header, "|" + " --- |" * (len(names) + 2)]
    for row in rows:
        cells = [
            f"{_number(row[f'kafka_{n}'], 2)} / {_number(row[f'odradek_{n}'], 2)} ({_ratio_cell(row, n)})"
            for n in names
        ]
        lines.append(
            f"| {row['label']} | {row['kafka_runs']}/{row['odradek_runs']} | " + " | ".join(cells) + " |"
        )
    return "\n".join(lines)


def librdkafka_table(rows: list[dict[str, Any]]) -> str:
    kept = [r for r in rows if r.get("kafka_librdkafka_produce_mb_s") is not None]
    if not kept:
        return "(no librdkafka runs in this file)"
    lines = [
        "| scenario | produce MB/s K / O (ratio) | consume MB/s K / O (ratio) |",
        "| --- | --- | --- |",
    ]
    for row in kept:
        cells = [
            f"{_number(row[f'kafka_{n}'])} / {_number(row[f'odradek_{n}'])} ({_ratio_cell(row, n)})"
            for n in ("librdkafka_produce_mb_s", "librdkafka_consume_mb_s")
        ]
        lines.append(f"| {row['label']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def goals_table(rows: list[dict[str, Any]]) -> str:
    lines = ["| goal | this run (odradek / Kafka) | bound | |", "| --- | --- | --- | --- |"]
    lines += [f"| {what} | {figure} | {bound} | {verdict} |" for what, figure, bound, verdict in goals(rows)]
    return "\n".join(lines)


def run_facts(raw: dict[str, Any], raw_path: Path) -> str:
    machine = raw["machine"]
    loads = [r["load_before"][0] for s in raw["scenarios"] for r in s["runs"]] + [
        r["load_after"][0] for s in raw["scenarios"] for r in s["runs"]
    ]
    failed = sum(1 for s in raw["scenarios"] for r in s["runs"] if not r.get("ok"))
    total = sum(len(s["runs"]) for s in raw["scenarios"])
    rounds = 1 + max((r["round"] for s in raw["scenarios"] for r in s["runs"]), default=-1)
    missing = range(rounds + 1, raw["rounds"] + 1)
    skipped = (
        f" Round {', '.join(map(str, missing))} not started: the time budget was spent." if missing else ""
    )
    return (
        f"Run of {raw['started_at']} (`{raw['command']}`, {rounds} of {raw['rounds']} rounds, "
        f"{raw.get('minutes', '?')} min), odradek at commit {machine['odradek_commit']}, "
        f"{machine['cores']} cores ({machine['cpu_model']}), {machine['memory_gib']} GiB, "
        f"{machine['java']}. The machine was shared with other work: 1-minute load average "
        f"{min(loads, default=0):.1f}-{max(loads, default=0):.1f} across the measurements "
        f"(each run's before/after in [{raw_path.name}]({raw_path.name})). "
        f"{total - failed} of {total} runs complete.{skipped}"
    )


def write(raw: dict[str, Any], raw_path: Path) -> None:
    rows = medians(raw)
    detail = (
        f"{run_facts(raw, raw_path)}\n\n### Goals\n\n{goals_table(rows)}\n\n"
        "### Every scenario (medians; K = Apache Kafka 3.9.2, O = odradek; ratio = O / K)\n\n"
        f"{detail_table(rows)}\n\n"
        "### The librdkafka bench on the same brokers (bench/broker_bench, one producer for 2 s, then "
        "one consumer)\n\n"
        f"{librdkafka_table(rows)}\n"
    )
    failures = [
        f"- {row['label']}, {kind}: {error}"
        for row in rows
        for kind in ("kafka", "odradek")
        for error in row[f"{kind}_failed"]
    ]
    if failures:
        detail += "\n### Runs that failed\n\n" + "\n".join(failures) + "\n"
    replace_between_markers(DETAIL, detail)
    replace_between_markers(
        SUMMARY, f"{run_facts(raw, raw_path).split('. The machine')[0]}.\n\n{goals_table(rows)}\n"
    )


def replace_between_markers(path: Path, body: str) -> None:
    text = path.read_text()
    if START not in text or END not in text:
        raise RuntimeError(f"{path} has no {START} ... {END} markers to write between")
    before, rest = text.split(START, 1)
    after = rest.split(END, 1)[1]
    path.write_text(f"{before}{START}\n{body}{END}{after}")
