"""Where odradek's time goes in one side-by-side scenario: py-spy on its broker(s) while Kafka's
ProducerPerformance (phase "produce") or ConsumerPerformance ("consume") runs against it.

The collapsed stacks become a flame graph (docs/bench/kafka-side-by-side-profile-<phase>-<n>.svg) and a
hot-spot table (….json beside it), with bench/broker_bench's flamegraph module, as its own profiles are.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

from broker_bench import flamegraph
from broker_bench.profiling import py_spy_binary
from side_by_side import tools
from side_by_side.deployments import deploy
from side_by_side.measure import Scenario, create_topic
from tests.support.zookeeper import ZooKeeperServer

RATE_HZ = 200
PY_SPY_FORMAT = ("--full-filenames", "--format", "raw", "--output")


def profile(
    scenario: Scenario, phase: str, perf: tools.PerfTools, zookeeper: ZooKeeperServer, out_dir: Path
) -> dict[str, Any]:
    spy = py_spy_binary()
    if spy is None:
        raise RuntimeError("py-spy is not installed: pip install -e '.[bench]'")
    work = Path(tempfile.mkdtemp(prefix="side-by-side-profile-"))
    deployment = deploy("odradek", scenario.brokers, work, zookeeper)
    stem = f"kafka-side-by-side-profile-{phase}-{scenario.brokers}"
    # outside the deployment's directory, which goes when it stops
    scratch = Path(tempfile.mkdtemp(prefix="side-by-side-py-spy-"))
    raw_files: list[Path] = []
    summary: dict[str, Any] = {"scenario": scenario.label, "phase": phase, "rate_hz": RATE_HZ}
    try:
        deployment.start()
        create_topic(deployment.bootstrap, "perf", scenario.partitions, scenario.brokers)
        produce = [
            "--topic",
            "perf",
            "--num-records",
            str(scenario.records),
            "--record-size",
            str(scenario.record_size),
            "--throughput",
            "-1",
            "--producer-props",
            f"bootstrap.servers={deployment.bootstrap}",
            f"acks={scenario.acks}",
            f"compression.type={scenario.compression}",
        ]
        consume = ["--bootstrap-server", deployment.bootstrap, "--topic", "perf"]
        consume += ["--messages", str(scenario.records), "--timeout", "60000"]
        if phase == "consume":
            tools.run(perf, tools.PRODUCER, produce, timeout=600)
        raw_files = [scratch / f"{stem}-{pid}.txt" for pid in deployment.pids()]
        recorders = [
            subprocess.Popen(
                [
                    spy,
                    "record",
                    "--pid",
                    str(pid),
                    "--rate",
                    str(RATE_HZ),
                    "--threads",
                    *PY_SPY_FORMAT,
                    str(raw),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            for pid, raw in zip(deployment.pids(), raw_files, strict=True)
        ]
        before = deployment.usage().cpu_seconds
        try:
            if phase == "produce":
                figures = tools.parse_producer(tools.run(perf, tools.PRODUCER, produce, timeout=600))
                summary["figures"] = asdict(figures)
            else:
                consumed = tools.parse_consumer(tools.run(perf, tools.CONSUMER, consume, timeout=600))
                summary["figures"] = asdict(consumed)
        finally:
            summary["broker_cpu_s"] = deployment.usage().cpu_seconds - before
            for recorder in recorders:
                recorder.send_signal(signal.SIGINT)
            for recorder in recorders:
                try:
                    recorder.communicate(timeout=60)
                except subprocess.TimeoutExpired:
                    recorder.kill()
                    recorder.communicate()
    finally:
        deployment.stop()
    stacks = flamegraph.read_collapsed(raw_files[0])[0] if raw_files and raw_files[0].exists() else None
    if stacks is None:
        raise RuntimeError("py-spy wrote nothing")
    for extra in raw_files[1:]:
        if extra.exists():
            stacks.update(flamegraph.read_collapsed(extra)[0])
    samples = sum(stacks.values())
    svg = out_dir / f"{stem}.svg"
    flamegraph.write_svg(
        stacks, svg, f"odradek, {phase} ({scenario.label}): {samples} non-idle samples at {RATE_HZ} Hz"
    )
    spots = flamegraph.hot_spots(stacks, top=20)
    summary.update(
        samples=samples,
        self=[asdict(s) for s in spots["self"]],
        total=[asdict(s) for s in spots["total"]],
        threads=[asdict(s) for s in spots["threads"]],
    )
    (out_dir / f"{stem}.json").write_text(json.dumps(summary, indent=1) + "\n")
    shutil.rmtree(scratch, ignore_errors=True)
    return summary
