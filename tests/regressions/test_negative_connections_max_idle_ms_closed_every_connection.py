"""`connections.max.idle.ms=-1` closed every connection within 50 ms of its last request: the idle
reaper compared every connection's idle time with -1. In Kafka a negative value turns idle expiry off
(Selector makes no IdleExpiryManager), so a connection stays open however long it is quiet."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.api_versions import ApiVersionsRequest
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import RawClient

pytestmark = pytest.mark.timeout(60)


def test_a_negative_connections_max_idle_ms_keeps_quiet_connections_open(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data", {"connections.max.idle.ms": "-1"}).start()
    try:
        with RawClient(broker.port) as client:
            assert client.request(ApiVersionsRequest(), 0).error_code == ErrorCode.NONE
            quiet_until = time.monotonic() + 1.0  # twenty of the reaper's rounds at -1 before the fix
            while time.monotonic() < quiet_until:
                assert not client.wait_closed(timeout=0.1), "closed while quiet, idle expiry off"
            assert client.request(ApiVersionsRequest(), 0).error_code == ErrorCode.NONE
    finally:
        broker.stop()
