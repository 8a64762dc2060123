"""Running the whole demonstration: a broker (started here unless one is given), the event generator in a
thread, the streaming job, and a progress line every few seconds until the job is done."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from odradek.pipelines.events import page_views, produce_page_views
from odradek.pipelines.job import JobSettings, progress_line, start


@dataclass(frozen=True)
class PipelineRun:
    settings: JobSettings
    events: int = 20_000
    rate: float | None = 1_000.0  # page views per second of wall time; None: as fast as possible
    seed: int = 7
    events_per_second: float = 50.0  # of event time: how fast the page views' timestamps advance
    partitions: int = 3
    progress_every_s: int = 3


def run_pipeline(run: PipelineRun, spark: object | None = None, say: Callable[[str], None] = print) -> int:
    """Generate, stream and aggregate; returns how many page views were produced. With the
    available-now trigger the job ends once every produced event is processed; with a processing-time
    trigger it runs until interrupted (Ctrl-C)."""
    from odradek.spark.session import local_spark

    session = spark if spark is not None else local_spark("odradek-pipeline")
    views = list(page_views(run.events, seed=run.seed, events_per_second=run.events_per_second))
    sent = [0]
    stop = threading.Event()

    def generate() -> None:
        sent[0] = produce_page_views(
            run.settings.bootstrap,
            run.settings.input_topic,
            views,
            rate=run.rate,
            on_progress=lambda n: sent.__setitem__(0, n),
            stop=stop.is_set,
        )

    generated_by = [float("inf")]

    def generate_then_note() -> None:
        generate()
        generated_by[0] = time.time()

    generator = threading.Thread(target=generate_then_note, name="page-view-generator", daemon=True)
    generator.start()
    say(f"producing {run.events} page views to {run.settings.input_topic} at {run.settings.bootstrap}")
    try:
        if run.settings.trigger == "available-now":
            generator.join()  # available-now reads what is there when it starts
            say(f"generator done: {sent[0]} page views")
        queries = start(session, run.settings)  # type: ignore[arg-type]
        settled = {q.id: 0 for q in queries}
        while any(q.isActive for q in queries):
            for query in queries:
                query.awaitTermination(max(1, round(run.progress_every_s / len(queries))))
            say(f"generated {sent[0]}/{run.events} | " + " | ".join(progress_line(q) for q in queries))
            if not generator.is_alive():
                for query in queries:
                    settled[query.id] = settled[query.id] + 1 if _settled(query, generated_by) else 0
                if all(n >= 2 for n in settled.values()):
                    for query in queries:
                        query.stop()
        for query in queries:
            if query.exception() is not None:
                raise RuntimeError(f"query {query.name} failed: {query.exception()}")
    except KeyboardInterrupt:
        say("stopping")
        for query in session.streams.active:  # type: ignore[attr-defined]
            query.stop()
    finally:
        stop.set()
        generator.join()
    say(
        f"done: {sent[0]} page views; aggregates in topic {run.settings.output_topic} "
        f"and in {run.settings.output_dir}"
    )
    return sent[0]


def _settled(query: Any, generated_by: list[float]) -> bool:
    """A processing-time query is done when its last batch read nothing, started after the generator had
    finished (so everything produced was read before it), and emitted the windows the watermark closed
    (a batch without data runs whenever the watermark moves, so the last batch is one)."""
    progress = query.lastProgress
    if not progress or progress["numInputRows"] != 0:
        return False
    started = datetime.fromisoformat(progress["timestamp"].replace("Z", "+00:00")).timestamp()
    return started > generated_by[0]


@contextmanager
def local_broker(partitions: int = 3) -> Iterator[str]:
    """A throwaway odradek broker on a free loopback port; yields its bootstrap address."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with tempfile.TemporaryDirectory(prefix="odradek-pipeline-") as data:
        overrides = {
            "node.id": "1",
            "listeners": f"PLAINTEXT://127.0.0.1:{port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
            "log.dirs": str(Path(data) / "logs"),
            "num.partitions": str(partitions),
        }
        command = [sys.executable, "-m", "odradek.cli.main", "broker", "--log-level", "WARNING"]
        for key, value in overrides.items():
            command += ["--override", f"{key}={value}"]
        src = str(Path(__file__).resolve().parents[2])
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p),
        }
        with open(Path(data) / "broker.log", "wb") as log:
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            _wait_listening(process, port, Path(data) / "broker.log")
            yield f"127.0.0.1:{port}"
        finally:
            process.terminate()
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_listening(process: subprocess.Popen[bytes], port: int, log: Path, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"broker exited with {process.returncode}:\n{log.read_text(errors='replace')[-3000:]}"
            )
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"broker did not listen on {port} within {timeout_s} s")
