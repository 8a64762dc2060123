"""Apache Kafka 3.9 and odradek side by side, in one run, driven by Kafka's own tools (issue #27).

    .venv/bin/python bench/kafka_side_by_side.py            # full matrix, 3 rounds -> docs/bench + docs
    .venv/bin/python bench/kafka_side_by_side.py --quick    # 1 round, fewer records -> docs/bench/quick
    .venv/bin/python bench/kafka_side_by_side.py --only "3 brokers"   # scenarios whose label has this
    .venv/bin/python bench/kafka_side_by_side.py --report-only        # rebuild the doc section
    .venv/bin/python bench/kafka_side_by_side.py --profile produce --only "1 KiB, acks=1, none"
        # py-spy on odradek through the first matching scenario -> docs/bench/kafka-side-by-side-profile-*

For each scenario and round, a fresh deployment of each kind in turn (the order flips every round, so
neither always runs on the warmer machine) goes through bench/side_by_side/measure.py's steps; the
ratios are of the medians of the rounds, so both sides of a ratio come from the same run. Raw records,
the machine's load average before and after each measurement, and the exact command go to
docs/bench/kafka-side-by-side.json; the summary to docs/bench/kafka-side-by-side.md and the short table
to docs/benchmarks.md. Everything runs on 127.0.0.1-127.0.0.4 with one ZooKeeper, stopped at the end.
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path[:0] = [str(BENCH), str(REPO)]

from side_by_side import profile, report, tools  # noqa: E402
from side_by_side.deployments import KAFKA_SERVER_START_JVM_OPTIONS, KINDS  # noqa: E402
from side_by_side.measure import Scenario, measure  # noqa: E402
from tests.support.zookeeper import ZooKeeperServer  # noqa: E402

RAW = REPO / "docs" / "bench" / "kafka-side-by-side.json"
QUICK_RAW = REPO / "docs" / "bench" / "quick" / "kafka-side-by-side.json"
#: Record values per produce run. Fewer than the ~50 MB first meant: 120 fresh deployments on two cores
#: shared with other work must fit in about an hour (the JVM's warm-up then weighs on Kafka's figures:
#: the doc says so).
MEGABYTES = {100: 10_000_000, 1024: 20_000_000, 10240: 20_000_000}
CLUSTER_MEGABYTES = 10_000_000
BUDGET_MINUTES = 60.0


def plan(quick: bool) -> list[Scenario]:
    scale = 0.2 if quick else 1.0
    e2e = 100 if quick else 300
    single = [
        Scenario(
            1,
            size,
            acks,
            compression,
            int(MEGABYTES[size] * scale) // size,
            e2e,
            librdkafka_seconds=(1.0 if quick else 2.0) if size == 1024 and compression != "zstd" else 0.0,
            warm_up_records=int(MEGABYTES[size] * scale) // size,
        )
        for size, acks, compression in itertools.product(
            (100, 1024, 10240), ("1", "all"), ("none", "lz4", "zstd")
        )
    ]
    cluster = [
        Scenario(
            3,
            1024,
            "all",
            compression,
            int(CLUSTER_MEGABYTES * scale) // 1024,
            e2e * 2 // 3,
            warm_up_records=int(CLUSTER_MEGABYTES * scale) // 1024,
        )
        for compression in ("none", "lz4")
    ]
    return single + cluster


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="one round, a fifth of the records")
    parser.add_argument("--rounds", type=int, help="rounds (default 3, 1 with --quick)")
    parser.add_argument(
        "--budget-minutes", type=float, default=BUDGET_MINUTES, help="start no round after this long"
    )
    parser.add_argument("--only", action="append", default=[], help="scenarios whose label contains this")
    parser.add_argument("--out", type=Path, help="the raw JSON (default docs/bench/kafka-side-by-side.json)")
    parser.add_argument(
        "--profile", choices=("produce", "consume"), help="only profile odradek in the first --only scenario"
    )
    parser.add_argument("--report-only", action="store_true", help="only rebuild the doc from the raw JSON")
    parser.add_argument(
        "--update-docs",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="write docs/bench/kafka-side-by-side.md and the summary in docs/benchmarks.md (default: full)",
    )
    args = parser.parse_args(argv)
    out = args.out or (QUICK_RAW if args.quick else RAW)
    update_docs = args.update_docs if args.update_docs is not None else not args.quick
    if args.profile:
        chosen = next(s for s in plan(args.quick) if any(o in s.label for o in args.only or [""]))
        return run_profile(chosen, args.profile)
    if not args.report_only:
        rounds = args.rounds or (1 if args.quick else 3)
        scenarios = [s for s in plan(args.quick) if not args.only or any(o in s.label for o in args.only)]
        run(scenarios, rounds, out, args.quick, args.budget_minutes * 60)
    if update_docs:
        report.write(json.loads(out.read_text()), out.relative_to(REPO))
    return 0


def run(scenarios: list[Scenario], rounds: int, out: Path, quick: bool, budget_s: float) -> None:
    """Round after round, every scenario in each (so a run cut short by the budget still has every
    scenario); within a scenario, a fresh deployment of each kind in turn, the order flipped by round."""
    out.parent.mkdir(parents=True, exist_ok=True)
    perf = tools.install()
    started = time.monotonic()
    raw: dict[str, Any] = {
        "machine": machine(),
        "command": "python bench/kafka_side_by_side.py " + " ".join(sys.argv[1:]),
        "started_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "quick": quick,
        "rounds": rounds,
        "kafka_jvm_options": list(KAFKA_SERVER_START_JVM_OPTIONS),
        "tool_jvm_options": list(tools.TOOL_JVM_OPTIONS),
        "load_at_start": os.getloadavg(),
        "scenarios": [],
    }
    with tempfile.TemporaryDirectory(prefix="side-by-side-zk-") as scratch:
        zookeeper = ZooKeeperServer(Path(scratch))
        zookeeper.start()
        try:
            warm_up(perf, zookeeper)
            entries = [{"label": s.label, **asdict(s), "runs": []} for s in scenarios]
            raw["scenarios"] = entries
            for round_ in range(rounds):
                if round_ and time.monotonic() - started > budget_s:
                    raw["rounds_skipped"] = f"rounds {round_ + 1}-{rounds}: the time budget was spent"
                    break
                for scenario, entry in zip(scenarios, entries, strict=True):
                    for kind in KINDS if round_ % 2 == 0 else tuple(reversed(KINDS)):
                        record = measure(kind, scenario, perf, zookeeper)
                        entry["runs"].append({"round": round_, **record})
                        print(f"{scenario.label} #{round_} {kind}: {brief(record)}", flush=True)
                        out.write_text(json.dumps(raw, indent=1) + "\n")
        finally:
            zookeeper.stop()
            perf.close()
    raw["load_at_end"] = os.getloadavg()
    raw["minutes"] = round((time.monotonic() - started) / 60, 1)
    out.write_text(json.dumps(raw, indent=1) + "\n")
    print(f"{raw['minutes']} min; raw results in {out}", flush=True)


def run_profile(scenario: Scenario, phase: str) -> int:
    perf = tools.install()
    with tempfile.TemporaryDirectory(prefix="side-by-side-zk-") as scratch:
        zookeeper = ZooKeeperServer(Path(scratch))
        zookeeper.start()
        try:
            warm_up(perf, zookeeper)
            summary = profile.profile(scenario, phase, perf, zookeeper, RAW.parent)
        finally:
            zookeeper.stop()
            perf.close()
    top = ", ".join(f"{s['function']} {s['percent']:.0f}%" for s in summary["self"][:5])
    print(f"{summary['samples']} samples, broker CPU {summary['broker_cpu_s']:.1f} s; self: {top}")
    return 0


def warm_up(perf: tools.PerfTools, zookeeper: ZooKeeperServer) -> None:
    """One unrecorded run first, so that no measurement pays for the tools' JVM warming up."""
    scenario = Scenario(1, 1024, "1", "none", 5_000, 50)
    record = measure("odradek", scenario, perf, zookeeper)
    print(f"warm-up: {brief(record)}", flush=True)


