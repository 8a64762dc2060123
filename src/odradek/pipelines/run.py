"""Running the whole demonstration: a broker (started here unless one is given), the event generator in a
thread, the streaming job, and a progress line every few seconds until the job is done or asked to stop.

Ctrl-C (SIGINT) or SIGTERM asks the run to stop: the queries stop when the running micro-batch ends
(within a few seconds, else inside it: a batch is either written and committed, or left to the
checkpoint to replay), and the Spark JVM the run started is shut down before it returns. A second Ctrl-C
stops at once."""

from __future__ import annotations

import contextlib
import logging
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from odradek.pipelines.checkpoint import claim_checkpoint, next_event_time, record_next_event_time
from odradek.pipelines.connectors import KAFKA, require_kafka_connector
from odradek.pipelines.errors import PipelineError
from odradek.pipelines.events import page_views, produce_page_views
from odradek.pipelines.input_topic import ensure_input_topic
from odradek.pipelines.job import (
    JobSettings,
    OutputTally,
    abort_prepared_transactions,
    progress_line,
    start,
)
from odradek.pipelines.restarts import MAX_WORKER_RESTARTS, worker_did_not_connect_back

#: How long a stop request waits for the running micro-batch to end before stopping inside it.
STOP_GRACE_S = 10.0
_QUIET = {"spark.ui.showConsoleProgress": "false"}


@dataclass(frozen=True)
class PipelineRun:
    settings: JobSettings
    events: int = 20_000
    rate: float | None = 1_000.0  # page views per second of wall time; None: as fast as possible
    seed: int = 7
    events_per_second: float = 50.0  # of event time: how fast the page views' timestamps advance
    partitions: int = 3
    progress_every_s: int = 3
    # The broker was started for this run and goes away with it: the run owns any checkpoint it finds
    # (one from an earlier run's broker is restarted, not refused) and its output topic is not kept.
    temporary_broker: bool = False
    # Jars the session started here gets as `spark.jars`: Spark's kafka connector and its dependencies,
    # for settings.connector `kafka` (a session passed in must have them already).
    connector_jars: tuple[str, ...] = ()


@dataclass(frozen=True)
class PipelineResult:
    produced: int  # page views sent by the generator
    batches_written: int  # micro-batches whose windows went to the topic and to Parquet
    rows_written: int  # aggregate rows (windows) written, each to the topic and to Parquet
    stopped_by: int | None = None  # the signal that stopped the run, None when it finished

    @property
    def exit_code(self) -> int:
        """0 when done; 128 + the signal number when stopped by one, as a shell reports it."""
        return 0 if self.stopped_by is None else 128 + self.stopped_by


def run_pipeline(
    run: PipelineRun, spark: object | None = None, say: Callable[[str], None] = print
) -> PipelineResult:
    """Generate, stream and aggregate. With the available-now trigger the job ends once every produced
    event is processed; with a processing-time trigger it ends once the generator is done and a batch
    has read nothing, or when a signal asks it to stop. A session passed in is left running; one started
    here is stopped, its JVM with it."""
    from odradek.spark.session import local_spark

    stop = _StopRequest()
    stop.install()  # before the session, whose start takes seconds
    try:
        _claim_checkpoint(run, say)  # before Spark starts: a refusal costs no JVM
        # Its own progress line every few seconds, not Spark's stage bars between them.
        session = spark if spark is not None else local_spark("odradek-pipeline", **_session_conf(run))
        stop.install()  # again: a new SparkContext replaces the SIGINT handler with its own
        try:
            if run.settings.connector == KAFKA:
                require_kafka_connector(session)  # before the generator: a missing jar costs no events
            return _run(run, session, stop, say)
        finally:
            if spark is None:
                stop_spark(session)
    finally:
        stop.restore()


def _session_conf(run: PipelineRun) -> dict[str, str]:
    jars = {"spark.jars": ",".join(run.connector_jars)} if run.connector_jars else {}
    return {**_QUIET, **jars}


def _claim_checkpoint(run: PipelineRun, say: Callable[[str], None]) -> None:
    settings = run.settings
    identity = ensure_input_topic(
        settings.bootstrap,
        settings.input_topic,
        run.partitions if run.temporary_broker else None,
        settings.client_settings,
    )
    claimed = claim_checkpoint(
        Path(settings.checkpoint_dir),
        Path(settings.output_dir),
        identity,
        run_owns_checkpoint=run.temporary_broker,
        connector=settings.connector,
    )
    if claimed == "resumed":
        say(f"resuming from checkpoint {settings.checkpoint_dir}; event times continue after its watermark")
    elif claimed == "started fresh":
        say(
            f"checkpoint {settings.checkpoint_dir} was an earlier run's, on another broker: starting "
            f"fresh (removed it and that run's Parquet in {settings.output_dir})"
        )


