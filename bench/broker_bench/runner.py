"""Plan the matrix, run odradek and Tansu alternately on each case, write JSON lines, then the report.

For every case, each repeat starts a fresh broker of each kind in turn (the order flips between
repeats so neither always runs first on a warmer machine), runs the scenario, samples the broker's
CPU and peak RSS, and stops it. The machine's ceilings (loopback TCP, sequential disk write) are
measured in the same run. A time budget bounds the whole run: cases past it are recorded as skipped.
"""

from __future__ import annotations

import argparse
import atexit
import datetime
import importlib.metadata
import itertools
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from broker_bench import peers, scenarios
from broker_bench.scenarios import ProduceParams, Settings

REPO = peers.REPO
DOCS_BENCH = REPO / "docs" / "bench"
BROKERS = ("odradek", "tansu")


@dataclass(frozen=True)
class Case:
    scenario: str
    label: str
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class Plan:
    mode: str
    repeats: int
    settings: Settings
    cases: list[Case]
    ceiling_disk_mib: int
    ceiling_tcp_seconds: float


def build_plan(mode: str, repeats: int | None) -> Plan:
    if mode == "quick":
        settings = Settings(
            duration=2.0,
            e2e_messages=100,
            e2e_timeout=10.0,
            groups=20,
            group_messages=200,
            group_timeout=60.0,
        )
        produce = [ProduceParams(1, "1", 100, "none", 1), ProduceParams(32, "all", 1024, "lz4", 4)]
        many_partitions, disk, tcp = 200, 256, 2.0
    else:
        settings = Settings()
        produce = [
            ProduceParams(partitions, acks, size, compression, producers)
            for partitions, acks, size, compression, producers in itertools.product(
                (1, 32), ("1", "all"), (100, 1024), ("none", "lz4"), (1, 4)
            )
        ]
        many_partitions, disk, tcp = 1000, 2048, 3.0  # 2 GiB: past the point where writes are throttled
    cases = [Case("produce", p.label, asdict(p)) for p in produce]
    cases += [Case("e2e", f"fetch.wait.max.ms={wait}", {"fetch_wait_max_ms": wait}) for wait in (500, 0)]
    cases += [
        Case(
            "many_partitions",
            f"{many_partitions:,} partitions, 100B, acks=1, x1",
            asdict(ProduceParams(partitions=many_partitions)),
        ),
        Case("idle_connections", f"{settings.idle_connections:,} idle connections + 1 producer/consumer"),
        Case("consumer_groups", f"{settings.groups} consumer groups"),
    ]
    return Plan(mode, repeats or 3, settings, cases, disk, tcp)


# ----- running ---------------------------------------------------------------------------------------


_LIVE: list[peers.Broker] = []


def _stop_live_brokers() -> None:
    for broker in list(_LIVE):
        try:
            broker.stop(timeout=10)
        except Exception:
            traceback.print_exc()
    _LIVE.clear()


def _on_signal(signum: int, _frame: object) -> None:
    _stop_live_brokers()
    raise SystemExit(128 + signum)


def measure(
    broker_name: str, case: Case, plan: Plan, work_root: Path, repeat: int, odradek_overrides: dict[str, str]
) -> dict[str, Any]:
    """One broker, started fresh, through one case; always stopped afterwards."""
    work_dir = Path(tempfile.mkdtemp(prefix=f"{broker_name}-", dir=work_root))
    broker = peers.make_broker(broker_name, work_dir, odradek_overrides)
    record: dict[str, Any] = {"broker": broker_name, "repeat": repeat, "ok": False}
    started = time.monotonic()
    try:
        _LIVE.append(broker)
        broker.start()
        record["startup_s"] = broker.startup_seconds
        topic = f"bench-{case.scenario}-{repeat}"
        figures = _run_case(broker, case, plan.settings, topic)
        sample = broker.sample()
        record.update(
            figures=figures,
            broker_cpu_s=sample.cpu_seconds,
            peak_rss_bytes=sample.peak_rss_bytes,
            ok=not figures.get("skipped") and _complete(case, figures),
        )
        if figures.get("skipped"):
            record["skipped"] = figures["skipped"]
        elif not record["ok"]:
            record["error"] = "incomplete: " + _incomplete_reason(case, figures)
    except Exception as error:
        record["error"] = f"{type(error).__name__}: {error}"[:2000]
        record["broker_log_tail"] = broker.log_tail(1500)
    finally:
        broker.stop()
        if broker in _LIVE:
            _LIVE.remove(broker)
        shutil.rmtree(work_dir, ignore_errors=True)
    record["wall_s"] = time.monotonic() - started
    return record


