"""Connections that write and never read their answers (issue 25, item 10 and its acceptance point).

A broker with a SASL_PLAINTEXT listener (no one authenticates here) and a PLAINTEXT one for a
well-behaved client. 50 unauthenticated connections write without ever reading:

- 40 pipeline ApiVersions requests (which a SASL listener answers before authentication), then frames
  just under `sasl.server.max.receive.size`. For 5 of them the ApiVersions answers alone (16,000, about
  4.6 MB) are more than the kernel's socket buffers take, so their answers back up: the broker must stop
  reading from them (as Kafka mutes a channel until its answer is sent) instead of queueing the 32 MiB
  they send after. The other 35 send 200 requests and 4 MiB, which the broker reads and answers into
  the kernel's buffers. Each of the 40 must be closed once it has taken nothing for
  `connections.max.idle.ms`, pending answers or not (Kafka's idle expiry).
- 10 declare a frame one byte over `sasl.server.max.receive.size`: closed as soon as the size arrives.

What one connection may hold before authentication is two reads of requests (2 x 256 KiB), or one
request of at most `sasl.server.max.receive.size` (512 KiB) and one read, plus its answers up to the
write high-water mark (64 KiB) and one batch of answers (64 KiB) more: 896 KiB. Two bounds are checked:

- per connection, from the kernel's socket queues (/proc/net/tcp, both ends): the request bytes the
  broker has read and not yet answered into the kernel stay within 768 KiB (requests), plus the
  requests whose answers the broker may still hold (answers up to 128 KiB and one more). A connection is
  measured only when its queues are the same in two samples in a row (nothing moving on it), so a
  sample never mixes counts from before and after a transfer;
- in all, the broker's RSS (from /proc) grows by less than 1 MiB per connection.

Before the fix each never-reading connection held everything it sent (up to 64 MiB: 160 MiB for the 5)
and was never closed. Meanwhile the PLAINTEXT client is answered throughout.
"""

from __future__ import annotations

import itertools
import re
import selectors
import socket
import struct
import threading
import time
from pathlib import Path

import pytest

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.frames import encode_request
from odradek.protocol.messages.api_versions import ApiVersionsRequest
from odradek.protocol.messages.metadata import MetadataRequest
from tests.support.bad_input_load import RssSampler, rss_kib
from tests.support.broker_process import BrokerProcess, free_port
from tests.support.raw_client import ConnectionClosedError, RawClient

pytestmark = pytest.mark.timeout(180)

IDLE_MS = 2000
MAX_RECEIVE_SIZE = 512 * 1024  # sasl.server.max.receive.size's default
NEVER_READING = 40
OVERSIZED = 10
#: The stated bound in all: 1 MiB per connection (see the module docstring).
BOUND_KIB = (NEVER_READING + OVERSIZED) * 1024
#: Per connection, request bytes read and not answered: two reads, or one request and one read.
HELD_REQUEST_BYTES = MAX_RECEIVE_SIZE + 256 * 1024
#: Answers a connection may hold: the write high-water mark and one batch (then one answer more).
HELD_ANSWER_BYTES = 2 * 64 * 1024
JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'


def test_fifty_unauthenticated_connections_that_never_read_stay_bounded_and_are_closed_by_rule(
    tmp_path: Path,
) -> None:
    sasl_port, plain_port = free_port(), free_port()
    listeners = f"PLAINTEXT://127.0.0.1:{plain_port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}"
    broker = BrokerProcess(
        tmp_path / "data",
        {
            "listeners": listeners,
            "advertised.listeners": listeners,
            "inter.broker.listener.name": "PLAINTEXT",
            "offsets.topic.num.partitions": "1",
            "sasl.enabled.mechanisms": "PLAIN",
            "sasl.jaas.config": JAAS,
            "connections.max.idle.ms": str(IDLE_MS),
        },
        port=plain_port,
    ).start()
    try:
        assert broker.process is not None
        pid = broker.process.pid
        for port in (sasl_port, plain_port):  # warm the paths the flood takes
            with RawClient(port) as warm:
                assert warm.request(ApiVersionsRequest(), 0).error_code == ErrorCode.NONE
        served = ServedClient(plain_port).start()
        before = rss_kib(pid)
        flood = Flood(sasl_port, answer_bytes=api_versions_v0_answer_bytes(sasl_port))
        with RssSampler(pid, interval=0.1) as rss:
            flood.run(stalled_seconds=5, most_seconds=40)
            # generous: on a loaded machine the broker may still be reading what the flood sent
            all_closed = wait_until_no_connection(sasl_port, timeout=IDLE_MS / 1000 + 60)
        grown_kib = rss.peak_kib - before
        served.stop()
        log = broker.log_path.read_text(errors="replace")
    finally:
        broker.stop()
        flood.close()

    over = {port: sender.most_over for port, sender in flood.never_reading.items() if sender.most_over > 0}
    assert not over, f"connections held more than their bound (bytes over it, by client port): {over}"
    unmeasured = [
        port for port, sender in flood.never_reading.items() if sender.backs_up and not sender.measured
    ]
    assert not unmeasured, (
        f"connections whose answers backed up were never still long enough to measure: {unmeasured}"
    )
    assert grown_kib < BOUND_KIB, (
        f"the broker's RSS grew by {grown_kib / 1024:.0f} MiB for {NEVER_READING + OVERSIZED} connections "
        f"(bound {BOUND_KIB / 1024:.0f} MiB)"
    )
    assert all_closed, "never-reading connections were still open long after connections.max.idle.ms"
    oversized = ports_closed_for(
        log, r"declared request size 524289 \(sasl\.server\.max\.receive\.size=524288\)"
    )
    assert oversized == flood.oversized_ports
    idle = ports_closed_for(log, rf"idle for more than {IDLE_MS} ms \(connections\.max\.idle\.ms\)")
    # every never-reading connection closed by the idle rule (another client idle that long may be too:
    # seen once, a served client's connection on the loaded machine)
    assert flood.never_reading_ports <= idle
    assert served.failures == [] and served.answered > 10


