"""What each measurement does against a running broker, and the machine's own ceilings.

Every function here is bounded in time (each waits with a timeout, and worker processes that overrun
are killed) and returns a flat dict of figures. The broker's CPU seconds are sampled around each phase
(produce, fetch) so that they can be set against the megabytes moved in that phase.
"""

from __future__ import annotations

import json
import os
import selectors
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from broker_bench import wire
from broker_bench.peers import Broker

BENCH_DIR = Path(__file__).resolve().parents[1]
MB = 1_000_000
#: How long the end-to-end worker waits for each message before it counts it as lost.
LOST_AFTER_S = 5.0


@dataclass(frozen=True)
class ProduceParams:
    partitions: int = 1
    acks: str = "1"
    value_size: int = 100
    compression: str = "none"
    producers: int = 1

    @property
    def label(self) -> str:
        size = "1KiB" if self.value_size == 1024 else f"{self.value_size}B"
        return f"p{self.partitions} acks={self.acks} {size} {self.compression} x{self.producers}"


@dataclass(frozen=True)
class Settings:
    duration: float = 4.0
    drain_timeout: float = 60.0
    consume_timeout: float = 90.0
    e2e_messages: int = 500
    e2e_timeout: float = 30.0
    idle_connections: int = 1000
    groups: int = 100
    group_messages: int = 1000
    group_timeout: float = 120.0


# ----- scenarios -----------------------------------------------------------------------------------


def produce_consume(
    broker: Broker,
    params: ProduceParams,
    settings: Settings,
    topic: str,
    around: Callable[[str], AbstractContextManager[object]] = lambda _phase: nullcontext(),
) -> dict[str, Any]:
    """Producers (one process each) for `duration` seconds, then one consumer reads everything back.

    `around(phase)` wraps the "produce" and the "consume" phase (the profiler hooks in there)."""
    created = create_topic(broker.bootstrap, topic, params.partitions)
    configs = [
        {
            "bootstrap": broker.bootstrap,
            "topic": topic,
            "partitions": params.partitions,
            "acks": params.acks,
            "compression": params.compression,
            "value_size": params.value_size,
            "duration": settings.duration,
            "drain_timeout": settings.drain_timeout,
            "index": index,
        }
        for index in range(params.producers)
    ]
    bound = settings.duration + settings.drain_timeout + 60
    with around("produce"), broker_cpu(broker) as produce_cpu:
        results = run_workers("produce", configs, bound)
    delivered = sum(r["delivered"] for r in results)
    value_bytes = sum(r["value_bytes"] for r in results)
    elapsed = max(r["ended"] for r in results) - min(r["started"] for r in results)
    latencies = sorted(sample for r in results for sample in r["latency_samples"])
    figures: dict[str, Any] = {
        "topic_create_s": created,
        "produced": delivered,
        "produce_failed": sum(r["failed"] for r in results) + sum(r["undelivered"] for r in results),
        "produce_failures": sorted({f for r in results for f in r["failure_examples"]})[:3],
        "produce_msgs_per_s": delivered / elapsed if elapsed > 0 else 0.0,
        "produce_mb_per_s": value_bytes / MB / elapsed if elapsed > 0 else 0.0,
        "produce_latency_p50_ms": percentile(latencies, 50) * 1000,
        "produce_latency_p99_ms": percentile(latencies, 99) * 1000,
        "produce_cpu_s": produce_cpu.seconds,
        # cores the busiest producer process used (librdkafka threads included): near 1, its Python
        # loop set the pace
        "producer_client_cores": max(r["client_cpu_s"] / (r["ended"] - r["started"]) for r in results),
        # all producer processes together, per second of the whole run: what the clients took of the
        # machine's cores (the 1.5x analysis adds the broker's share to it)
        "producers_client_cores": sum(r["client_cpu_s"] for r in results) / elapsed if elapsed > 0 else 0.0,
        "produce_cpu_s_per_mb": produce_cpu.seconds / (value_bytes / MB) if value_bytes else None,
    }
    consume_config = {
        "bootstrap": broker.bootstrap,
        "topic": topic,
        "partitions": params.partitions,
        "expected": delivered,
        "value_size": params.value_size,
        "timeout": settings.consume_timeout,
    }
    with around("consume"), broker_cpu(broker) as fetch_cpu:
        (read,) = run_workers("consume", [consume_config], settings.consume_timeout + 60)
    read_elapsed = read["ended"] - read["started"]
    read_bytes = read["value_bytes"]
    figures.update(
        {
            "consumed": read["received"],
            "consume_verified": read["received"] == delivered and not read["wrong_size"],
            "consume_msgs_per_s": read["received"] / read_elapsed if read_elapsed > 0 else 0.0,
            "consume_mb_per_s": read_bytes / MB / read_elapsed if read_elapsed > 0 else 0.0,
            "fetch_cpu_s": fetch_cpu.seconds,
            "consumer_client_cores": read["client_cpu_s"] / read_elapsed if read_elapsed > 0 else 0.0,
            "fetch_cpu_s_per_mb": fetch_cpu.seconds / (read_bytes / MB) if read_bytes else None,
        }
    )
    return figures


