"""Where odradek spends its CPU under the produce and the consume scenario: py-spy, attached by pid.

py-spy samples the running broker (100 Hz, every thread, on-CPU samples only: a thread waiting in
epoll is not counted) from the moment a phase starts to its end, writing collapsed stacks; those give
both the hot-spot tables (docs/bench/profile-<phase>.json) and the flame graphs
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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

from broker_bench import flamegraph, peers, scenarios
from broker_bench.scenarios import ProduceParams, Settings

#: The profiled case: the broker, not the clients, should be the busy one.
PROFILE_PARAMS = ProduceParams(partitions=32, acks="1", value_size=100, compression="none", producers=4)
PROFILE_SECONDS = 10.0


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
                "100",
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
            log(f"profile {phase}: {summary[phase].get('samples', 0)} samples -> profile-{phase}.svg")

    try:
        broker.start()
        figures = scenarios.produce_consume(broker, PROFILE_PARAMS, phase_settings, "bench-profile", around)
        summary["figures"] = figures
    finally:
        broker.stop()
        shutil.rmtree(work_dir, ignore_errors=True)
    summary["tool"] = "cProfile" if use_cprofile else "py-spy"
    (out_dir / "profile.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def _summarise(raw: Path, phase: str, out_dir: Path, cpu_seconds: float, errors: str) -> dict[str, Any]:
    if not raw.exists():
        return {"error": f"py-spy wrote nothing: {errors[-500:]}"}
    stacks = flamegraph.read_collapsed(raw)
    samples = sum(stacks.values())
    spots = flamegraph.hot_spots(stacks, top=20)
    flamegraph.write_svg(
        stacks,
        out_dir / f"profile-{phase}.svg",
        f"odradek under the {phase} phase ({PROFILE_PARAMS.label}): {samples} on-CPU samples at 100 Hz",
    )
    raw.unlink()  # the SVG keeps the stacks; the raw file is large and says the same
    return {
        "samples": samples,
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