def brief(record: dict[str, Any]) -> str:
    if not record.get("ok"):
        return f"FAILED {record.get('error', '')[:400]}"
    return (
        f"start {record['startup_s']:.1f} s, produce {record['produce']['mb_per_s']:.1f} MB/s, "
        f"consume {record['consume']['fetch_mb_per_s']:.1f} MB/s, e2e p50/p99 {record['e2e']['p50_ms']}/"
        f"{record['e2e']['p99_ms']} ms, CPU/MB {record['produce_cpu_s_per_mb']:.4f}/"
        f"{record['consume_cpu_s_per_mb']:.4f} s, RSS {record['peak_rss_bytes'] / 2**20:.0f} MiB, "
        f"load {record['load_before'][0]:.1f}->{record['load_after'][0]:.1f}, wall {record['wall_s']:.0f} s"
    )


def machine() -> dict[str, Any]:
    model = ""
    with open("/proc/cpuinfo") as cpuinfo:
        model = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")), "")
    java = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False).stderr
    commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    return {
        "cores": os.cpu_count(),
        "cpu_model": model,
        "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "java": java.strip().splitlines()[0] if java.strip() else "?",
        "kafka": "Apache Kafka 3.9.2 (kafka_2.13, ZooKeeper mode)",
        "odradek_commit": commit,
    }


if __name__ == "__main__":
    raise SystemExit(main())
