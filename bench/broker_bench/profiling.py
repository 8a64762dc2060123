"""Where odradek spends its CPU under the produce and the consume scenario: py-spy, attached by pid.

py-spy samples the running broker (100 Hz, 500 Hz while consuming; every thread; non-idle samples
only: a thread blocked in epoll or on the thread pool's empty queue is not counted, one waiting for a
core is) from the moment a phase starts to its end (the consume phase: two consumers reading
everything back, again and again, for at least PROFILE_SECONDS), writing collapsed stacks; those give
both the hot-spot tables (docs/bench/profile.json) and the flame graphs
(docs/bench/profile-<phase>.svg). Without py-spy, `ODRADEK_BENCH_CPROFILE=1` makes the harness start
the broker under cProfile instead (pstats files next to the SVGs, whole broker lifetime).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import asdict
from pathlib import Path
from typing import Any

from broker_bench import flamegraph, peers, scenarios
from broker_bench.scenarios import ProduceParams, Settings

#: The profiled case: the broker, not the clients, should be the busy one.
PROFILE_PARAMS = ProduceParams(partitions=32, acks="1", value_size=100, compression="none", producers=4)
PROFILE_SECONDS = 10.0
#: Samples per second. The broker is nearly idle while consumers read (sendfile does the work, the
#: clients set the pace), so the consume phase is sampled faster to get enough samples.
RATES = {"produce": 100, "consume": 500}


def py_spy_binary() -> str | None:
    candidate = Path(sys.executable).parent / "py-spy"
    return str(candidate) if candidate.exists() else shutil.which("py-spy")


def profile_odradek(
    out_dir: Path, settings: Settings, overrides: dict[str, str], log: Callable[[str], None]
) -> dict[str, Any]:
    out_dir.mkdir(parents=True, exist_ok=True)
    spy = py_spy_binary()
    use_cprofile = os.environ.get("ODRADEK_BENCH_CPROFILE") == "1" or spy is None
    work_dir = Path(tempfile.mkdtemp(prefix="odradek-profile-"))
    broker: peers.Broker = (
        _CProfiledOdradek(work_dir, overrides, out_dir)
        if use_cprofile
        else peers.Odradek(work_dir, overrides)
    )
    phase_settings = Settings(**{**asdict(settings), "duration": PROFILE_SECONDS})
    summary: dict[str, Any] = {"params": asdict(PROFILE_PARAMS), "duration_s": PROFILE_SECONDS}

    @contextmanager
    def around(phase: str) -> Iterator[None]:
        if use_cprofile:
            yield
            return
        assert spy is not None
        raw = out_dir / f"profile-{phase}.txt"
        recorder = subprocess.Popen(
            [
                spy,
                "record",
                "--pid",
                str(broker.pid),
                "--rate",
                str(RATES[phase]),
                "--threads",
                "--full-filenames",
                "--format",
                "raw",
                "--output",
                str(raw),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        before = broker.sample().cpu_seconds
        try:
            yield
        finally:
            cpu = broker.sample().cpu_seconds - before if broker.alive() else 0.0
            recorder.send_signal(signal.SIGINT)
            try:
                _, errors = recorder.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                recorder.kill()
                _, errors = recorder.communicate()
            summary[phase] = _summarise(raw, phase, out_dir, cpu, errors)
            summary[phase]["rate_hz"] = RATES[phase]
            log(f"profile {phase}: {summary[phase].get('samples', 0)} samples -> profile-{phase}.svg")

    def produce_only(phase: str) -> AbstractContextManager[None]:
        return around(phase) if phase == "produce" else nullcontext()

    try:
        broker.start()
        topic = "bench-profile"
        figures = scenarios.produce_consume(broker, PROFILE_PARAMS, phase_settings, topic, produce_only)
        summary["figures"] = figures
        # One read-back lasts a second or two; for enough samples, two consumers read everything again
        # and again, side by side, for PROFILE_SECONDS.
        reader = {
            "bootstrap": broker.bootstrap,
            "topic": topic,
            "partitions": PROFILE_PARAMS.partitions,
            "expected": figures["produced"],
            "value_size": PROFILE_PARAMS.value_size,
            "timeout": settings.consume_timeout,
        }
        with around("consume"):
            deadline = time.monotonic() + PROFILE_SECONDS
            passes = 0
            while passes == 0 or time.monotonic() < deadline:
                results = scenarios.run_workers("consume", [reader, reader], settings.consume_timeout + 60)
                passes += 1
                if any(r["received"] != figures["produced"] for r in results):
                    summary["consume_error"] = "a profiled read-back came back short"
        summary["consume_passes"] = passes
    finally:
        broker.stop()
        shutil.rmtree(work_dir, ignore_errors=True)
    summary["tool"] = "cProfile" if use_cprofile else "py-spy"
    (out_dir / "profile.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def _summarise(raw: Path, phase: str, out_dir: Path, cpu_seconds: float, errors: str) -> dict[str, Any]:
    if not raw.exists():
        return {"error": f"py-spy wrote nothing: {errors[-500:]}"}
    stacks, idle = flamegraph.read_collapsed(raw)
    samples = sum(stacks.values())
    spots = flamegraph.hot_spots(stacks, top=20)
    flamegraph.write_svg(
        stacks,
        out_dir / f"profile-{phase}.svg",
        f"odradek, {phase} phase ({PROFILE_PARAMS.label}): {samples} non-idle samples at {RATES[phase]} Hz",
    )
    raw.unlink()  # the SVG keeps the stacks; the raw file is large and says the same
    return {
        "samples": samples,
        "idle_samples_dropped": idle,
        "broker_cpu_s": cpu_seconds,
        "self": [asdict(s) for s in spots["self"]],
        "total": [asdict(s) for s in spots["total"]],
        "threads": [asdict(s) for s in spots["threads"]],
    }


class _CProfiledOdradek(peers.Odradek):
    """The fallback: the broker run under cProfile for its whole life (written on a clean stop)."""

    def __init__(self, work_dir: Path, overrides: dict[str, str], out_dir: Path) -> None:
        super().__init__(work_dir, overrides)
        self.out_dir = out_dir

    def command(self) -> list[str]:
        command = super().command()
        target = self.out_dir / "profile-broker.pstats"
        return [sys.executable, "-m", "cProfile", "-o", str(target), "-m", *command[2:]]