def end_to_end(broker: Broker, fetch_wait_max_ms: int, settings: Settings, topic: str) -> dict[str, Any]:
    create_topic(broker.bootstrap, topic, 1)
    config = {
        "bootstrap": broker.bootstrap,
        "topic": topic,
        "fetch_wait_max_ms": fetch_wait_max_ms,
        "messages": settings.e2e_messages,
        "timeout": settings.e2e_timeout,
        "lost_after": LOST_AFTER_S,
    }
    with broker_cpu(broker) as cpu:
        (result,) = run_workers("end_to_end", [config], settings.e2e_timeout + 90)
    seen = len(result["latencies"])
    # A message not seen within the worker's 5 s wait counts as 5 s: left out, it would flatter the tail.
    latencies = sorted(result["latencies"] + [LOST_AFTER_S] * result["lost"])
    return {
        "messages": seen,
        "lost": result["lost"],
        "warmed_up": result["warmed_up"],
        "e2e_p50_ms": percentile(latencies, 50) * 1000,
        "e2e_p99_ms": percentile(latencies, 99) * 1000,
        "e2e_max_ms": (latencies[-1] if latencies else float("nan")) * 1000,
        "e2e_mean_ms": (statistics.fmean(latencies) if latencies else float("nan")) * 1000,
        "cpu_s": cpu.seconds,
    }


def idle_connections(broker: Broker, settings: Settings, topic: str) -> dict[str, Any]:
    """`count` real Kafka connections (each answered one ApiVersions) sit idle while a producer and a
    consumer work; at the end every idle connection must still answer."""
    sockets: list[socket.socket] = []
    opened_at = time.monotonic()
    try:
        failed_to_open = 0
        for index in range(settings.idle_connections):
            try:
                sock = socket.create_connection(("127.0.0.1", broker.port), timeout=10)
                sock.sendall(wire.api_versions_request(index))
                wire.read_frame(sock)
                sockets.append(sock)
            except OSError:
                failed_to_open += 1
        open_seconds = time.monotonic() - opened_at
        rss_with_idle = broker.sample().rss_bytes
        working = produce_consume(broker, ProduceParams(partitions=1), settings, topic)
        still_answering = 0
        for index, sock in enumerate(sockets):
            try:
                sock.sendall(wire.api_versions_request(100_000 + index))
                wire.read_frame(sock)
                still_answering += 1
            except OSError:
                pass
    finally:
        for sock in sockets:
            sock.close()
    return {
        **working,
        "idle_opened": len(sockets),
        "idle_failed_to_open": failed_to_open,
        "idle_open_s": open_seconds,
        "idle_still_answering": still_answering,
        "rss_with_idle_bytes": rss_with_idle,
    }


def serves_join_group(broker: Broker) -> bool:
    return wire.JOIN_GROUP in wire.api_versions("127.0.0.1", broker.port)