# ----- the flood ------------------------------------------------------------------------------------


def frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


class Flood:
    """Non-blocking sockets with a small receive buffer (so the broker's answers back up soon), each
    writing its chunks as fast as the broker takes them and never reading. The ApiVersions requests go
    500 at a time, 20 ms apart, so that each of the broker's reads holds a few hundred of them (a read of
    thousands of tiny frames tripped the old queue's frame limit, which hid the memory it let pile up).
    Every 0.1 s, the never-reading connections are measured (`Sender.measure`)."""

    def __init__(self, port: int, answer_bytes: int) -> None:
        self.port = port
        tiny = encode_request(ApiVersionsRequest(), 0, 1, "x")
        api_versions = tiny * 500
        # A request a SASL listener answers before authentication, padded (the broker ignores the rest).
        large = frame(encode_request(ApiVersionsRequest(), 0, 2, "x")[4:] + b"\0" * (MAX_RECEIVE_SIZE - 64))
        backing_up = [api_versions] * 32 + [large * 64]
        answered = [api_versions, large * 8]
        oversized = [struct.pack(">i", MAX_RECEIVE_SIZE + 1) + b"\0" * 65536]
        self.selector = selectors.DefaultSelector()
        self.sockets: list[socket.socket] = []
        self.never_reading: dict[int, Sender] = {}
        self.oversized_ports: set[int] = set()
        for index in range(NEVER_READING + OVERSIZED):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.connect(("127.0.0.1", port))
            sock.setblocking(False)
            self.sockets.append(sock)
            client_port = sock.getsockname()[1]
            if index % 5 == 4:
                self.oversized_ports.add(client_port)
                sender = Sender([memoryview(c) for c in oversized], [], answer_bytes)
            else:
                backs_up = index < 5
                chunks = backing_up if backs_up else answered
                frames = [len(tiny)] * 500 * (32 if backs_up else 1) + [len(large)] * (64 if backs_up else 8)
                sender = Sender([memoryview(c) for c in chunks], frames, answer_bytes, backs_up)
                self.never_reading[client_port] = sender
            self.selector.register(sock, selectors.EVENT_WRITE, sender)

    @property
    def never_reading_ports(self) -> set[int]:
        return set(self.never_reading)

    def run(self, stalled_seconds: float, most_seconds: float) -> None:
        """Until every chunk is sent, no socket took a byte for `stalled_seconds`, or `most_seconds`."""
        deadline = time.monotonic() + most_seconds
        progress = time.monotonic()
        next_measure = 0.0
        while self.selector.get_map() and time.monotonic() < min(deadline, progress + stalled_seconds):
            if time.monotonic() >= next_measure:
                queues = tcp_queues()
                for client_port, sender in self.never_reading.items():
                    sender.measure(queues.get((client_port, self.port)), queues.get((self.port, client_port)))
                next_measure = time.monotonic() + 0.1
            for key, _ in self.selector.select(0.01):
                sock, sender = key.fileobj, key.data
                assert isinstance(sock, socket.socket) and isinstance(sender, Sender)
                if time.monotonic() < sender.not_before:
                    continue
                try:
                    sent = sock.send(sender.chunks[0][: 1 << 20])
                except BlockingIOError:
                    continue
                except OSError:  # closed by the broker
                    self.selector.unregister(sock)
                    continue
                progress = time.monotonic()
                sender.sent += sent
                sender.chunks[0] = sender.chunks[0][sent:]
                if not sender.chunks[0]:
                    sender.chunks.pop(0)
                    sender.not_before = progress + 0.02
                if not sender.chunks:
                    self.selector.unregister(sock)

    def close(self) -> None:
        self.selector.close()
        for sock in self.sockets:
            sock.close()