def _run(run: PipelineRun, session: Any, stop: _StopRequest, say: Callable[[str], None]) -> PipelineResult:
    settings = run.settings
    checkpoint = Path(settings.checkpoint_dir)
    start_ms = next_event_time(checkpoint)
    views = list(
        page_views(
            run.events, seed=run.seed, events_per_second=run.events_per_second, **_starting_at(start_ms)
        )
    )
    sent = [0]
    generated_by = [float("inf")]

    def generate() -> None:
        sent[0] = produce_page_views(
            settings.bootstrap,
            settings.input_topic,
            views,
            rate=run.rate,
            on_progress=lambda n: sent.__setitem__(0, n),
            stop=stop.requested.is_set,
            client_settings=settings.client_settings,
        )
        if sent[0]:
            record_next_event_time(checkpoint, _after_watermark(max(v.ts for v in views[: sent[0]])))
        generated_by[0] = time.time()

    generator = threading.Thread(target=generate, name="page-view-generator", daemon=True)
    generator.start()
    say(f"producing {run.events} page views to {settings.input_topic} at {settings.bootstrap}")
    tally = OutputTally()
    try:
        if settings.trigger == "available-now":
            while generator.is_alive() and not stop.requested.is_set():
                generator.join(0.2)  # available-now reads what is there when it starts
            say(f"generator done: {sent[0]} page views")
        if settings.exactly_once:
            _finish_prepared(settings, say)
        queries = [] if stop.requested.is_set() else start(session, settings, tally)
        settled = {q.id: 0 for q in queries}
        restarts = 0
        while any(q.isActive for q in queries) and not stop.requested.is_set():
            for query in queries:
                try:
                    query.awaitTermination(max(1, round(run.progress_every_s / len(queries))))
                except Exception as failure:  # the query failed (StreamingQueryException)
                    if restarts == MAX_WORKER_RESTARTS or not worker_did_not_connect_back(failure):
                        raise PipelineError(_failure(query.name, failure)) from failure
                    restarts += 1
                    say(
                        f"query {query.name}: Spark's Python worker did not connect back within Spark's "
                        f"fixed 10 s (a loaded machine); restarting it from its checkpoint "
                        f"({restarts}/{MAX_WORKER_RESTARTS})"
                    )
                    for other in queries:
                        if other.isActive:
                            other.stop()
                    if settings.exactly_once:
                        _finish_prepared(settings, say)
                    queries = start(session, settings, tally)
                    settled = {q.id: 0 for q in queries}
                    break
                if stop.requested.is_set():
                    break
            else:
                say(f"generated {sent[0]}/{run.events} | " + " | ".join(progress_line(q) for q in queries))
                if not generator.is_alive():
                    for query in queries:
                        settled[query.id] = settled[query.id] + 1 if _settled(query, generated_by) else 0
                    if all(n >= 2 for n in settled.values()):
                        for query in queries:
                            query.stop()
        if stop.requested.is_set():
            say(f"stopping after the running micro-batch (at most {STOP_GRACE_S:.0f} s)")
            _quiet_expected_shutdown_errors(session)
            for query in queries:
                _stop_after_batch(query)
        else:
            for query in queries:
                if query.exception() is not None:
                    raise PipelineError(_failure(query.name, query.exception()))
    finally:
        stop.requested.set()  # ends the generator too
        generator.join()
    result = PipelineResult(sent[0], tally.batches, tally.rows, stop.signal)
    say(_summary(run, result))
    return result


def _finish_prepared(settings: JobSettings, say: Callable[[str], None]) -> None:
    say(
        f"writing aggregates to {settings.output_topic} exactly once (two-phase-commit transactions, "
        "one per task and micro-batch: read it with isolation.level=read_committed)"
    )
    aborted = abort_prepared_transactions(settings)
    if aborted:
        say(
            f"aborted {len(aborted)} transaction(s) the last run left prepared; their micro-batch is replayed"
        )


def _failure(name: str, failure: object) -> str:
    if "TRANSACTIONAL_ID_AUTHORIZATION_FAILED" in str(failure):
        # One line instead of Spark's and the task's tracebacks: the broker refused two-phase commit.
        return (
            f"query {name} failed: the broker refused the exactly-once sink's two-phase commit "
            "(TRANSACTIONAL_ID_AUTHORIZATION_FAILED): it needs transaction.two.phase.commit.enable=true "
            "on the broker and, with ACLs, TWO_PHASE_COMMIT and WRITE on the transactional ids "
            "odradek-pipeline-*; or run with --delivery at-least-once"
        )
    return f"query {name} failed: {failure}"