def consumer_groups(broker: Broker, settings: Settings, topic: str) -> dict[str, Any]:
    """`groups` consumers, each in a group of its own, join, read the whole topic and commit."""
    if not serves_join_group(broker):
        return {"skipped": "the broker does not serve JoinGroup (api key 11) in its ApiVersions"}
    partitions = 4
    create_topic(broker.bootstrap, topic, partitions)
    fill = {
        "bootstrap": broker.bootstrap,
        "topic": topic,
        "partitions": partitions,
        "acks": "1",
        "compression": "none",
        "value_size": 100,
        "duration": 0.0,
        "drain_timeout": 30.0,
    }
    expected = _fill_topic(fill, settings.group_messages)
    per_process = 25
    names = [f"bench-group-{index:03d}" for index in range(settings.groups)]
    configs = [
        {
            "bootstrap": broker.bootstrap,
            "topic": topic,
            "expected": expected,
            "groups": names[start : start + per_process],
            "timeout": settings.group_timeout,
        }
        for start in range(0, len(names), per_process)
    ]
    with broker_cpu(broker) as cpu:
        results = run_workers("group_members", configs, settings.group_timeout + 90)
    started = min(r["started"] for r in results)
    done = [d for r in results for d in r["done_at"]]
    first = [f for r in results for f in r["first_record_at"] if f]
    complete = sum(1 for d in done if d)
    listed = _count_groups(broker.bootstrap, set(names))
    return {
        "groups": settings.groups,
        "messages_per_group": expected,
        "groups_complete": complete,
        "groups_listed": listed,
        "commit_errors": sum(r["commit_errors"] for r in results),
        "all_done_s": (max(done) - started) if complete == len(done) else float("nan"),
        "first_record_p50_s": percentile(sorted(f - started for f in first), 50),
        "cpu_s": cpu.seconds,
    }


# ----- the machine's ceilings ----------------------------------------------------------------------


