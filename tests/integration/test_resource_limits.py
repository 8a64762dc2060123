"""Bounded resources against a broker process: max.connections, max.connections.per.ip (and its
overrides), socket.listen.backlog.size, socket.send/receive.buffer.bytes and queued.max.request.bytes
all do what Kafka's do."""

from __future__ import annotations

import asyncio
import contextlib
import re
import socket
import struct
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.api_versions import ApiVersionsRequest
from tests.support.bad_input_load import HeldFrames, hold_half_sent_frames, rss_kib
from tests.support.broker_process import BrokerProcess, free_port
from tests.support.raw_client import RawClient

pytestmark = pytest.mark.timeout(90)


@contextlib.contextmanager
def broker(tmp_path: Path, overrides: dict[str, str]) -> Iterator[BrokerProcess]:
    running = BrokerProcess(tmp_path / "data", {"offsets.topic.num.partitions": "1", **overrides}).start()
    try:
        yield running
    finally:
        running.stop()


def answers(client: RawClient, timeout: float = 5.0) -> bool:
    """Whether an ApiVersions request on `client` is answered (without error) within `timeout`."""
    client.sock.settimeout(timeout)
    try:
        return bool(client.request(ApiVersionsRequest(), 0).error_code == ErrorCode.NONE)
    except (TimeoutError, OSError):
        return False
    finally:
        client.sock.settimeout(client.timeout)


def test_a_connection_over_max_connections_per_ip_is_closed_and_overrides_are_honoured(
    tmp_path: Path,
) -> None:
    limits = {"max.connections.per.ip": "2", "max.connections.per.ip.overrides": "127.0.0.2:3"}
    with broker(tmp_path, limits) as running:
        first, second = RawClient(running.port), RawClient(running.port)
        third = RawClient(running.port)
        assert answers(first) and answers(second)
        assert third.wait_closed(5), "the third connection from 127.0.0.1 was not closed"
        overridden = [RawClient(running.port, source="127.0.0.2") for _ in range(4)]
        assert all(answers(client) for client in overridden[:3])
        assert overridden[3].wait_closed(5), "the fourth connection from 127.0.0.2 was not closed"
        first.close()
        time.sleep(0.3)  # the broker sees the close
        with RawClient(running.port) as again:
            assert answers(again), "a connection freed by a close was not usable again"
        for client in (second, third, *overridden):
            client.close()
        assert "already has the configured maximum of 2 connections" in running.log_text()


def test_max_connections_blocks_new_connections_until_one_closes(tmp_path: Path) -> None:
    with broker(tmp_path, {"max.connections": "2"}) as running:
        first, second = RawClient(running.port), RawClient(running.port)
        assert answers(first) and answers(second)
        waiting = RawClient(running.port)  # in the listen backlog: connected, not yet accepted
        assert not answers(waiting, timeout=1.5)
        first.close()
        waiting.sock.settimeout(10)
        _, response = waiting.receive(ApiVersionsRequest.API_KEY, 0)  # the request sent while waiting
        assert response.error_code == ErrorCode.NONE
        for client in (second, waiting):
            client.close()


def test_the_listen_backlog_is_socket_listen_backlog_size(tmp_path: Path) -> None:
    with broker(tmp_path, {"socket.listen.backlog.size": "7"}) as running:
        listing = subprocess.run(
            ["ss", "-Hltn", f"sport = :{running.port}"], capture_output=True, text=True, check=True
        ).stdout
        # ss shows a listening socket's backlog as its Send-Q: "LISTEN 0 7 127.0.0.1:port ..."
        assert re.search(r"LISTEN\s+\d+\s+7\s", listing), listing


def test_accepted_connections_get_kafkas_default_socket_buffers(tmp_path: Path) -> None:
    """socket.send.buffer.bytes and socket.receive.buffer.bytes at Kafka's default, 100 KiB (Linux
    shows them doubled); they were refused at any other value and did nothing at this one."""
    with broker(
        tmp_path, {"socket.send.buffer.bytes": "102400", "socket.receive.buffer.bytes": "102400"}
    ) as running:
        client = RawClient(running.port)
        assert answers(client)
        listing = subprocess.run(
            ["ss", "-Htmn", "state", "established", f"sport = :{running.port}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        client.close()
        assert "rb204800," in listing and "tb204800," in listing, listing


def test_with_queued_max_request_bytes_exhausted_reading_stops_until_memory_is_released(
    tmp_path: Path,
) -> None:
    limits = {"socket.request.max.bytes": "1048576", "queued.max.request.bytes": "1048576"}
    with broker(tmp_path, limits) as running:
        # Two half-sent frames reserve 1,000,000 + 500,000 bytes: the pool (1 MiB) is then exhausted.
        holders = [socket.create_connection(("127.0.0.1", running.port)) for _ in range(2)]
        holders[0].sendall(struct.pack(">i", 1_000_000) + b"x" * 1000)
        time.sleep(0.3)
        holders[1].sendall(struct.pack(">i", 500_000) + b"x" * 1000)
        time.sleep(0.3)
        waiting = RawClient(running.port)
        assert not answers(waiting, timeout=1.5), "a request was read with the memory pool exhausted"
        holders[0].close()  # its reservation comes back when the broker sees the close
        waiting.sock.settimeout(10)
        _, response = waiting.receive(ApiVersionsRequest.API_KEY, 0)
        assert response.error_code == ErrorCode.NONE
        holders[1].close()
        waiting.close()


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"queued.max.request.bytes": "1000"}, "queued.max.request.bytes"),
        ({"max.connections.per.ip.overrides": "127.0.0.1:two"}, "max.connections.per.ip.overrides"),
    ],
)
def test_an_unusable_resource_limit_refuses_to_start(
    tmp_path: Path, overrides: dict[str, str], named: str
) -> None:
    with pytest.raises(RuntimeError, match=re.escape(named)):
        BrokerProcess(tmp_path / "data", overrides).start(timeout=20)