def _starting_at(start_ms: int | None) -> dict[str, int]:
    return {} if start_ms is None else {"start_ms": start_ms}


def _after_watermark(last_event_ms: int, window_ms: int = 60_000) -> int:
    """A window start that the next run's events (up to 5 s early) cannot reach back from into windows
    this run's watermark has passed: the closing heartbeats move it to two windows past the last event's
    window start, this is three."""
    return (last_event_ms // window_ms + 3) * window_ms


def _summary(run: PipelineRun, result: PipelineResult) -> str:
    settings = run.settings
    how = "done" if result.stopped_by is None else f"stopped ({signal.Signals(result.stopped_by).name})"
    where = f"Parquet in {settings.output_dir} and topic {settings.output_topic}"
    if run.temporary_broker:
        where += (
            " (the topic was on the temporary broker and is gone with it: give --bootstrap-server to keep it)"
        )
    return (
        f"{how}: produced {result.produced} page views; {result.rows_written} aggregate rows "
        f"in {result.batches_written} micro-batch{'' if result.batches_written == 1 else 'es'} "
        f"written to {where}"
    )


def _settled(query: Any, generated_by: list[float]) -> bool:
    """A processing-time query is done when its last batch read nothing, started after the generator had
    finished (so everything produced was read before it), and emitted the windows the watermark closed
    (a batch without data runs whenever the watermark moves, so the last batch is one)."""
    progress = query.lastProgress
    if not progress or progress["numInputRows"] != 0:
        return False
    started = datetime.fromisoformat(progress["timestamp"].replace("Z", "+00:00")).timestamp()
    return started > generated_by[0]


def _stop_after_batch(query: Any, grace_s: float = STOP_GRACE_S) -> None:
    """Stop when the running micro-batch ends, or after `grace_s` if it has not: a batch stopped half-way
    is not committed (its Parquet write is aborted; rows it sent to the topic may be sent again) and is
    replayed from the checkpoint by the next run. Batches can run back to back, so "between batches"
    is when a new one has completed, or when none is running."""
    deadline = time.monotonic() + grace_s
    completed = _last_batch_id(query)
    while query.isActive and time.monotonic() < deadline:
        if not query.status["isTriggerActive"] or _last_batch_id(query) != completed:
            break
        time.sleep(0.05)
    query.stop()


def _last_batch_id(query: Any) -> int | None:
    progress = query.lastProgress
    return int(progress["batchId"]) if progress else None


def _quiet_expected_shutdown_errors(session: Any) -> None:
    """A batch that starts just as the query stops is interrupted; Spark and py4j log that as an error
    with a stack trace, though nothing is wrong (the batch is not committed and is replayed)."""
    session.sparkContext.setLogLevel("OFF")
    logging.getLogger("py4j").setLevel(logging.CRITICAL)
    _quiet_accumulator_server(session)


def _quiet_accumulator_server(session: Any) -> None:
    """PySpark's accumulator server prints an EOFError traceback when the JVM closes its connection
    before the server is shut down: a race of every stop (SparkContext.stop stops the JVM first), and
    of a query stopped while its batch runs (seen when Ctrl-C stopped a query under load)."""
    server = getattr(session.sparkContext, "_accumulatorServer", None)
    if server is not None:
        server.handle_error = lambda request, client_address: None


def stop_spark(session: Any, timeout_s: float = 30.0) -> None:
    """Stop the session and the JVM PySpark started for it (it exits when its stdin closes)."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    _quiet_accumulator_server(session)
    session.stop()
    process: subprocess.Popen[bytes] | None = getattr(gateway, "proc", None)
    if gateway is None or process is None:
        return
    with contextlib.suppress(Exception):
        gateway.shutdown()
    SparkContext._gateway = None
    SparkContext._jvm = None
    if process.stdin is not None:
        with contextlib.suppress(OSError):
            process.stdin.close()
    try:
        process.wait(timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class _StopRequest:
    """SIGINT and SIGTERM set `requested` (the run then stops after the running batch); a second one raises
    KeyboardInterrupt. Handlers can only be set from the main thread; elsewhere only `requested` works."""

    def __init__(self) -> None:
        self.requested = threading.Event()
        self.signal: int | None = None
        self._previous: dict[int, Any] = {}

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for number in (signal.SIGINT, signal.SIGTERM):
            previous = signal.signal(number, self._handle)
            self._previous.setdefault(number, previous)

    def restore(self) -> None:
        for number, previous in self._previous.items():
            signal.signal(number, previous)
        self._previous.clear()

    def _handle(self, number: int, _frame: object) -> None:
        if self.requested.is_set() and self.signal is not None:
            raise KeyboardInterrupt
        self.signal = number
        self.requested.set()