def _run_case(broker: peers.Broker, case: Case, settings: Settings, topic: str) -> dict[str, Any]:
    if case.scenario in ("produce", "many_partitions"):
        return scenarios.produce_consume(broker, ProduceParams(**case.params), settings, topic)
    if case.scenario == "e2e":
        return scenarios.end_to_end(broker, case.params["fetch_wait_max_ms"], settings, topic)
    if case.scenario == "idle_connections":
        return scenarios.idle_connections(broker, settings, topic)
    if case.scenario == "consumer_groups":
        return scenarios.consumer_groups(broker, settings, topic)
    raise ValueError(case.scenario)


def _complete(case: Case, figures: dict[str, Any]) -> bool:
    return not _incomplete_reason(case, figures)


def _incomplete_reason(case: Case, figures: dict[str, Any]) -> str:
    if "consume_verified" in figures and not figures["consume_verified"]:
        return f"read back {figures['consumed']} of {figures['produced']} records"
    if figures.get("produce_failed"):
        return f"{figures['produce_failed']} records not delivered: {figures.get('produce_failures')}"
    if case.scenario == "e2e" and not figures.get("messages"):
        return f"no message came through ({figures.get('lost')} waited for 5 s each)"
    if case.scenario == "consumer_groups" and figures.get("groups_complete") != figures.get("groups"):
        return f"{figures.get('groups_complete')} of {figures.get('groups')} groups read everything"
    if case.scenario == "idle_connections" and figures.get("idle_still_answering") != figures.get(
        "idle_opened"
    ):
        return (
            f"{figures.get('idle_still_answering')} of {figures.get('idle_opened')} idle connections answer"
        )
    return ""


def run(
    plan: Plan, out_dir: Path, budget_s: float, odradek_overrides: dict[str, str], log: Callable[[str], None]
) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    results_path = out_dir / "results.jsonl"
    work_root = Path(tempfile.mkdtemp(prefix="odradek-bench-"))
    run_id = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    deadline = time.monotonic() + budget_s
    atexit.register(_stop_live_brokers)
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    with open(results_path, "w") as results:

        def write(record: dict[str, Any]) -> None:
            results.write(json.dumps({"run_id": run_id, "mode": plan.mode, **record}) + "\n")
            results.flush()

        write({"kind": "meta", **machine_facts(plan, odradek_overrides)})
        try:
            for repeat in range(plan.repeats):
                _ceilings(plan, work_root, repeat, write)
            total = len(plan.cases) * plan.repeats * len(BROKERS)
            done = 0
            for case in plan.cases:
                for repeat in range(plan.repeats):
                    order = BROKERS if repeat % 2 == 0 else tuple(reversed(BROKERS))
                    for broker_name in order:
                        done += 1
                        base = {"kind": "measurement", "scenario": case.scenario, "case": case.label}
                        if time.monotonic() > deadline:
                            write(
                                {
                                    **base,
                                    "params": case.params,
                                    "broker": broker_name,
                                    "repeat": repeat,
                                    "ok": False,
                                    "skipped": "time budget spent",
                                }
                            )
                            continue
                        record = measure(broker_name, case, plan, work_root, repeat, odradek_overrides)
                        write({**base, "params": case.params, **record})
                        log(
                            f"[{done}/{total}] {case.scenario} {case.label} {broker_name} #{repeat}: "
                            + _brief(record)
                        )
        finally:
            _stop_live_brokers()
            shutil.rmtree(work_root, ignore_errors=True)
    return results_path


def _ceilings(plan: Plan, work_root: Path, repeat: int, write: Callable[[dict[str, Any]], None]) -> None:
    figures: dict[str, Any] = {}
    try:
        figures.update(scenarios.loopback_tcp(plan.ceiling_tcp_seconds))
        figures.update(scenarios.disk_write(work_root / "disk", plan.ceiling_disk_mib))
        ok = True
    except Exception as error:
        figures["error"] = str(error)
        ok = False
    write(
        {
            "kind": "measurement",
            "scenario": "ceiling",
            "case": "machine",
            "broker": "machine",
            "repeat": repeat,
            "ok": ok,
            "figures": figures,
        }
    )