def test_max_connection_creation_rate_spaces_out_new_connections(tmp_path: Path) -> None:
    with broker(tmp_path, {"max.connection.creation.rate": "5"}) as running:
        started = time.monotonic()
        clients = [RawClient(running.port) for _ in range(12)]  # 5 now, 5 a second later, 2 after that
        assert all(answers(client) for client in clients)
        elapsed = time.monotonic() - started
        for client in clients:
            client.close()
        assert elapsed >= 1.5, f"12 connections at 5 per second were all served in {elapsed:.2f}s"


def test_alter_configs_lowers_max_connections_per_ip_for_the_next_connection(tmp_path: Path) -> None:
    with broker(tmp_path, {}) as running:
        first, second = RawClient(running.port), RawClient(running.port)
        assert answers(first) and answers(second)
        admin = AdminClient({"bootstrap.servers": running.bootstrap})
        entry = ConfigEntry("max.connections.per.ip", "3", incremental_operation=AlterConfigOpType.SET)
        resource = ConfigResource("broker", "1", incremental_configs=[entry])
        for future in admin.incremental_alter_configs([resource]).values():
            future.result(15)
        # the admin client holds a connection of its own: with first and second that makes 3
        late = RawClient(running.port)
        assert late.wait_closed(5), "a connection over the new per-address limit was not closed"
        for client in (first, second, late):
            client.close()


def test_half_sent_frames_hold_no_more_memory_than_queued_max_request_bytes(tmp_path: Path) -> None:
    """20 peers each send 4 MiB of a declared 8 MiB request (80 MiB offered): the broker reads only
    what its 16 MiB pool (plus one request over it) allows, and stops reading the rest."""
    limits = {"socket.request.max.bytes": str(8 << 20), "queued.max.request.bytes": str(16 << 20)}
    with broker(tmp_path, limits) as running:
        assert running.process is not None
        before = rss_kib(running.process.pid)

        async def hold_and_measure() -> tuple[HeldFrames, int, int]:
            held = await hold_half_sent_frames(running.port, 20, 8 << 20, 4 << 20, stall_seconds=2)
            try:
                assert running.process is not None
                await asyncio.sleep(0.5)  # let the broker read whatever it is going to read
                return held, rss_kib(running.process.pid), unread_bytes(running.port)
            finally:
                await held.close()

        held, during, unread = asyncio.run(hold_and_measure())
        # Muted connections leave their bytes in the kernel: the client side may still have sent them all
        # (loopback buffers can hold megabytes), so what the broker left unread is the signal.
        assert held.stalled > 0 or unread > 0, "the broker read every half-sent frame"
        growth_mib = (during - before) / 1024
        assert growth_mib < 16 + 8 + 16, f"the broker grew by {growth_mib:.0f} MiB holding half-sent frames"
        with RawClient(running.port) as client:  # memory came back when the peers went away
            assert answers(client)


def unread_bytes(port: int) -> int:
    """Bytes waiting in the receive queues of the broker's accepted connections on `port`."""
    listing = subprocess.run(
        ["ss", "-Htn", "state", "established", f"sport = :{port}"], capture_output=True, text=True, check=True
    ).stdout
    return sum(int(line.split()[0]) for line in listing.splitlines() if line.strip())


def two_listeners(tmp_path: Path, extra: dict[str, str]) -> tuple[BrokerProcess, int]:
    """A broker with PLAINTEXT (its `port`) and INTERNAL, the inter-broker listener (the int returned)."""
    port, internal = free_port(), free_port()
    listeners = f"PLAINTEXT://127.0.0.1:{port},INTERNAL://127.0.0.1:{internal}"
    settings = {
        "listeners": listeners,
        "advertised.listeners": listeners,
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
        "inter.broker.listener.name": "INTERNAL",
        "offsets.topic.num.partitions": "1",
        **extra,
    }
    return BrokerProcess(tmp_path / "data", settings, port=port), internal


def test_a_listener_max_connections_limits_that_listener_only(tmp_path: Path) -> None:
    running, internal = two_listeners(tmp_path, {"listener.name.internal.max.connections": "1"})
    running.start()
    try:
        first = RawClient(internal)
        assert answers(first)
        second = RawClient(internal)
        assert not answers(second, timeout=1.5), "a second INTERNAL connection was served"
        with RawClient(running.port) as other:
            assert answers(other), "the PLAINTEXT listener was limited too"
        first.close()
        second.sock.settimeout(10)
        assert second.receive(ApiVersionsRequest.API_KEY, 0)[1].error_code == ErrorCode.NONE
        second.close()
    finally:
        running.stop()


def test_the_inter_broker_listener_gets_a_connection_over_max_connections_by_closing_the_least_recently_used(
    tmp_path: Path,
) -> None:
    running, internal = two_listeners(tmp_path, {"max.connections": "1"})
    running.start()
    try:
        oldest = RawClient(running.port)
        assert answers(oldest)
        waiting = RawClient(running.port)
        assert not answers(waiting, timeout=1.5), "a second PLAINTEXT connection was served"
        with RawClient(internal) as replication:
            assert answers(replication), "the inter-broker listener was held to max.connections"
            assert oldest.wait_closed(5), "the least recently used PLAINTEXT connection stayed open"
        waiting.close()
    finally:
        running.stop()