class Sender:
    """One flooding connection: what it has left to send, what it sent, and what the broker holds of
    it, measured from the kernel's queues at both ends."""

    def __init__(
        self, chunks: list[memoryview], frames: list[int], answer_bytes: int, backs_up: bool = False
    ) -> None:
        self.chunks = chunks
        self.not_before = 0.0
        self.sent = 0
        self.backs_up = backs_up
        #: Bytes of the first n request frames, n = 0..len(frames) (requests are answered in order).
        self.frames_end = list(itertools.accumulate(frames, initial=0))
        self.answer_bytes = answer_bytes
        self.last: tuple[int, tuple[int, int], tuple[int, int]] | None = None
        self.measured = False
        #: The most a still sample found this connection holding beyond its bound (<= 0: within it).
        self.most_over = -(1 << 62)

    def measure(self, client: tuple[int, int] | None, broker: tuple[int, int] | None) -> None:
        """From the (send queue, receive queue) of the client's and the broker's socket: the request
        bytes the broker read and whose answers are not in the kernel, against the bound."""
        if client is None or broker is None:
            self.last = None  # closed (or not yet in the table)
            return
        sample = (self.sent, client, broker)
        still, self.last = sample == self.last, sample
        if not still:
            return
        read = self.sent - client[0] - broker[1]  # sent, less what the kernels hold on the way in
        answered = min((client[1] + broker[0]) // self.answer_bytes, len(self.frames_end) - 1)
        held = read - self.frames_end[answered]
        # Requests answered whose answers the broker still holds: their bytes are let go, uncounted here.
        may_hold_answers = min(
            answered + HELD_ANSWER_BYTES // self.answer_bytes + 1, len(self.frames_end) - 1
        )
        bound = HELD_REQUEST_BYTES + self.frames_end[may_hold_answers] - self.frames_end[answered]
        self.measured = True
        self.most_over = max(self.most_over, held - bound)


# ----- the well-behaved client -----------------------------------------------------------------------


class ServedClient:
    """Round trips on another listener for as long as the flood lasts; records any that failed."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.answered = 0
        self.failures: list[str] = []
        #: Connections the idle rule closed after this client had gone quiet past it.
        self.closed_idle = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> ServedClient:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(15)

    def _run(self) -> None:
        while not self._stop.is_set():
            last = time.monotonic()
            try:
                with RawClient(self.port, timeout=10) as client:
                    while not self._stop.wait(0.05):
                        versions = ApiVersionsRequest(
                            client_software_name="served", client_software_version="1"
                        )
                        assert client.request(versions, 3).error_code == ErrorCode.NONE
                        assert client.request(MetadataRequest(topics=None), 9).brokers
                        self.answered += 1
                        last = time.monotonic()
                return
            except Exception as error:  # recorded for the test's assertion
                # Closed after this thread itself went quiet longer than connections.max.idle.ms (the
                # loaded machine starved it): the idle rule, as for any client; it connects again.
                closed = isinstance(error, ConnectionClosedError)  # a timeout is a broker that held it
                if not closed or time.monotonic() - last <= IDLE_MS / 1000:
                    self.failures.append(repr(error))
                    return
                self.closed_idle += 1


# ----- what the broker did ---------------------------------------------------------------------------


def established(port: int) -> int:
    """The broker's established connections on `port` (from the kernel's socket table)."""
    count = 0
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local_port = int(fields[1].split(":")[1], 16)
        if local_port == port and fields[3] == "01":  # TCP_ESTABLISHED
            count += 1
    return count


def wait_until_no_connection(port: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if established(port) == 0:
            return True
        time.sleep(0.1)
    return False


def ports_closed_for(log: str, reason: str) -> set[int]:
    """The client ports of the connections the broker's log says it closed for `reason`."""
    return {
        int(match.group(1))
        for line in log.splitlines()
        if re.search(reason, line) and (match := re.search(r"127\.0\.0\.1:(\d+)", line))
    }


def tcp_queues() -> dict[tuple[int, int], tuple[int, int]]:
    """(send queue, receive queue) of each loopback TCP socket by (local port, remote port): bytes not
    yet acknowledged by the peer, and bytes received that the process has not read."""
    queues = {}
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local_port, remote_port = (int(address.split(":")[1], 16) for address in fields[1:3])
        tx_queue, rx_queue = (int(count, 16) for count in fields[4].split(":"))
        queues[(local_port, remote_port)] = (tx_queue, rx_queue)
    return queues


def api_versions_v0_answer_bytes(port: int) -> int:
    """The size (with its prefix) of the broker's answer to the flood's ApiVersions v0 requests."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(encode_request(ApiVersionsRequest(), 0, 1, "x"))
        prefix = b""
        while len(prefix) < 4:
            prefix += sock.recv(4 - len(prefix))
        return 4 + int(struct.unpack(">i", prefix)[0])
