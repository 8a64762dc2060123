"""Hostile input against a running broker: random and mutated frames on many connections.

    .venv/bin/python bench/bad_input.py                          # 100,000 frames, 32 connections at a time
    .venv/bin/python bench/bad_input.py --frames 300000 --concurrency 64 --seed 7
    .venv/bin/python bench/bad_input.py --json bad_input.json    # also write the figures as JSON
    .venv/bin/python bench/bad_input.py --frames 300000 --held 200   # the acceptance run (issue #15)

Starts a broker on a free loopback port (auto-creation off, topics created up front), starts a
well-behaved confluent-kafka client (an acks=all producer and a consumer on their own topic), then
sends the frames of tests/support/hostile_frames.py: valid requests, bit flips, random bytes, extreme
length fields, truncations, lying size prefixes, unsupported versions, unknown api keys, random
bodies. Before them, --held connections each declare a --held-frame-bytes frame, send half of it and
stay open until the end (the frames a slow or hostile peer leaves half-sent). The broker runs with
queued.max.request.bytes = --queued-max-request-bytes (0: the default, no limit). Its RSS (VmRSS from
/proc/<pid>/status) is sampled throughout.

It passes (exit status 0) when the client saw no error and read back everything acknowledged, the
broker stayed up and logged no unexpected handler error, its RSS after the first tenth of the load
grew by less than --rss-growth-mib, and (with a pool) its peak RSS stayed under
queued.max.request.bytes plus 100 MiB. `tests/integration/test_bad_input.py` runs a short version.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from tests.support.bad_input_load import (
    HeldFrames,
    LoadStats,
    RssSampler,
    WellBehavedClient,
    hold_half_sent_frames,
    hostile_load,
)
from tests.support.broker_process import BrokerProcess
from tests.support.hostile_frames import HOSTILE_TOPICS
from tests.support.interop import wait_until


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--frames", type=int, default=100_000)
    parser.add_argument("--concurrency", type=int, default=32, help="connection loops running at once")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rss-growth-mib", type=float, default=64.0)
    parser.add_argument("--held", type=int, default=0, help="half-sent large frames held open")
    parser.add_argument("--held-frame-bytes", type=int, default=1024 * 1024)
    parser.add_argument("--queued-max-request-bytes", type=int, default=256 * 1024 * 1024, help="0: no limit")
    parser.add_argument("--json", type=Path, help="write the figures here as JSON")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="odradek-bad-input-") as scratch:
        settings = {"offsets.topic.num.partitions": "1", "auto.create.topics.enable": "false"}
        if args.queued_max_request_bytes > 0:
            settings["queued.max.request.bytes"] = str(args.queued_max_request_bytes)
        broker = BrokerProcess(Path(scratch) / "data", settings).start()
        try:
            figures = run(broker, args)
        finally:
            broker.stop()
    report(figures)
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0 if figures["passed"] else 1


def run(broker: BrokerProcess, args: argparse.Namespace) -> dict[str, object]:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_topics(
        [NewTopic(n, 1, 1) for n in (*HOSTILE_TOPICS, "well-behaved")]
    ).values():
        future.result(15)
    assert broker.process is not None
    pid = broker.process.pid
    client = WellBehavedClient(broker.bootstrap, "well-behaved").start()
    try:
        wait_until(lambda: len(client.acknowledged) >= 50, 20, "the well-behaved client to get going")
        started = time.monotonic()
        with RssSampler(pid, interval=0.5) as rss:
            held, stats = asyncio.run(_load(broker.port, args))
        elapsed = time.monotonic() - started
    finally:
        client.stop()
    alive = broker.process.poll() is None
    log = broker.log_path.read_text(errors="replace")
    unexpected = log.count("unexpected error") + log.count("Traceback")
    excerpts = _excerpts(log, ("unexpected error", "Traceback"))
    problems = client.check()
    samples = [kib for _, kib in rss.samples]
    warm = samples[max(1, len(samples) // 10)]
    growth_after_warm_up = samples[-1] - warm
    peak = max(samples)
    rss_bound_kib = (
        (args.queued_max_request_bytes // 1024 + 100 * 1024) if args.queued_max_request_bytes > 0 else None
    )
    passed = (
        alive
        and not problems
        and not unexpected
        and growth_after_warm_up < args.rss_growth_mib * 1024
        and (rss_bound_kib is None or peak < rss_bound_kib)
    )
    return {
        "passed": passed,
        "queued_max_request_bytes": args.queued_max_request_bytes or None,
        "held_frames": {
            "connections": args.held,
            "declared_bytes_each": args.held_frame_bytes,
            "bytes_sent": held.bytes_sent,
            "stalled": held.stalled,
        },
        "frames": stats.frames,
        "frames_surely_decoded": stats.frames_surely_decoded,
        "bytes": stats.bytes,
        "seconds": round(elapsed, 2),
        "frames_per_second": round(stats.frames / elapsed),
        "connections": stats.connections,
        "closed_by_broker": stats.closed_by_broker,
        "closed_by_us_after_quiet": stats.closed_by_us,
        "connect_errors": stats.connect_errors,
        "response_bytes": stats.response_bytes,
        "kinds": dict(stats.kinds.most_common()),
        "rss_kib": {
            "before": samples[0],
            "after_warm_up": warm,
            "peak": peak,
            "peak_bound": rss_bound_kib,
            "after": samples[-1],
            "growth_after_warm_up": growth_after_warm_up,
            "timeline": _timeline(rss.samples),
        },
        "broker_alive": alive,
        "unexpected_errors_in_broker_log": unexpected,
        "unexpected_error_excerpts": excerpts,
        "client": {
            "produced": client.produced,
            "acknowledged": len(client.acknowledged),
            "consumed": len(client.consumed),
            "problems": problems[:20],
        },
    }


async def _load(port: int, args: argparse.Namespace) -> tuple[HeldFrames, LoadStats]:
    """The held half-sent frames first, then the hostile frames while they stay open."""
    held = await hold_half_sent_frames(port, args.held, args.held_frame_bytes, args.held_frame_bytes // 2)
    try:
        stats = await hostile_load(port, args.frames, args.concurrency, args.seed)
    finally:
        await held.close()
    return held, stats


def _timeline(samples: list[tuple[float, int]], points: int = 11) -> list[tuple[float, int]]:
    """About `points` (seconds since start, KiB) pairs spread over the run, for the report."""
    start = samples[0][0]
    step = max(1, (len(samples) - 1) // (points - 1))
    chosen = samples[::step]
    if chosen[-1] != samples[-1]:
        chosen.append(samples[-1])
    return [(round(t - start, 1), kib) for t, kib in chosen]


def _excerpts(log: str, markers: tuple[str, ...], limit: int = 5, size: int = 2500) -> list[str]:
    """The log text after the first few occurrences of any marker (tracebacks, for the report)."""
    found: list[str] = []
    position = 0
    while len(found) < limit:
        hits = [i for i in (log.find(m, position) for m in markers) if i >= 0]
        if not hits:
            break
        start = min(hits)
        found.append(log[max(0, start - 300) : start + size])
        position = start + size
    return found


def report(figures: dict[str, object]) -> None:
    print(json.dumps(figures, indent=2))
    print("PASS" if figures["passed"] else "FAIL")


if __name__ == "__main__":
    sys.exit(main())
