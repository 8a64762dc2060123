"""A Fetch answer sent from its segment file (sendfile) that hits an I/O error reading the file is the
log dir failing: the region tells its log dir's failure channel (later fetches then answer
KAFKA_STORAGE_ERROR) and the connection closes, the answer incomplete. The socket failing (the client
gone) is not the disk: nothing is reported."""

from __future__ import annotations

import asyncio
import errno
import os
from pathlib import Path

import pytest

from odradek.server import output
from odradek.server.output import ResponseOutput
from odradek.storage import fetch
from odradek.storage.config import LogConfig
from odradek.storage.errors import LogStorageError
from odradek.storage.log_manager import LogManager
from tests.support.response_writing import writer_and_peer
from tests.unit.storage.helpers import FakeClock, batch, led_alone

pytestmark = pytest.mark.timeout(30)

REGION_BYTES = 4 * 1024 * 1024


class ReportingRegion:
    """A region of a file the test owns that records what the writer reports of it."""

    def __init__(self, fd: int, length: int) -> None:
        self.fd = fd
        self.position = 0
        self.length = length
        self.reported: list[OSError] = []

    def __len__(self) -> int:
        return self.length

    def close(self) -> None:
        pass

    def read_failed(self, error: OSError) -> None:
        self.reported.append(error)


@pytest.fixture
def segment(tmp_path: Path) -> int:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(os.urandom(REGION_BYTES))
    fd = os.open(path, os.O_RDONLY)
    yield fd
    os.close(fd)


def _eio(*_: object) -> int:
    raise OSError(errno.EIO, "Input/output error")


def _answer(region: ReportingRegion) -> ResponseOutput:
    out = ResponseOutput()
    out += b"header"
    out.add_region(region)
    out += b"trailer"
    return out


def test_an_io_error_reading_the_file_under_sendfile_reports_the_region_and_ends_the_connection(
    segment: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    sendfile = os.sendfile
    calls = 0

    def failing_sendfile(out_fd: int, in_fd: int, offset: int, count: int) -> int:
        nonlocal calls
        calls += 1
        if calls > 1:  # the first piece went out, then the disk fails
            raise OSError(errno.EIO, "Input/output error")
        return sendfile(out_fd, in_fd, offset, min(count, 1024))

    monkeypatch.setattr(output.os, "sendfile", failing_sendfile)
    monkeypatch.setattr(output.os, "pread", _eio)  # the file cannot be read either: the disk

    async def scenario() -> tuple[bool, list[OSError]]:
        writer, transport, peer = await writer_and_peer(peer_receive_buffer=1 << 20)
        region = ReportingRegion(segment, REGION_BYTES)
        await asyncio.wait_for(writer.send(_answer(region)), 10)
        peer.close()
        transport.close()
        return writer.lost, region.reported

    lost, reported = asyncio.run(scenario())
    assert lost
    assert [e.errno for e in reported] == [errno.EIO]


def test_sendfile_failing_on_a_file_that_reads_well_sends_the_rest_by_reading_it_and_reports_nothing(
    segment: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """sendfile's error does not say which side failed: the file is read to tell (a socket error
    would come back from the socket)."""
    monkeypatch.setattr(output.os, "sendfile", _eio)

    async def scenario() -> tuple[bytes, list[OSError]]:
        writer, transport, peer = await writer_and_peer(peer_receive_buffer=1 << 20)
        region = ReportingRegion(segment, 100_000)
        sending = asyncio.create_task(writer.send(_answer(region)))
        received = bytearray()
        loop = asyncio.get_running_loop()
        while len(received) < len(b"header") + 100_000 + len(b"trailer"):
            received += await loop.run_in_executor(None, peer.recv, 1 << 16)
        await asyncio.wait_for(sending, 10)
        peer.close()
        transport.close()
        return bytes(received), region.reported

    received, reported = asyncio.run(scenario())
    assert received == b"header" + os.pread(segment, 100_000, 0) + b"trailer"
    assert reported == []


def test_a_client_gone_in_the_middle_of_a_sendfile_region_reports_no_disk_error(segment: int) -> None:
    async def scenario() -> tuple[bool, list[OSError]]:
        writer, transport, peer = await writer_and_peer()
        region = ReportingRegion(segment, REGION_BYTES)
        sending = asyncio.create_task(writer.send(_answer(region)))
        for _ in range(3):
            await asyncio.sleep(0)
        assert not sending.done()
        peer.close()
        await asyncio.wait_for(sending, 10)
        transport.close()
        return writer.lost, region.reported

    lost, reported = asyncio.run(scenario())
    assert lost and reported == []


def test_a_held_region_reports_a_read_error_to_its_log_dir_which_goes_offline(tmp_path: Path) -> None:
    """The storage end: the region of a Fetch answer names its log's failure channel, so the dir goes
    offline (and the partition answers KAFKA_STORAGE_ERROR once the broker handled it)."""
    failed: list[Path] = []
    manager = LogManager(
        [tmp_path / "d1", tmp_path / "d2"], LogConfig(), clock=FakeClock(), on_log_dir_failure=failed.append
    )
    manager.startup()
    log = led_alone(manager.get_or_create_log("t", 0))
    log.append(batch([b"a", b"b"]))
    (region,) = log.read(0, 1 << 20).regions
    held = region.hold()
    try:
        held.read_failed(OSError(errno.EIO, "Input/output error"))
    finally:
        held.close()
    assert failed == [log.dir.parent]
    manager.handle_log_dir_failure(log.dir.parent)
    assert manager.is_offline("t", 0)


def test_a_fetch_copied_into_its_answer_that_cannot_read_the_file_takes_the_log_dir_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A small fetch (or Fetch v0-3) copies the records into the answer instead of sendfile: the read
    failing raised a bare OSError out of the Fetch handler, the dir staying online."""
    failed: list[Path] = []
    manager = LogManager([tmp_path / "d1"], LogConfig(), clock=FakeClock(), on_log_dir_failure=failed.append)
    manager.startup()
    log = led_alone(manager.get_or_create_log("t", 0))
    log.append(batch([b"a", b"b"]))
    info = log.read(0, 1 << 20)
    monkeypatch.setattr(fetch, "read_exactly", _eio)
    with pytest.raises(LogStorageError):
        info.read_bytes()
    assert failed == [log.dir.parent]