def _brief(record: dict[str, Any]) -> str:
    if record.get("skipped"):
        return f"skipped ({record['skipped']})"
    if not record.get("ok"):
        return f"FAILED {record.get('error', '')[:300]}"
    figures = record["figures"]
    keys = ("produce_msgs_per_s", "consume_msgs_per_s", "e2e_p50_ms", "e2e_p99_ms", "all_done_s")
    shown = ", ".join(f"{k}={figures[k]:,.1f}" for k in keys if isinstance(figures.get(k), float))
    return f"{shown}; peak RSS {record['peak_rss_bytes'] / 2**20:.0f} MiB"


def machine_facts(plan: Plan, odradek_overrides: dict[str, str]) -> dict[str, Any]:
    cpu_model = ""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            cpu_model = next(
                (line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")), ""
            )
    except OSError:
        pass
    try:
        import confluent_kafka

        librdkafka = (
            f"confluent-kafka {importlib.metadata.version('confluent-kafka')}, "
            f"librdkafka {confluent_kafka.libversion()[0]}"
        )
    except ImportError:
        librdkafka = "?"
    odradek = peers.Odradek(Path(tempfile.gettempdir()))
    return {
        "nproc": os.cpu_count(),
        "cpu_model": cpu_model,
        "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "odradek_version": odradek.version(),
        "tansu_version": peers.tansu_version(peers.tansu_binary()),
        "client": librdkafka,
        "odradek_overrides": odradek_overrides,
        "settings": asdict(plan.settings),
        "repeats": plan.repeats,
        "command": "python bench/run_broker_bench.py " + " ".join(sys.argv[1:]),
        "started_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "disk": _disk_of(tempfile.gettempdir()),
    }


def _disk_of(path: str) -> str:
    shown = subprocess.run(
        ["df", "-h", "--output=source,fstype", path], capture_output=True, text=True, check=False
    )
    lines = shown.stdout.strip().splitlines()
    return " ".join(lines[-1].split()) if len(lines) > 1 else "?"


# ----- command line ----------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="a reduced matrix that runs in a few minutes")
    parser.add_argument("--repeats", type=int, help="runs per broker per case (default 3)")
    parser.add_argument("--out", type=Path, help="where results.jsonl, the table and plots go")
    parser.add_argument("--budget-minutes", type=float, help="stop starting new cases after this long")
    parser.add_argument(
        "--update-docs",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="rewrite the Broker vs Tansu section of docs/bench/tansu.md (default: full mode)",
    )
    parser.add_argument(
        "--profile",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="py-spy flame graphs of odradek under produce and consume (default: full mode)",
    )
    parser.add_argument("--profile-only", action="store_true", help="only the profiles")
    parser.add_argument("--report-only", action="store_true", help="only rebuild tables/plots/docs")
    parser.add_argument(
        "--override", action="append", default=[], metavar="KEY=VALUE", help="extra odradek broker settings"
    )
    args = parser.parse_args(argv)
    mode = "quick" if args.quick else "full"
    out_dir = args.out or (DOCS_BENCH / "quick" if args.quick else DOCS_BENCH)
    update_docs = args.update_docs if args.update_docs is not None else mode == "full"
    profile = args.profile if args.profile is not None else mode == "full"
    overrides = dict(item.split("=", 1) for item in args.override)
    plan = build_plan(mode, args.repeats)
    budget = (args.budget_minutes or (15 if args.quick else 90)) * 60

    from broker_bench import profiling, report

    def log(line: str) -> None:
        print(line, flush=True)

    if not args.report_only and not args.profile_only:
        started = time.monotonic()
        path = run(plan, out_dir, budget, overrides, log)
        log(f"results in {path} after {(time.monotonic() - started) / 60:.1f} min")
    if profile or args.profile_only:
        profiling.profile_odradek(DOCS_BENCH, plan.settings, overrides, log)
    report.build(out_dir, log)
    if update_docs:
        report.update_docs(log)
    return 0