def loopback_tcp(seconds: float) -> dict[str, Any]:
    """Bytes per second through one 127.0.0.1 TCP connection between two processes (1 MiB writes)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    code = (
        "import socket,sys,time\n"
        f"s=socket.create_connection(('127.0.0.1',{port}))\n"
        "b=bytes(1<<20)\n"
        f"end=time.monotonic()+{seconds}\n"
        "while time.monotonic()<end: s.sendall(b)\n"
        "s.close()\n"
    )
    sender = subprocess.Popen([sys.executable, "-c", code])
    try:
        listener.settimeout(10)
        connection, _ = listener.accept()
        buffer = bytearray(1 << 20)
        view = memoryview(buffer)
        received = 0
        started = time.monotonic()
        connection.settimeout(seconds + 10)
        while True:
            count = connection.recv_into(view)
            if not count:
                break
            received += count
        elapsed = time.monotonic() - started
        connection.close()
    finally:
        listener.close()
        sender.wait(seconds + 10)
    return {"loopback_mb_per_s": received / MB / elapsed}


def disk_write(directory: Path, mebibytes: int) -> dict[str, Any]:
    """Sequential 1 MiB writes to a new file in `directory`: page-cache speed, and with the fsync.

    Also the rate of the second half alone: once the kernel holds enough dirty pages (here from about
    0.7 GiB on) it throttles writers to what the disk takes, so a broker that keeps writing its log for
    seconds meets that rate, not the page cache's."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "disk-ceiling.bin"
    block = os.urandom(1 << 20)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            started = time.monotonic()
            halfway = started
            for index in range(mebibytes):
                if index == mebibytes // 2:
                    halfway = time.monotonic()
                os.write(fd, block)
            written = time.monotonic()
            os.fsync(fd)
            synced = time.monotonic()
        finally:
            os.close(fd)
    finally:
        path.unlink(missing_ok=True)
    size = mebibytes * (1 << 20) / MB
    return {
        "disk_write_mb_per_s": size / (written - started),
        "disk_write_sustained_mb_per_s": (size - size * (mebibytes // 2) / mebibytes) / (written - halfway),
        "disk_write_fsync_mb_per_s": size / (synced - started),
    }


# ----- helpers -------------------------------------------------------------------------------------


class _Cpu:
    seconds = 0.0


@contextmanager
def broker_cpu(broker: Broker) -> Iterator[_Cpu]:
    """The broker's CPU seconds (user + system, every thread) spent inside the block."""
    cpu = _Cpu()
    before = broker.sample().cpu_seconds
    try:
        yield cpu
    finally:
        if broker.alive():
            cpu.seconds = broker.sample().cpu_seconds - before


def create_topic(bootstrap: str, topic: str, partitions: int, timeout: float = 60.0) -> float:
    """CreateTopics, then wait until metadata shows every partition with a leader; returns the seconds."""
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": bootstrap})
    started = time.monotonic()
    for future in admin.create_topics([NewTopic(topic, partitions, 1)], request_timeout=timeout).values():
        future.result(timeout)
    deadline = started + timeout
    while time.monotonic() < deadline:
        metadata = admin.list_topics(topic, timeout=10).topics.get(topic)
        if (
            metadata is not None
            and metadata.error is None
            and len(metadata.partitions) == partitions
            and all(p.leader >= 0 for p in metadata.partitions.values())
        ):
            return time.monotonic() - started
        time.sleep(0.05)
    raise TimeoutError(f"topic {topic} not ready within {timeout}s")


def _fill_topic(config: dict[str, Any], messages: int) -> int:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": config["bootstrap"], "linger.ms": 5})
    for index in range(messages):
        producer.produce(config["topic"], b"g" * config["value_size"], partition=index % config["partitions"])
        if not index % 1000:
            producer.poll(0)
    if producer.flush(config["drain_timeout"]):
        raise RuntimeError("could not fill the group scenario's topic")
    return messages


def _count_groups(bootstrap: str, names: set[str]) -> int:
    """How many of `names` ListGroups reports (the admin client must outlive its future)."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        listed = admin.list_consumer_groups(request_timeout=20).result(30)
    except Exception:
        return -1
    return sum(1 for group in listed.valid if group.group_id in names)


def percentile(ordered: list[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list (NaN when empty)."""
    if not ordered:
        return float("nan")
    rank = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


def run_workers(role: str, configs: list[dict[str, Any]], timeout: float) -> list[dict[str, Any]]:
    """Start one worker process per config, release them together once all are READY, collect RESULTs.

    Any worker that has not finished by `timeout` seconds is killed and the measurement fails."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(BENCH_DIR), os.environ.get("PYTHONPATH", "")])}
    # librdkafka's log lines go to files (a pipe nobody reads could fill up), read on failure
    logs = [tempfile.TemporaryFile("w+") for _ in configs]  # noqa: SIM115 - closed in the finally below
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "broker_bench.workers", role, json.dumps(config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            env=env,
            text=True,
        )
        for config, log in zip(configs, logs, strict=True)
    ]
    deadline = time.monotonic() + timeout
    try:
        for process, log in zip(processes, logs, strict=True):
            line = _read_line(process, deadline)
            if line.strip() != "READY":
                raise RuntimeError(f"{role} worker did not get ready: {line!r} {_tail(process, log)}")
        for process in processes:
            assert process.stdin is not None
            process.stdin.write("GO\n")
            process.stdin.flush()
        results = []
        for process, log in zip(processes, logs, strict=True):
            line = _read_line(process, deadline)
            if not line.startswith("RESULT "):
                raise RuntimeError(f"{role} worker failed: {line!r} {_tail(process, log)}")
            results.append(json.loads(line[len("RESULT ") :]))
        for process in processes:
            process.wait(max(1.0, deadline - time.monotonic()))
        return results
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait(10)
            for stream in (process.stdin, process.stdout):
                if stream is not None:
                    stream.close()
        for log in logs:
            log.close()


def _read_line(process: subprocess.Popen[str], deadline: float) -> str:
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("worker timed out")
            if selector.select(remaining):
                return process.stdout.readline()


def _tail(process: subprocess.Popen[str], log: IO[str]) -> str:
    if process.poll() is None:
        process.kill()
        process.wait(10)
    log.seek(0)
    return log.read()[-2000:]
